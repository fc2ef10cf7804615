// A minimal bonsai backend for the host's tests, built once per variant
// (FAKE_VARIANT) to produce each way a plugin can be broken. The working
// variants implement only matmul (a plain scalar GEMM over core's reference
// dequantize) and answer UNSUPPORTED to bind_model, so the host runs the
// layers itself.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bonsai/bonsai_backend.h"
#include "bonsai/core/formats.hpp"

#define FAKE_WORKING 0        // matmul only; bind_model UNSUPPORTED
#define FAKE_ABI_TWO 1        // table says ABI 2.0
#define FAKE_NO_ENTRY 2       // exports another symbol, not the entry point
#define FAKE_NULL_ENTRY 3     // entry point returns NULL
#define FAKE_NO_DEVICE 4      // probe says NO_DEVICE
#define FAKE_CONTEXT_FAILS 5  // create_context fails with a reason
#define FAKE_SHORT_TABLE 6    // struct_size ends before bind_model (ABI 1.0 "older" table)
#define FAKE_MISSING_MATMUL 7 // matmul is NULL
#define FAKE_UPLOAD_OOM 8     // upload_weight runs out of memory at the 6th weight
#define FAKE_MATMUL_FAILS 9   // matmul fails from call $BONSAI_FAKE_FAIL_AT_CALL (default 40) on
#define FAKE_PREFERRED 10     // as FAKE_WORKING, its probe states preference 300 (ABI 1.1)
#define FAKE_SCRIPTED 11      // binds the model; its LM head replies $BONSAI_FAKE_SCRIPT (below)

#ifndef FAKE_VARIANT
#error "FAKE_VARIANT must be defined"
#endif

struct bonsai_weight {
  uint32_t type = 0;
  int64_t cols = 0;
  int64_t rows = 0;
  std::vector<float> values; // rows x cols, dequantized once at upload
};

struct bonsai_context {
  int32_t max_batch = 0;
  std::vector<std::unique_ptr<bonsai_weight>> weights;
  std::string error;
  long matmul_calls = 0; // FAKE_MATMUL_FAILS: calls so far
  long fail_at_call = 0; // FAKE_MATMUL_FAILS: the first call that fails
  // FAKE_SCRIPTED: the reply (token ids of $BONSAI_FAKE_SCRIPT, "id,id,...",
  // read at create_context) and the state of its steps.
  std::vector<int32_t> script;
  // $BONSAI_FAKE_SCRIPT_WHEN "t,t,.../r,r,...": once the sequence holds the
  // tokens t (e.g. a tool result), the reply is r instead.
  std::vector<int32_t> trigger, triggered_script;
  // $BONSAI_FAKE_LM_HEAD_LOG: a file that gets a line per LM head call,
  // "logits N" when N rows of logits were copied back, else "argmax N".
  std::string lm_head_log;
  int32_t n_vocab = 0;
  std::vector<int32_t> history; // the sequence's tokens by position (its "KV cache")
  std::vector<int32_t> step_tokens;
};

