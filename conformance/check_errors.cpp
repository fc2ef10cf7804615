// Error paths: NULL arguments, short struct_size, handles the context never
// made, out-of-range values and calls out of order must all return the
// documented status (never crash), leave a message in last_error, and leave
// the context usable.
#include <functional>
#include <limits>

#include "bonsai/core/formats.hpp"
#include "plugin_checks.hpp"
#include "random_model.hpp"
#include "step_runner.hpp"

namespace bonsai::conformance {
namespace {

class ErrorProbe {
public:
  ErrorProbe(const bonsai_backend_api &api, CheckResult &r) : api_(api), r_(r) {}

  // Expects `want`; on a failed call on a live context, a non-empty message.
  void expect(bonsai_status got, bonsai_status want, const std::string &what,
              bonsai_context *ctx = nullptr) {
    if (!r_.expect(got == want,
                   what + ": status " + std::to_string(got) + ", expected " + std::to_string(want)))
      return;
    if (ctx != nullptr && want != BONSAI_OK) {
      const char *message = api_.last_error(ctx);
      r_.expect(message != nullptr && message[0] != '\0', what + ": last_error is empty");
    }
  }

private:
  const bonsai_backend_api &api_;
  CheckResult &r_;
};

} // namespace

CheckResult PluginChecker::error_paths() const {
  CheckResult r{"error_paths"};
  const bonsai_backend_api &a = api();
  ErrorProbe probe(a, r);
  constexpr auto INVALID = BONSAI_ERR_INVALID_ARGUMENT;
  constexpr auto STATE = BONSAI_ERR_BAD_STATE;

  // create_context / destroy_context.
  test::ContextConfig config;
  config.options = options_.context_options;
  config.n_threads = options_.n_threads;
  config.max_context = 16;
  config.max_batch = 8;
  {
    bonsai_context_desc desc = test::context_desc(config);
    bonsai_context *out = reinterpret_cast<bonsai_context *>(&desc); // must be overwritten
    char text[256] = {};
    probe.expect(a.create_context(nullptr, &out, text, sizeof(text)), INVALID,
                 "create_context(NULL desc)");
    r.expect(out == nullptr, "create_context failed but left *out non-NULL");
    r.expect(text[0] != '\0', "create_context(NULL desc) wrote no error text");
    probe.expect(a.create_context(&desc, nullptr, text, sizeof(text)), INVALID,
                 "create_context(NULL out)");
    const auto rejected = [&](bonsai_context_desc bad, const std::string &what) {
      bonsai_context *ctx = nullptr;
      const bonsai_status status = a.create_context(&bad, &ctx, nullptr, 0);
      r.expect(status != BONSAI_OK && ctx == nullptr, "create_context accepted " + what);
      if (ctx != nullptr)
        a.destroy_context(ctx);
    };
    bonsai_context_desc bad = desc;
    bad.struct_size = 4;
    rejected(bad, "struct_size 4");
    bad = desc;
    bad.max_context = 0;
    rejected(bad, "max_context 0");
    bad = desc;
    bad.max_batch = 0;
    rejected(bad, "max_batch 0");
    bad = desc;
    bad.device_index = 1 << 20;
    rejected(bad, "a device index that does not exist");
    a.destroy_context(nullptr); // must be a no-op
  }

  test::ContextHandle owner(a, config);
  test::ContextHandle other(a, config);
  bonsai_context *ctx = owner.get();

  // Functions given no context.
  probe.expect(a.supports_type(nullptr, 41), INVALID, "supports_type(NULL ctx)");
  // Layer functions may be NULL in a plugin whose bind_model is UNSUPPORTED.
  if (a.kv_reset != nullptr)
    probe.expect(a.kv_reset(nullptr), INVALID, "kv_reset(NULL ctx)");
  if (a.encode_layer != nullptr)
    probe.expect(a.encode_layer(nullptr, 0), INVALID, "encode_layer(NULL ctx)");
  if (a.end_step != nullptr)
    probe.expect(a.end_step(nullptr), INVALID, "end_step(NULL ctx)");
  probe.expect(a.supports_type(ctx, 9999), BONSAI_ERR_UNSUPPORTED, "supports_type(9999)", ctx);

  // Weight upload.
  Rng rng(options_.seed + 303);
  const uint32_t type = supports(41) ? 41u : static_cast<uint32_t>(GgmlType::F32);
  HostWeight w = random_weight(type, 4, 256, 0.1, rng);
  w.name = "error_paths.weight";
  bonsai_weight *handle = nullptr;
  probe.expect(a.upload_weight(nullptr, nullptr, &handle), INVALID, "upload_weight(NULL ctx)");
  probe.expect(a.upload_weight(ctx, nullptr, &handle), INVALID, "upload_weight(NULL desc)", ctx);
  bonsai_weight_desc wd = w.desc(0);
  probe.expect(a.upload_weight(ctx, &wd, nullptr), INVALID, "upload_weight(NULL out)", ctx);
  const auto bad_upload = [&](bonsai_weight_desc bad, bonsai_status want, const std::string &what) {
    bonsai_weight *h = nullptr;
    probe.expect(a.upload_weight(ctx, &bad, &h), want, "upload_weight with " + what, ctx);
    r.expect(h == nullptr, "upload_weight with " + what + " returned a handle");
  };
  bonsai_weight_desc bad = wd;
  bad.struct_size = 4;
  bad_upload(bad, INVALID, "struct_size 4");
  bad = wd;
  bad.type = 9999;
  bad_upload(bad, BONSAI_ERR_UNSUPPORTED, "type 9999");
  bad = wd;
  bad.nbytes -= 1;
  bad_upload(bad, INVALID, "nbytes one short");
  bad = wd;
  bad.data = nullptr;
  bad_upload(bad, INVALID, "data NULL");
  bad = wd;
  bad.rows = 0;
  bad.nbytes = 0;
  bad_upload(bad, INVALID, "0 rows");
  if (type == 41) {
    bad = wd;
    bad.cols = 100; // not a whole 128-value block
    bad.nbytes = 4 * 18;
    bad_upload(bad, INVALID, "cols 100 for q1_0");
  }
  probe.expect(a.upload_weight(ctx, &wd, &handle), BONSAI_OK, "upload_weight");

  // Handles the context never made.
  int not_a_weight = 0;
  auto *foreign = reinterpret_cast<bonsai_weight *>(&not_a_weight);
  probe.expect(a.free_weight(ctx, foreign), INVALID, "free_weight(handle from nothing)", ctx);
  probe.expect(a.free_weight(ctx, nullptr), INVALID, "free_weight(NULL)", ctx);
  probe.expect(a.free_weight(other.get(), handle), INVALID,
               "free_weight(handle of another context)", other.get());

  // matmul arguments.
  std::vector<float> x(8 * 256, 0.5f), y(8 * 4, 0.0f);
  bonsai_matmul_desc md{};
  md.struct_size = sizeof(md);
  md.weight = handle;
  md.n_tokens = 2;
  md.x = x.data();
  md.y = y.data();
  probe.expect(a.matmul(ctx, &md), BONSAI_OK, "matmul");
  probe.expect(a.matmul(ctx, nullptr), INVALID, "matmul(NULL desc)", ctx);
  const auto bad_matmul = [&](bonsai_matmul_desc m, const std::string &what) {
    probe.expect(a.matmul(ctx, &m), INVALID, "matmul with " + what, ctx);
  };
  bonsai_matmul_desc bm = md;
  bm.struct_size = 4;
  bad_matmul(bm, "struct_size 4");
  bm = md;
  bm.weight = foreign;
  bad_matmul(bm, "a handle from nothing");
  bm = md;
  bm.n_tokens = 0;
  bad_matmul(bm, "n_tokens 0");
  bm = md;
  bm.n_tokens = config.max_batch + 1;
  bad_matmul(bm, "n_tokens > max_batch");
  bm = md;
  bm.x = nullptr;
  bad_matmul(bm, "x NULL");
  bm = md;
  bm.y = nullptr;
  bad_matmul(bm, "y NULL");
  probe.expect(a.matmul(other.get(), &md), INVALID, "matmul with another context's weight",
               other.get());
  probe.expect(a.free_weight(ctx, handle), BONSAI_OK, "free_weight");
  probe.expect(a.free_weight(ctx, handle), INVALID, "free_weight twice", ctx);

  // The step protocol, before and after bind_model.
  const int32_t token = 1, position = 0;
  bonsai_step_desc step{};
  step.struct_size = sizeof(step);
  step.n_tokens = 1;
  step.token_ids = &token;
  step.positions = &position;
  bonsai_lm_head_desc head{};
  std::vector<float> logits(8 * 320);
  head.struct_size = sizeof(head);
  head.first_token = 0;
  head.n_outputs = 1;
  head.logits = logits.data();

  HostModel model = random_model(ModelShape{}, type, rng);
  UploadedModel uploaded(a, ctx, model);
  const bonsai_status bind_status = uploaded.bind();
  if (bind_status == BONSAI_ERR_UNSUPPORTED) {
    r.note("bind_model is UNSUPPORTED: layer protocol errors not checked");
    return r;
  }
  // A fresh context with nothing bound.
  probe.expect(a.begin_step(other.get(), &step), STATE, "begin_step before bind_model",
               other.get());
  probe.expect(a.encode_layer(other.get(), 0), STATE, "encode_layer before bind_model",
               other.get());
  probe.expect(bind_status, BONSAI_OK, "bind_model", ctx);

  probe.expect(a.bind_model(ctx, nullptr), INVALID, "bind_model(NULL)", ctx);
  const auto bad_bind = [&](bonsai_model_desc m, const std::string &what) {
    probe.expect(a.bind_model(ctx, &m), INVALID, "bind_model with " + what, ctx);
  };
  bonsai_model_desc md_bad = uploaded.desc();
  md_bad.struct_size = 4;
  bad_bind(md_bad, "struct_size 4");
  md_bad = uploaded.desc();
  md_bad.layers = nullptr;
  bad_bind(md_bad, "layers NULL");
  md_bad = uploaded.desc();
  md_bad.n_head_kv = 3;
  bad_bind(md_bad, "n_head 4, n_head_kv 3");
  md_bad = uploaded.desc();
  md_bad.rms_eps = std::numeric_limits<float>::infinity();
  bad_bind(md_bad, "rms_eps = inf");
  md_bad = uploaded.desc();
  md_bad.rope_freq_base = std::numeric_limits<float>::quiet_NaN();
  bad_bind(md_bad, "rope_freq_base = NaN");
  std::vector<bonsai_layer_weights> swapped(uploaded.desc().layers,
                                            uploaded.desc().layers + model.shape.n_layer);
  swapped[1].wq = swapped[1].wk; // wk has n_head_kv * head_dim rows, not n_head * head_dim
  md_bad = uploaded.desc();
  md_bad.layers = swapped.data();
  bad_bind(md_bad, "wk where wq belongs");
  swapped = std::vector<bonsai_layer_weights>(uploaded.desc().layers,
                                              uploaded.desc().layers + model.shape.n_layer);
  swapped[0].wv = foreign;
  md_bad.layers = swapped.data();
  bad_bind(md_bad, "a handle from nothing");
  probe.expect(uploaded.bind(), BONSAI_OK, "bind_model again");
  probe.expect(a.free_weight(ctx, const_cast<bonsai_weight *>(uploaded.desc().layers[0].wq)), STATE,
               "free_weight of a bound weight", ctx);

  // Out of order and out of range.
  probe.expect(a.encode_layer(ctx, 0), STATE, "encode_layer before begin_step", ctx);
  probe.expect(a.lm_head(ctx, &head), STATE, "lm_head before begin_step", ctx);
  probe.expect(a.end_step(ctx), STATE, "end_step before begin_step", ctx);
  probe.expect(a.begin_step(ctx, nullptr), INVALID, "begin_step(NULL)", ctx);
  const auto bad_step = [&](bonsai_step_desc s, const std::string &what) {
    probe.expect(a.begin_step(ctx, &s), INVALID, "begin_step with " + what, ctx);
  };
  bonsai_step_desc bs = step;
  bs.struct_size = 4;
  bad_step(bs, "struct_size 4");
  bs = step;
  bs.n_tokens = 0;
  bad_step(bs, "n_tokens 0");
  std::vector<int32_t> many(static_cast<size_t>(config.max_batch + 1), 1);
  std::vector<int32_t> many_pos(many.size());
  for (size_t i = 0; i < many_pos.size(); ++i)
    many_pos[i] = static_cast<int32_t>(i);
  bs = step;
  bs.n_tokens = config.max_batch + 1;
  bs.token_ids = many.data();
  bs.positions = many_pos.data();
  bad_step(bs, "n_tokens > max_batch");
  bs = step;
  bs.token_ids = nullptr;
  bad_step(bs, "token_ids NULL");
  const int32_t wrong_position = 3, bad_token = model.shape.n_vocab, negative_token = -1;
  bs = step;
  bs.positions = &wrong_position;
  bad_step(bs, "position 3 at kv_length 0");
  bs = step;
  bs.token_ids = &bad_token;
  bad_step(bs, "token id n_vocab");
  bs = step;
  bs.token_ids = &negative_token;
  bad_step(bs, "token id -1");

  probe.expect(a.begin_step(ctx, &step), BONSAI_OK, "begin_step", ctx);
  probe.expect(a.encode_layer(ctx, 1), STATE, "encode_layer(1) before layer 0", ctx);
  probe.expect(a.encode_layer(ctx, model.shape.n_layer), INVALID, "encode_layer(n_layer)", ctx);
  probe.expect(a.encode_layer(ctx, -1), INVALID, "encode_layer(-1)", ctx);
  probe.expect(a.encode_layer(ctx, 0), BONSAI_OK, "encode_layer(0)", ctx);
  probe.expect(a.lm_head(ctx, &head), STATE, "lm_head before the last layer", ctx);
  probe.expect(a.end_step(ctx), STATE, "end_step before the last layer", ctx);
  for (int l = 1; l < model.shape.n_layer; ++l)
    probe.expect(a.encode_layer(ctx, l), BONSAI_OK, "encode_layer", ctx);
  probe.expect(a.lm_head(ctx, nullptr), INVALID, "lm_head(NULL)", ctx);
  const auto bad_head = [&](bonsai_lm_head_desc h, const std::string &what) {
    probe.expect(a.lm_head(ctx, &h), INVALID, "lm_head with " + what, ctx);
  };
  bonsai_lm_head_desc bh = head;
  bh.struct_size = 4;
  bad_head(bh, "struct_size 4");
  bh = head;
  bh.first_token = 1; // the step has one token
  bad_head(bh, "first_token past the step");
  bh = head;
  bh.n_outputs = 0;
  bad_head(bh, "n_outputs 0");
  bh = head;
  bh.n_outputs = 2;
  bad_head(bh, "n_outputs past the step");
  bh = head;
  bh.logits = nullptr;
  bh.argmax = nullptr;
  bad_head(bh, "both logits and argmax NULL");
  probe.expect(a.lm_head(ctx, &head), BONSAI_OK, "lm_head", ctx);
  // A call that succeeds clears the message of the failure before it.
  const char *cleared = a.last_error(ctx);
  r.expect(cleared != nullptr && cleared[0] == '\0',
           std::string("last_error after a successful lm_head is \"") +
               (cleared != nullptr ? cleared : "(NULL)") + "\", not empty");
  probe.expect(a.end_step(ctx), BONSAI_OK, "end_step", ctx);
  probe.expect(a.kv_length(ctx, nullptr), INVALID, "kv_length(NULL)", ctx);

  // Past max_context: fill the cache, then one more token.
  try {
    test::StepRunner run(a, ctx, model.shape.n_layer, model.shape.n_vocab);
    run.step(std::vector<int32_t>(static_cast<size_t>(config.max_batch), 2));
    run.step(
        std::vector<int32_t>(static_cast<size_t>(config.max_context - 1 - config.max_batch), 3));
    const int32_t full_position = config.max_context;
    bs = step;
    bs.positions = &full_position;
    bad_step(bs, "kv_length == max_context");
    // After all these failures the context still works.
    r.expect(a.kv_truncate(ctx, 1) == BONSAI_OK, "kv_truncate(1) failed");
    run.step({5, 6});
  } catch (const std::exception &e) {
    r.fail(std::string("the context is unusable after rejected calls: ") + e.what());
  }
  // A step abandoned half-way is discarded by the next begin_step.
  const int32_t pos3 = 3;
  bs = step;
  bs.positions = &pos3;
  probe.expect(a.begin_step(ctx, &bs), BONSAI_OK, "begin_step", ctx);
  probe.expect(a.encode_layer(ctx, 0), BONSAI_OK, "encode_layer(0)", ctx);
  probe.expect(a.begin_step(ctx, &bs), BONSAI_OK, "begin_step over an abandoned step", ctx);
  int32_t length = -1;
  probe.expect(a.kv_length(ctx, &length), BONSAI_OK, "kv_length", ctx);
  r.expect(length == 3, "an abandoned step changed kv_length to " + std::to_string(length));
  return r;
}

} // namespace bonsai::conformance
