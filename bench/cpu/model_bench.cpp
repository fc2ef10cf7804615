// Whole-model steps through the ABI on a synthetic model of the Bonsai 1.7B
// shapes (Q1_0 everywhere, tied LM head, vocabulary 151,936: ~231 MiB of
// weights, the size of the real file). Weights live in one anonymous mapping,
// uploaded by pointer as a host does with the file's mmap.
// Counters: tokens/s; rss_MiB (whole process) and budget_MiB = weights + the
// full KV cache + 64 MiB, the most the plugin may use.
#include <benchmark/benchmark.h>

#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sys/mman.h>

#include "../../conformance/support/step_runner.hpp"
#include "bench_plugin.hpp"

namespace bonsai::bench {
namespace {

struct Shape {
  int n_embd = 2048, n_layer = 28, n_head = 16, n_head_kv = 8, head_dim = 128, n_ff = 6144;
  int n_vocab = 151936;
};
constexpr int kMaxContext = 1024;
constexpr int kMaxBatch = 512;

double rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0.0;
}

// The weights of the model in one mapping, and a bound plugin context.
class SyntheticModel {
public:
  SyntheticModel(const bonsai_backend_api &api, const char *options) : api_(api) {
    const Shape s;
    const int64_t q_dim = int64_t{s.n_head} * s.head_dim,
                  kv_dim = int64_t{s.n_head_kv} * s.head_dim;
    // Layout pass then fill pass over the same list of tensors.
    struct Tensor {
      GgmlType type;
      int64_t rows, cols;
      size_t offset;
    };
    std::vector<Tensor> tensors;
    size_t size = 0;
    const auto add = [&](GgmlType type, int64_t rows, int64_t cols) {
      tensors.push_back({type, rows, cols, size});
      size += (row_bytes(type, cols) * static_cast<size_t>(rows) + 63) / 64 * 64;
      return tensors.size() - 1;
    };
    const size_t embd = add(GgmlType::Q1_0, s.n_vocab, s.n_embd);
    const size_t out_norm = add(GgmlType::F32, 1, s.n_embd);
    std::vector<std::array<size_t, 11>> layer_ids;
    for (int l = 0; l < s.n_layer; ++l)
      layer_ids.push_back({add(GgmlType::F32, 1, s.n_embd), add(GgmlType::Q1_0, q_dim, s.n_embd),
                           add(GgmlType::Q1_0, kv_dim, s.n_embd),
                           add(GgmlType::Q1_0, kv_dim, s.n_embd), add(GgmlType::F32, 1, s.head_dim),
                           add(GgmlType::F32, 1, s.head_dim), add(GgmlType::Q1_0, s.n_embd, q_dim),
                           add(GgmlType::F32, 1, s.n_embd), add(GgmlType::Q1_0, s.n_ff, s.n_embd),
                           add(GgmlType::Q1_0, s.n_ff, s.n_embd),
                           add(GgmlType::Q1_0, s.n_embd, s.n_ff)});
    void *mapping = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED)
      throw std::runtime_error("cannot map the synthetic model");
    bytes_ = static_cast<uint8_t *>(mapping);
    size_ = size;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor &t = tensors[i];
      uint8_t *dst = bytes_ + t.offset;
      if (t.type == GgmlType::F32) {
        for (int64_t c = 0; c < t.cols; ++c) {
          const float one = 1.0f;
          std::memcpy(dst + c * 4, &one, 4);
        }
      } else {
        fill_random_blocks(t.type, dst, row_bytes(t.type, t.cols) * t.rows,
                           1.0 / std::sqrt(double(t.cols)) * (i == embd ? 16.0 : 1.0), i + 1);
      }
    }
    rss_before_context_ = rss_mib();