namespace {

bonsai_status fail(bonsai_context *ctx, bonsai_status status, const std::string &message) {
  ctx->error = message;
  return status;
}

void copy_text(char *dst, size_t size, const char *text) {
  if (dst == nullptr || size == 0)
    return;
  std::snprintf(dst, size, "%s", text);
}

bonsai_status fake_probe(bonsai_device_info *info) {
  if (info == nullptr)
    return BONSAI_ERR_INVALID_ARGUMENT;
#if FAKE_VARIANT == FAKE_NO_DEVICE
  info->device_count = 0;
  copy_text(info->detail, sizeof info->detail, "fake: no accelerator in this test");
  return BONSAI_ERR_NO_DEVICE;
#else
  info->device_count = 1;
  copy_text(info->name, sizeof info->name, "fake scalar device");
  info->total_memory_bytes = 1u << 30;
  copy_text(info->detail, sizeof info->detail, "scalar matmul only");
  // The others state no preference (0), as a 1.0 plugin; this one outranks
  // the CPU plugin's 100 for `auto`, where the host's struct has the field.
  if (FAKE_VARIANT == FAKE_PREFERRED &&
      info->struct_size >= offsetof(bonsai_device_info, preference) + sizeof(uint32_t))
    info->preference = 300;
  return BONSAI_OK;
#endif
}

bonsai_status fake_create_context(const bonsai_context_desc *desc, bonsai_context **out,
                                  char *error_text, size_t error_text_size) {
  if (out == nullptr)
    return BONSAI_ERR_INVALID_ARGUMENT;
  *out = nullptr;
#if FAKE_VARIANT == FAKE_CONTEXT_FAILS
  (void)desc;
  copy_text(error_text, error_text_size, "fake: device memory exhausted");
  return BONSAI_ERR_OUT_OF_MEMORY;
#else
  if (desc == nullptr || desc->max_batch < 1 || desc->max_context < 1) {
    copy_text(error_text, error_text_size, "fake: bad context description");
    return BONSAI_ERR_INVALID_ARGUMENT;
  }
  auto *ctx = new (std::nothrow) bonsai_context();
  if (ctx == nullptr)
    return BONSAI_ERR_OUT_OF_MEMORY;
#if FAKE_VARIANT == FAKE_SCRIPTED
  // "id,id,..." into `out`; a '/' ends the list (returned past it).
  const auto read_ids = [](const char *at, std::vector<int32_t> &out) {
    while (*at != '\0' && *at != '/') {
      char *end = nullptr;
      out.push_back(static_cast<int32_t>(std::strtol(at, &end, 10)));
      if (end == at)
        break;
      at = *end == ',' ? end + 1 : end;
    }
    return *at == '/' ? at + 1 : at;
  };
  if (const char *script = std::getenv("BONSAI_FAKE_SCRIPT"); script != nullptr)
    read_ids(script, ctx->script);
  if (const char *when = std::getenv("BONSAI_FAKE_SCRIPT_WHEN"); when != nullptr)
    read_ids(read_ids(when, ctx->trigger), ctx->triggered_script);
  if (const char *log = std::getenv("BONSAI_FAKE_LM_HEAD_LOG"); log != nullptr)
    ctx->lm_head_log = log;
#endif
  ctx->max_batch = desc->max_batch;
#if FAKE_VARIANT == FAKE_MATMUL_FAILS
  const char *fail_at = std::getenv("BONSAI_FAKE_FAIL_AT_CALL");
  ctx->fail_at_call = fail_at != nullptr ? std::atol(fail_at) : 40;
#endif
  if (desc->log != nullptr && desc->log_level <= BONSAI_LOG_INFO)
    desc->log(desc->log_user_data, BONSAI_LOG_INFO, "fake context created");
  *out = ctx;
  return BONSAI_OK;
#endif
}

void fake_destroy_context(bonsai_context *ctx) {
  delete ctx;
}

const char *fake_last_error(const bonsai_context *ctx) {
  return ctx != nullptr ? ctx->error.c_str() : "";
}

bonsai_status fake_supports_type(const bonsai_context *, uint32_t type) {
  return bonsai::type_traits(type) ? BONSAI_OK : BONSAI_ERR_UNSUPPORTED;
}

bonsai_status fake_upload_weight(bonsai_context *ctx, const bonsai_weight_desc *desc,
                                 bonsai_weight **out) {
  if (ctx == nullptr || desc == nullptr || out == nullptr)
    return BONSAI_ERR_INVALID_ARGUMENT;
#if FAKE_VARIANT == FAKE_UPLOAD_OOM
  // Five weights fit on this "device"; the sixth does not. The ones already
  // uploaded stay owned by the context (the host destroys it).
  if (ctx->weights.size() >= 5)
    return fail(ctx, BONSAI_ERR_OUT_OF_MEMORY,
                std::string("fake: out of device memory uploading '") +
                    (desc->name != nullptr ? desc->name : "?") + "': needed " +
                    std::to_string(desc->nbytes) + " bytes, 0 free");
#endif
  try {
    auto weight = std::make_unique<bonsai_weight>();
    weight->type = desc->type;
    weight->cols = desc->cols;
    weight->rows = desc->rows;
    const auto type = static_cast<bonsai::GgmlType>(desc->type);
    const size_t row_bytes = bonsai::row_bytes(type, desc->cols);
    if (desc->rows < 1 || desc->nbytes != row_bytes * static_cast<uint64_t>(desc->rows))
      return fail(ctx, BONSAI_ERR_INVALID_ARGUMENT, "fake: nbytes does not match the shape");
    // Dequantizing up front keeps matmul a plain dot product; the host's
    // bytes are therefore never kept, whatever the flags say.
    weight->values.resize(static_cast<size_t>(desc->rows * desc->cols));
    const auto *bytes = static_cast<const uint8_t *>(desc->data);
    for (int64_t r = 0; r < desc->rows; ++r)
      bonsai::dequantize_row(type, bytes + static_cast<size_t>(r) * row_bytes,
                             weight->values.data() + static_cast<size_t>(r * desc->cols),
                             desc->cols);
    *out = weight.get();
    ctx->weights.push_back(std::move(weight));
    return BONSAI_OK;
  } catch (const std::exception &error) {
    return fail(ctx, BONSAI_ERR_INVALID_ARGUMENT, error.what());
  }
}

bonsai_status fake_free_weight(bonsai_context *ctx, bonsai_weight *weight) {
  if (ctx == nullptr)
    return BONSAI_ERR_INVALID_ARGUMENT;
  for (auto it = ctx->weights.begin(); it != ctx->weights.end(); ++it)
    if (it->get() == weight) {
      ctx->weights.erase(it);
      return BONSAI_OK;
    }
  return fail(ctx, BONSAI_ERR_INVALID_ARGUMENT, "fake: unknown weight");
}

// y[t][r] = sum_c W[r][c] x[t][c], accumulated in double.
bonsai_status fake_matmul(bonsai_context *ctx, const bonsai_matmul_desc *desc) {
  if (ctx == nullptr || desc == nullptr || desc->weight == nullptr || desc->x == nullptr ||
      desc->y == nullptr)
    return BONSAI_ERR_INVALID_ARGUMENT;
  if (desc->n_tokens < 1 || desc->n_tokens > ctx->max_batch)
    return fail(ctx, BONSAI_ERR_INVALID_ARGUMENT, "fake: n_tokens outside 1..max_batch");
#if FAKE_VARIANT == FAKE_MATMUL_FAILS
  // A device that dies part-way through the work (mid-step for the host).
  if (++ctx->matmul_calls >= ctx->fail_at_call)
    return fail(ctx, BONSAI_ERR_INTERNAL,
                "fake: device lost in matmul call " + std::to_string(ctx->matmul_calls));
#endif
  const bonsai_weight &w = *desc->weight;
  for (int64_t r = 0; r < w.rows; ++r) {
    const float *row = w.values.data() + static_cast<size_t>(r * w.cols);
    for (int32_t t = 0; t < desc->n_tokens; ++t) {
      const float *x = desc->x + static_cast<size_t>(t) * w.cols;
      double sum = 0.0;
      for (int64_t c = 0; c < w.cols; ++c)
        sum += static_cast<double>(row[c]) * x[c];
      desc->y[static_cast<size_t>(t) * w.rows + r] = static_cast<float>(sum);
    }
  }
  return BONSAI_OK;
}

#if FAKE_VARIANT == FAKE_SCRIPTED
// A "model" whose reply to any prompt is the script: the layers do nothing,
// the LM head continues the script (scripted_next); what the host does with
// the reply is under test.
bonsai_status fake_bind_model(bonsai_context *ctx, const bonsai_model_desc *model) {
  if (ctx->script.empty())
    return fail(ctx, BONSAI_ERR_INVALID_ARGUMENT, "fake: BONSAI_FAKE_SCRIPT is not set");
  for (const auto *ids : {&ctx->script, &ctx->trigger, &ctx->triggered_script})
    for (int32_t id : *ids)
      if (id < 0 || id >= model->n_vocab)
        return fail(ctx, BONSAI_ERR_INVALID_ARGUMENT,
                    "fake: a script id is outside the vocabulary");
  ctx->n_vocab = model->n_vocab;
  ctx->history.clear();
  return BONSAI_OK;
}

// The sequence so far ends with the first k tokens of the script for the
// largest such k (0: none, a prompt's end): the reply goes on with script[k]
// (the last script token again once it is all out).
int32_t scripted_next(const std::vector<int32_t> &sequence, const std::vector<int32_t> &script) {
  for (size_t k = std::min(script.size(), sequence.size()); k > 0; --k)
    if (std::equal(script.begin(), script.begin() + static_cast<std::ptrdiff_t>(k),
                   sequence.end() - static_cast<std::ptrdiff_t>(k)))
      return script[std::min(k, script.size() - 1)];
  return script[0];
}

bonsai_status fake_begin_step(bonsai_context *ctx, const bonsai_step_desc *step) {
  ctx->step_tokens.assign(step->token_ids, step->token_ids + step->n_tokens);
  return BONSAI_OK;
}

bonsai_status fake_encode_layer(bonsai_context *, int32_t) {
  return BONSAI_OK;
}

bonsai_status fake_lm_head(bonsai_context *ctx, const bonsai_lm_head_desc *desc) {
  if (!ctx->lm_head_log.empty()) {
    if (std::FILE *log = std::fopen(ctx->lm_head_log.c_str(), "a"); log != nullptr) {
      std::fprintf(log, "%s %d\n", desc->logits != nullptr ? "logits" : "argmax", desc->n_outputs);
      std::fclose(log);
    }
  }
  for (int32_t i = 0; i < desc->n_outputs; ++i) {
    std::vector<int32_t> sequence = ctx->history;
    sequence.insert(sequence.end(), ctx->step_tokens.begin(),
                    ctx->step_tokens.begin() + desc->first_token + i + 1);
    const bool triggered = !ctx->trigger.empty() && !ctx->triggered_script.empty() &&
                           std::search(sequence.begin(), sequence.end(), ctx->trigger.begin(),
                                       ctx->trigger.end()) != sequence.end();
    const int32_t next = scripted_next(sequence, triggered ? ctx->triggered_script : ctx->script);
    if (desc->logits != nullptr) {
      float *row = desc->logits + static_cast<size_t>(i) * static_cast<size_t>(ctx->n_vocab);
      std::fill(row, row + ctx->n_vocab, 0.0f);
      row[next] = 10.0f;
    }
    if (desc->argmax != nullptr)
      desc->argmax[i] = next;
  }
  return BONSAI_OK;
}

bonsai_status fake_end_step(bonsai_context *ctx) {
  ctx->history.insert(ctx->history.end(), ctx->step_tokens.begin(), ctx->step_tokens.end());
  ctx->step_tokens.clear();
  return BONSAI_OK;
}

bonsai_status fake_kv_reset(bonsai_context *ctx) {
  ctx->history.clear();
  ctx->step_tokens.clear();
  return BONSAI_OK;
}

bonsai_status fake_kv_truncate(bonsai_context *ctx, int32_t n_keep) {
  ctx->history.resize(static_cast<size_t>(n_keep));
  ctx->step_tokens.clear();
  return BONSAI_OK;
}

bonsai_status fake_kv_length(const bonsai_context *ctx, int32_t *length) {
  *length = static_cast<int32_t>(ctx->history.size());
  return BONSAI_OK;
}
#else
bonsai_status fake_bind_model(bonsai_context *ctx, const bonsai_model_desc *) {
  return fail(ctx, BONSAI_ERR_UNSUPPORTED, "fake: no layer encoder, use matmul");
}
#endif

[[maybe_unused]] bonsai_backend_api make_table() {
  bonsai_backend_api api{};
  api.struct_size = sizeof(bonsai_backend_api);
  api.abi_major = BONSAI_ABI_MAJOR;
  api.abi_minor = BONSAI_ABI_MINOR;
  api.name = FAKE_NAME;
  api.version = "9.9.9";
  api.description = "fake plugin for host tests";
  api.probe = fake_probe;
  api.create_context = fake_create_context;
  api.destroy_context = fake_destroy_context;
  api.last_error = fake_last_error;
  api.supports_type = fake_supports_type;
  api.upload_weight = fake_upload_weight;
  api.free_weight = fake_free_weight;
  api.matmul = fake_matmul;
  api.bind_model = fake_bind_model;
#if FAKE_VARIANT == FAKE_ABI_TWO
  api.abi_major = 2;
#elif FAKE_VARIANT == FAKE_SHORT_TABLE
  // A table that ends right before bind_model; a trap sits behind it so a
  // host that reads past struct_size calls something that fails loudly.
  api.struct_size = offsetof(bonsai_backend_api, bind_model);
#elif FAKE_VARIANT == FAKE_MISSING_MATMUL
  api.matmul = nullptr;
#elif FAKE_VARIANT == FAKE_SCRIPTED
  api.begin_step = fake_begin_step;
  api.encode_layer = fake_encode_layer;
  api.lm_head = fake_lm_head;
  api.end_step = fake_end_step;
  api.kv_reset = fake_kv_reset;
  api.kv_truncate = fake_kv_truncate;
  api.kv_length = fake_kv_length;
#endif
  return api;
}

#if FAKE_VARIANT == FAKE_SHORT_TABLE
bonsai_status trap_bind_model(bonsai_context *ctx, const bonsai_model_desc *) {
  return fail(ctx, BONSAI_ERR_INTERNAL, "fake: bind_model past struct_size was called");
}
#endif

} // namespace

#if FAKE_VARIANT == FAKE_NO_ENTRY
extern "C" BONSAI_PLUGIN_EXPORT int bonsai_fake_not_the_entry(void) {
  return 42;
}
#else
extern "C" BONSAI_PLUGIN_EXPORT const bonsai_backend_api *bonsai_backend_get_api(uint32_t major,
                                                                                 uint32_t) {
#if FAKE_VARIANT == FAKE_NULL_ENTRY
  (void)major;
  return nullptr;
#else
  (void)major;
  static const bonsai_backend_api table = [] {
    bonsai_backend_api api = make_table();
#if FAKE_VARIANT == FAKE_SHORT_TABLE
    api.bind_model = trap_bind_model; // present in memory, outside struct_size
#endif
    return api;
  }();
  return &table;
#endif
}
#endif