    test::ContextConfig config;
    config.max_context = kMaxContext;
    config.max_batch = kMaxBatch;
    config.n_threads = bench_threads();
    config.options = options;
    ctx_ = std::make_unique<test::ContextHandle>(api, config);
    std::vector<const bonsai_weight *> handles;
    for (const Tensor &t : tensors)
      handles.push_back(upload(t.type, t.rows, t.cols, bytes_ + t.offset));
    for (const auto &ids : layer_ids) {
      bonsai_layer_weights lw{};
      lw.struct_size = sizeof(lw);
      lw.attn_norm = handles[ids[0]];
      lw.wq = handles[ids[1]];
      lw.wk = handles[ids[2]];
      lw.wv = handles[ids[3]];
      lw.q_norm = handles[ids[4]];
      lw.k_norm = handles[ids[5]];
      lw.wo = handles[ids[6]];
      lw.ffn_norm = handles[ids[7]];
      lw.w_gate = handles[ids[8]];
      lw.w_up = handles[ids[9]];
      lw.w_down = handles[ids[10]];
      layers_.push_back(lw);
    }
    bonsai_model_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.n_embd = s.n_embd;
    desc.n_layer = s.n_layer;
    desc.n_head = s.n_head;
    desc.n_head_kv = s.n_head_kv;
    desc.head_dim = s.head_dim;
    desc.n_ff = s.n_ff;
    desc.n_vocab = s.n_vocab;
    desc.rms_eps = 1e-6f;
    desc.rope_freq_base = 1e6f;
    desc.token_embd = handles[embd];
    desc.output_norm = handles[out_norm];
    desc.lm_head = handles[embd]; // tied, as in Bonsai 1.7B
    desc.layers = layers_.data();
    runner().check(api.bind_model(ctx_->get(), &desc), "bind_model");
  }
  ~SyntheticModel() {
    ctx_.reset();
    munmap(bytes_, size_);
  }

  test::StepRunner runner() const {
    const Shape s;
    return test::StepRunner(api_, ctx_->get(), s.n_layer, s.n_vocab);
  }
  bonsai_context *ctx() const { return ctx_->get(); }
  double weight_mib() const { return static_cast<double>(size_) / (1 << 20); }
  double kv_mib() const {
    const Shape s;
    return 2.0 * s.n_layer * kMaxContext * s.n_head_kv * s.head_dim * sizeof(float) / (1 << 20);
  }
  // What the process held before the plugin saw the model (weights included).
  double rss_before_context() const { return rss_before_context_; }

private:
  const bonsai_weight *upload(GgmlType type, int64_t rows, int64_t cols, const uint8_t *data) {
    bonsai_weight_desc d{};
    d.struct_size = sizeof(d);
    d.type = static_cast<uint32_t>(type);
    d.rows = rows;
    d.cols = cols;
    d.data = data;
    d.nbytes = row_bytes(type, cols) * static_cast<size_t>(rows);
    d.flags = BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT;
    bonsai_weight *w = nullptr;
    runner().check(api_.upload_weight(ctx_->get(), &d, &w), "upload_weight");
    return w;
  }

  const bonsai_backend_api &api_;
  uint8_t *bytes_ = nullptr;
  size_t size_ = 0;
  double rss_before_context_ = 0.0;
  std::unique_ptr<test::ContextHandle> ctx_;
  std::vector<bonsai_layer_weights> layers_;
};

void report_memory(benchmark::State &state, const SyntheticModel &model) {
  const double rss = rss_mib();
  state.counters["rss_MiB"] = rss;
  state.counters["budget_MiB"] = model.weight_mib() + model.kv_mib() + 64.0;
  state.counters["plugin_MiB"] = rss - model.rss_before_context();
}

// One token per step, greedy (argmax only), as `bonsai` decodes.
void BM_Decode1p7B(benchmark::State &state) {
  SyntheticModel model(cpu_plugin().api(), "");
  const test::StepRunner run = model.runner();
  std::vector<int32_t> ids;
  run.step(std::vector<int32_t>(16, 100), false, &ids, /*last_only=*/true);
  int32_t token = ids.back();
  for (auto _ : state) {
    int32_t length = 0;
    model.runner().check(cpu_plugin().api().kv_length(model.ctx(), &length), "kv_length");
    if (length + 1 >= kMaxContext)
      run.check(cpu_plugin().api().kv_truncate(model.ctx(), 16), "kv_truncate");
    run.step({token}, false, &ids);
    token = ids.front();
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  report_memory(state, model);
}
BENCHMARK(BM_Decode1p7B)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(5.0);

// A full 512-token prompt in one step (the scratch of max_batch is all used).
void BM_Prefill512_1p7B(benchmark::State &state) {
  SyntheticModel model(cpu_plugin().api(), "");
  const test::StepRunner run = model.runner();
  std::vector<int32_t> prompt(kMaxBatch);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>((i * 7919) % 151936);
  std::vector<int32_t> ids;
  for (auto _ : state) {
    run.check(cpu_plugin().api().kv_reset(model.ctx()), "kv_reset");
    run.step(prompt, false, &ids, /*last_only=*/true);
  }
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kMaxBatch, benchmark::Counter::kIsRate);
  report_memory(state, model);
}
BENCHMARK(BM_Prefill512_1p7B)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

} // namespace
} // namespace bonsai::bench
