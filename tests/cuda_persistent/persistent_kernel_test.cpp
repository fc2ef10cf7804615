// The persistent decode kernel (plugins/cuda/src/kernels/persistent.cuh) run
// directly in the fiber emulator, no NVRTC or driver involved, so that CI
// checks it: all blocks of the grid alive at once and visited in a random
// order, a block's stores hidden from the others until it fences, and time
// passing only while every block waits. Small random Qwen3 models (the
// conformance library's) are decoded step by step with the real instruction
// list (common/persistent_plan) and checked against the float64 reference
// forward; then each synchronization rule is broken on purpose, and the
// emulator must turn that into a failed gate or a reported stall.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "persistent_plan.hpp"
#include "persistent_trace.hpp"
#include "random_model.hpp"
#include "reference_forward.hpp"
#include "weight_repack.hpp"

// The emulator and the kernels last: the emulator defines CUDA's words as macros.
#include "fiber_emulator.hpp"
// clang-format off
#include "common_prelude.cuh"
#include "int8_input.cuh"
#include "gemv_dp4a.cuh"
#include "int8_mma.cuh"
#include "persistent.cuh"
// clang-format on

namespace {

using bonsai::conformance::HostModel;
using bonsai::conformance::HostWeight;
using bonsai::conformance::ModelShape;
using bonsai::conformance::Rng;
using bonsai::cuda::PersistentInstr;
using bonsai::cuda::PersistentShape;
using bonsai::cuda::PersistentStage;

constexpr int kBlocks = 4;
constexpr int kMaxContext = 80;
constexpr uint32_t kQ1_0 = 41, kQ2_0 = 42;
constexpr double kGoldenCosine = 0.9995; // the golden gate of every plugin

// 16-byte aligned bytes (the kernels' vector loads fault otherwise).
// Bytes on a 128-byte boundary, as cuMemAlloc gives them: the L2 line, so
// that a tile's weights never share a line with another buffer's.
struct Aligned {
  std::vector<U32x4> words;
  explicit Aligned(size_t bytes) : words((bytes + 15) / 16 + 7) {}
  unsigned char *data() {
    const auto at = reinterpret_cast<uintptr_t>(words.data());
    return reinterpret_cast<unsigned char *>((at + 127) / 128 * 128);
  }
};

// What the plugin uploads, in host memory: planar weights and f32 norms.
struct DeviceModel {
  std::vector<std::unique_ptr<Aligned>> weights;
  std::vector<std::vector<float>> norms;
  std::vector<PkLayer> layers;
  std::vector<double> rope_rates;

  const u8 *planar(const HostWeight &w) {
    weights.push_back(std::make_unique<Aligned>(w.bytes.size()));
    bonsai::cuda::repack_planar({w.type, w.bytes.data(), w.rows, w.cols}, weights.back()->data());
    return weights.back()->data();
  }
  const float *norm(const HostWeight &w) {
    norms.emplace_back(static_cast<size_t>(w.cols));
    std::memcpy(norms.back().data(), w.bytes.data(), norms.back().size() * sizeof(float));
    return norms.back().data();
  }
  const u8 *head = nullptr;
  const float *output_norm = nullptr;

  explicit DeviceModel(const HostModel &m) {
    head = planar(m.lm_head);
    output_norm = norm(m.output_norm);
    for (const auto &l : m.layers)
      layers.push_back({planar(l.wq), planar(l.wk), planar(l.wv), planar(l.wo), planar(l.gate),
                        planar(l.up), planar(l.down), norm(l.attn_norm), norm(l.q_norm),
                        norm(l.k_norm), norm(l.ffn_norm)});
    for (int i = 0; i < m.shape.head_dim / 2; ++i)
      rope_rates.push_back(
          std::pow(static_cast<double>(m.shape.rope_base), -2.0 * i / m.shape.head_dim));
  }
};

// A sequence's KV cache in the plugin's layout: per layer its keys, then its
// values, each [kv_head][kMaxContext][head_dim].
template <class KV> struct Sequence {
  std::vector<KV> cache;
  int length = 0;
  size_t layer_elements = 0;
  explicit Sequence(const ModelShape &s)
      : cache(static_cast<size_t>(2 * s.n_layer * s.n_head_kv * kMaxContext * s.head_dim)),
        layer_elements(static_cast<size_t>(s.n_head_kv * kMaxContext * s.head_dim)) {}
};

// What a test breaks.
enum class Fault { none, no_wait, early, no_fence, lost_signal };

template <class KV> struct StepPart {
  Sequence<KV> *sequence;
  std::vector<int32_t> tokens;
};

struct StepResult {
  std::vector<float> x;      // the hidden rows after the last layer, one per token
  std::vector<float> logits; // with the LM head in the launch: one row per token
  std::vector<int> argmax;   // ... and each token's best row
  PkStatus status{};
  std::vector<PersistentInstr> plan;     // the instruction list it ran
  std::vector<unsigned long long> marks; // PK_MARKS per instruction, when traced
};

// How a step is launched: each (sequence, KV head)'s attention cut into
// `splits` key ranges; with the trace buffer; with persistent_quantize=producer;
// with persistent_matmul=mma (steps of several tokens on the int8 MMA);
// with persistent_records=registers (single tokens' records held in registers);
// with the LM head and argmax in the launch (persistent_head).
struct Launch {
  int splits = 3;
  bool traced = false;
  bool producer = false;
  bool mma = false;
  bool held = false;
  bool head = false;
  bool prefetch = false; // persistent_prefetch=next
  bool balanced = false; // persistent_shares=balanced
  int stream = 1;        // persistent_stream: weight slots
  bool fused = false;    // persistent_qkv=fused
};

// The int8 MMA operands of a weight type.
template <class T> struct MmaOf;
template <> struct MmaOf<TypeQ1_0> { using type = MmqQ1_0; };
template <> struct MmaOf<TypeQ2_0> { using type = MmqQ2_0; };
template <class T> using mma_of = typename MmaOf<T>::type;

// One step of the kernel over `parts` (at most 8 sequences and tokens).
template <class T, class D, class KV>
StepResult run_step(const HostModel &host, DeviceModel &dev, const bonsai::test::RefModel &ref,
                    std::vector<StepPart<KV>> parts, Fault fault, unsigned seed, Launch how = {}) {
  const int splits = how.splits;
  const bool traced = how.traced;
  const ModelShape &s = host.shape;
  int n_tokens = 0;
  for (const auto &p : parts)
    n_tokens += static_cast<int>(p.tokens.size());
  const auto rows = [&](int width) { return std::vector<float>(size_t(n_tokens) * width); };
  std::vector<float> x = rows(s.n_embd), q = rows(s.n_head * s.head_dim),
                     k = rows(s.n_head_kv * s.head_dim), v = rows(s.n_head_kv * s.head_dim),
                     attn = rows(s.n_head * s.head_dim), ff = rows(s.n_ff);
  PersistentShape shape{s.n_layer,
                        s.n_embd,
                        s.n_head,
                        s.n_head_kv,
                        s.head_dim,
                        s.n_ff,
                        static_cast<int>(parts.size()),
                        kBlocks};
  // A weight buffer of one and a half of the largest tile: stages are cut
  // into more instructions than blocks, and some Q/K/V instructions span
  // two of the matrices.
  shape.block_bytes = T::PAYLOAD + 2;
  shape.weight_buffer_bytes = bonsai::cuda::persistent_largest_tile_bytes(shape) * 3 / 2 / 16 * 16;
  // persistent_stream: that much in each of `stream` slots (the plan is cut
  // for one slot).
  const int slots = std::max(1, how.stream);
  shape.attention_splits = splits;
  shape.n_vocab = how.head ? s.n_vocab : 0;
  shape.balanced = how.balanced;
  shape.unit_rows =
      how.balanced ? bonsai::cuda::persistent_balanced_unit_rows(shape) : PK_TILE_ROWS;
  shape.fused_qkv_attention = how.fused;
  // Fused, an instruction holds a share of a KV head's rows (half of the
  // small shape's 256 with 2 shares: 8 tiles of Q/K/V).
  if (how.fused)
    shape.weight_buffer_bytes =
        std::max(shape.weight_buffer_bytes, 8 * bonsai::cuda::persistent_largest_tile_bytes(shape));
  std::vector<PersistentInstr> plan = bonsai::cuda::build_persistent_plan(shape);
  for (PersistentInstr &instr : plan)
    if (fault == Fault::no_wait)
      instr.wait_target = 0;
    else if (fault == Fault::early)
      instr.wait_target = std::max(0, instr.wait_target - 1);
  // The stage counters, then (persistent_qkv=fused) each layer's KV heads' ready counts.
  const int stage_counters = bonsai::cuda::persistent_counter_count(s.n_layer);
  std::vector<int> counters(static_cast<size_t>(stage_counters + s.n_layer * s.n_head_kv));
  std::vector<float> logits(how.head ? size_t(n_tokens) * s.n_vocab : 0);
  std::vector<unsigned long long> head_best(size_t(s.n_vocab / PK_TILE_ROWS + 2 * kBlocks) *
                                            PK_MAX_TOKENS);
  std::vector<int> argmax(how.head ? size_t(n_tokens) : 0);
  std::vector<int> arrivals(static_cast<size_t>(s.n_layer * PK_MAX_SEQUENCES * s.n_head_kv));
  std::vector<float> partials(size_t(n_tokens) * s.n_head * splits * (s.head_dim + 2));
  PkStatus status{};
  std::vector<unsigned long long> marks(traced ? plan.size() * PK_MARKS : 0);
  // persistent_quantize=producer: the staged rows each stage reads, the
  // sums of squares of the normed ones, and the group row counts.
  const int q_width = s.n_head * s.head_dim;
  const int q8_groups = std::max({s.n_embd, q_width, s.n_ff}) / 128;
  const int reader_width[PK_STAGES] = {s.n_embd, 0, q_width, s.n_embd, s.n_ff};
  std::vector<std::unique_ptr<Aligned>> staged_rows;
  std::vector<std::vector<float>> sums;
  std::vector<int> group_rows(size_t(s.n_layer) * PK_STAGES * q8_groups);

  PersistentArgs a{};
  a.instrs = reinterpret_cast<const PkInstr *>(plan.data());
  a.layers = dev.layers.data();
  a.counters = counters.data();
  a.status = &status;
  a.x = x.data(), a.q = q.data(), a.k = k.data(), a.v = v.data(), a.attn = attn.data();
  a.ff = ff.data();
  a.rope_rates = dev.rope_rates.data();
  a.layer_bytes = parts[0].sequence->layer_elements * sizeof(KV);
  a.deadline_ns = 1000000000; // virtual time: a stall costs nothing real
  a.n_instrs = static_cast<int>(plan.size());
  a.n_tokens = n_tokens;
  a.n_sequences = static_cast<int>(parts.size());
  const int max_cols = std::max({s.n_embd, s.n_head * s.head_dim, s.n_ff});
  a.weights_offset = static_cast<int>(PK_SHARED_BYTES(max_cols, n_tokens, how.mma));
  a.mma = how.mma ? 1 : 0;
  a.prefetch = how.prefetch ? 1 : 0;
  a.partials = partials.data();
  a.arrivals = arrivals.data();
  a.attention_splits = splits;
  a.unit_rows = shape.unit_rows;
  a.stream_slots = slots;
  a.slot_bytes = slots > 1 ? shape.weight_buffer_bytes : 0;
  a.head_ready_base = how.fused ? stage_counters : 0;
  a.trace = traced ? marks.data() : nullptr;
  a.n_layer = s.n_layer;
  if (how.head) {
    a.head = dev.head;
    a.output_norm = dev.output_norm;
    a.logits = logits.data();
    a.head_best = head_best.data();
    a.argmax = argmax.data();
    a.n_vocab = s.n_vocab;
  }
  if (how.producer) {
    a.quantize = 1;
    a.q8_groups = q8_groups;
    a.group_rows = group_rows.data();
    for (int stage = 0; stage < PK_STAGES; ++stage) {
      if (reader_width[stage] == 0)
        continue;
      staged_rows.push_back(
          std::make_unique<Aligned>(size_t(n_tokens) * PK_STAGED_ROW_BYTES(reader_width[stage])));
      a.q8[stage] = staged_rows.back()->data();
      sums.emplace_back(size_t(n_tokens) * q8_groups);
      a.q8_sumsq[stage] = sums.back().data();
    }
  }
  a.dims = {s.n_embd, s.n_head, s.n_head_kv, s.head_dim, s.n_ff, kMaxContext, s.rms_eps, 1.0f};
  int first = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    Sequence<KV> &seq = *parts[i].sequence;
    for (int32_t token : parts[i].tokens) {
      for (int c = 0; c < s.n_embd; ++c)
        x[size_t(first) * s.n_embd + c] =
            static_cast<float>(ref.token_embd.w[size_t(token) * s.n_embd + c]);
      ++first;
    }
    a.sequences[i] = {seq.length, static_cast<int>(parts[i].tokens.size()),
                      first - static_cast<int>(parts[i].tokens.size()), 0,
                      reinterpret_cast<unsigned long long>(seq.cache.data())};
  }
  emu::ignore_fences = fault == Fault::no_fence;
  emu::lose_signal_at = fault == Fault::lost_signal ? 5 : 0;
  emu::schedule_seed = seed;
  emu::launch_cooperative({kBlocks, 1, 1}, PK_THREADS,
                          a.weights_offset + slots * shape.weight_buffer_bytes, [&] {
                            if (how.held)
                              decode_persistent<T, D, mma_of<T>, KV, true>(a);
                            else
                              decode_persistent<T, D, mma_of<T>, KV, false>(a);
                          });
  emu::ignore_fences = false;
  emu::lose_signal_at = 0;
  for (auto &p : parts)
    p.sequence->length += static_cast<int>(p.tokens.size());
  return {x, logits, argmax, status, plan, marks};
}

// The logits of hidden row `row`: the reference's final norm and LM head.
std::vector<double> logits_of(const std::vector<float> &x, int row,
                              const bonsai::test::RefModel &ref) {
  const int n = ref.dims.n_embd;
  double ss = 0;
  for (int c = 0; c < n; ++c)
    ss += double{x[size_t(row) * n + c]} * x[size_t(row) * n + c];
  const double inv = 1.0 / std::sqrt(ss / n + ref.dims.rms_eps);
  std::vector<double> logits(size_t(ref.dims.n_vocab), 0.0);
  for (int r = 0; r < ref.dims.n_vocab; ++r)
    for (int c = 0; c < n; ++c)
      logits[size_t(r)] += ref.lm_head.w[size_t(r) * n + c] * x[size_t(row) * n + c] * inv *
                           ref.output_norm[size_t(c)];
  return logits;
}

// Token `row`'s logits from a step: the launch's own with the LM head in
// it, else the reference's head over the launch's hidden row.
std::vector<double> step_logits(const StepResult &r, int row, const bonsai::test::RefModel &ref) {
  if (r.logits.empty())
    return logits_of(r.x, row, ref);
  const auto n = static_cast<size_t>(ref.dims.n_vocab);
  const auto first = r.logits.begin() + static_cast<std::ptrdiff_t>(size_t(row) * n);
  return {first, first + static_cast<std::ptrdiff_t>(n)};
}

// The best row of `logits` as bonsai_argmax picks it: the greatest value,
// the lowest row among equals.
int best_row(const std::vector<double> &logits) {
  return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// With the LM head in the launch, how many of the step's tokens got an
// argmax other than their own logits' best row (0 without the head).
int wrong_argmax(const StepResult &r, const bonsai::test::RefModel &ref) {
  int wrong = 0;
  for (size_t t = 0; t < r.argmax.size(); ++t)
    wrong += r.argmax[t] != best_row(step_logits(r, static_cast<int>(t), ref));
  return wrong;
}

// The cosine of two logit rows; 0 (a failed gate, never a NaN that
// std::min would pass over) when either is all zeros or not a number,
// as the logits of a launch whose stores never landed are.
double cosine(const std::vector<double> &a, const std::vector<double> &b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double c = ab / std::sqrt(aa * bb);
  return std::isfinite(c) ? c : 0.0;
}

ModelShape small_shape() {
  ModelShape s; // 256 wide, 2 layers, 4 query and 2 KV heads of 64, FFN 384, 320 tokens
  return s;
}

// Decodes a 3-token prompt in one step, then 4 tokens one by one, beside
// the float64 reference; returns the lowest cosine over every token.
template <class T, class D, class KV>
double decode_against_reference(uint32_t type, Fault fault, unsigned seed, Launch how = {},
                                const ModelShape &shape = small_shape()) {
  Rng rng(1234);
  const HostModel host = bonsai::conformance::random_model(shape, type, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  bonsai::test::RefForward reference(ref);
  Sequence<KV> seq(host.shape);
  const std::vector<std::vector<int32_t>> steps = {{17, 250, 3}, {42}, {0}, {319}, {100}};
  double worst = 1.0;
  for (const auto &tokens : steps) {
    const StepResult r = run_step<T, D, KV>(host, dev, ref, {{&seq, tokens}}, fault, seed++, how);
    if (fault == Fault::none) {
      EXPECT_EQ(wrong_argmax(r, ref), 0) << "seed " << seed;
    }
    for (size_t t = 0; t < tokens.size(); ++t)
      worst = std::min(worst,
                       cosine(step_logits(r, static_cast<int>(t), ref), reference.step(tokens[t])));
  }
  return worst;
}

// The ways a step's matmuls get their inputs and multiply: inputs staged
// by every block or quantized by their producers
// (persistent_quantize=producer), steps of several tokens with dp4a or on
// the int8 MMA (persistent_matmul=mma), single tokens' records read from
// shared memory or held in registers (persistent_records=registers).
// With the LM head in the launch (persistent_head) or after it. With the
// next instruction's weights asked of L2 before each wait (persistent_prefetch).
constexpr Launch kModes[] = {{},
                             {.producer = true},
                             {.mma = true, .head = true},
                             {.producer = true, .mma = true},
                             {.producer = true, .mma = true, .head = true},
                             {.producer = true, .mma = true, .held = true, .head = true},
                             {.producer = true, .head = true, .prefetch = true}};

std::string mode(const Launch &how) {
  return std::string(how.producer ? "producer-quantized inputs" : "inputs staged by each block") +
         (how.mma ? ", int8 MMA" : ", dp4a") + (how.held ? ", records in registers" : "") +
         (how.head ? ", LM head in the launch" : "") +
         (how.prefetch ? ", next weights prefetched" : "") +
         (how.balanced ? ", balanced shares" : "") +
         (how.stream > 1 ? ", weights " + std::to_string(how.stream - 1) + " ahead" : "") +
         (how.fused ? ", Q/K/V and attention in one stage" : "");
}

// Attention whole, and cut into 3 and 5 key ranges: with up to 6 cached
// keys, some ranges get none (their states must add nothing) and the last
// one also takes the step's own keys. Each in every mode (kModes).
TEST(PersistentKernel, Q1_0DecodeMatchesTheFloat64Reference) {
  for (Launch how : kModes)
    for (int splits : {1, 3, 5})
      for (unsigned seed : {1u, 99u}) {
        how.splits = splits;
        const double worst =
            decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, Fault::none, seed, how);
        std::printf("[ persistent ] q1_0, f32 cache, %d key ranges, seed %u, %s: min cosine %.8f\n",
                    splits, seed, mode(how).c_str(), worst);
        EXPECT_GE(worst, kGoldenCosine);
      }
}

TEST(PersistentKernel, Q2_0DecodeMatchesTheFloat64Reference) {
  for (const Launch &how : kModes) {
    const double worst =
        decode_against_reference<TypeQ2_0, Dp4aQ2_0, float>(kQ2_0, Fault::none, 5, how);
    std::printf("[ persistent ] q2_0, f32 cache, %s: min cosine %.8f\n", mode(how).c_str(), worst);
    EXPECT_GE(worst, kGoldenCosine);
  }
}

TEST(PersistentKernel, F16CacheDecodeMatchesTheFloat64Reference) {
  for (const Launch &how : kModes) {
    const double worst =
        decode_against_reference<TypeQ1_0, Dp4aQ1_0, u16>(kQ1_0, Fault::none, 7, how);
    std::printf("[ persistent ] q1_0, f16 cache, %s: min cosine %.8f\n", mode(how).c_str(), worst);
    EXPECT_GE(worst, kGoldenCosine);
  }
}

// A longer context: eight steps of 8 tokens fill 64 positions, then single
// tokens run with attention whole and in 3 key ranges, so that each warp
// walks several batches of keys (PK_KEY_BATCH at a time, PK_WARPS warps)
// and the online softmax rescales between them.
TEST(PersistentKernel, LongContextDecodeMatchesTheFloat64Reference) {
  Rng rng(4321);
  const HostModel host = bonsai::conformance::random_model(small_shape(), kQ1_0, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  for (const Launch how :
       {Launch{.splits = 1}, Launch{.splits = 3}, Launch{.splits = 1, .producer = true},
        Launch{.splits = 3, .mma = true},
        Launch{.splits = 3, .producer = true, .mma = true, .held = true, .head = true}}) {
    bonsai::test::RefForward reference(ref);
    Sequence<float> seq(host.shape);
    double worst = 1.0;
    unsigned seed = 50;
    for (int step = 0; step < 10; ++step) {
      std::vector<int32_t> tokens;
      for (int t = 0; t < (step < 8 ? 8 : 1); ++t)
        tokens.push_back((37 * (step * 8 + t) + 11) % host.shape.n_vocab);
      const StepResult r = run_step<TypeQ1_0, Dp4aQ1_0, float>(host, dev, ref, {{&seq, tokens}},
                                                               Fault::none, seed++, how);
      for (size_t t = 0; t < tokens.size(); ++t)
        worst = std::min(
            worst, cosine(step_logits(r, static_cast<int>(t), ref), reference.step(tokens[t])));
    }
    EXPECT_EQ(seq.length, 66);
    std::printf("[ persistent ] 66 positions, %d key ranges, %s: min cosine %.8f\n", how.splits,
                mode(how).c_str(), worst);
    EXPECT_GE(worst, kGoldenCosine);
  }
}

// Two sequences in one step, one starting (2 tokens) and one continuing (1
// token after its 3-token prompt): each matches its own reference.
TEST(PersistentKernel, TwoSequencesInOneStepEachMatchTheirReference) {
  Rng rng(77);
  const HostModel host = bonsai::conformance::random_model(small_shape(), kQ1_0, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  for (const Launch &how : kModes) {
    bonsai::test::RefForward ref_a(ref), ref_b(ref);
    Sequence<float> a(host.shape), b(host.shape);
    run_step<TypeQ1_0, Dp4aQ1_0, float>(host, dev, ref, {{&b, {5, 6, 7}}}, Fault::none, 3, how);
    for (int32_t token : {5, 6, 7})
      ref_b.step(token);
    const StepResult r = run_step<TypeQ1_0, Dp4aQ1_0, float>(
        host, dev, ref, {{&a, {11, 12}}, {&b, {13}}}, Fault::none, 4, how);
    EXPECT_EQ(wrong_argmax(r, ref), 0);
    const double a0 = cosine(step_logits(r, 0, ref), ref_a.step(11));
    const double a1 = cosine(step_logits(r, 1, ref), ref_a.step(12));
    const double b0 = cosine(step_logits(r, 2, ref), ref_b.step(13));
    std::printf("[ persistent ] two sequences, %s: cosines %.8f %.8f %.8f\n", mode(how).c_str(), a0,
                a1, b0);
    EXPECT_GE(a0, kGoldenCosine);
    EXPECT_GE(a1, kGoldenCosine);
    EXPECT_GE(b0, kGoldenCosine);
    EXPECT_EQ(a.length, 2);
    EXPECT_EQ(b.length, 4);
  }
}

// Eight tokens in one step (the most a step takes): each matches the
// reference, and every weight chunk is loaded once for all of them, as
// many loads as a one-token step makes.
TEST(PersistentKernel, EightTokensMatchTheReferenceAndReadEachWeightOnce) {
  Rng rng(31);
  const HostModel host = bonsai::conformance::random_model(small_shape(), kQ2_0, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  for (const Launch &how : kModes) {
    Sequence<float> one(host.shape), eight(host.shape);
    const long before_one = emu::weight_loads;
    run_step<TypeQ2_0, Dp4aQ2_0, float>(host, dev, ref, {{&one, {9}}}, Fault::none, 11, how);
    const long loads_one = emu::weight_loads - before_one;
    const std::vector<int32_t> tokens = {1, 2, 3, 250, 5, 6, 300, 8};
    const long before_eight = emu::weight_loads;
    const StepResult r = run_step<TypeQ2_0, Dp4aQ2_0, float>(host, dev, ref, {{&eight, tokens}},
                                                             Fault::none, 12, how);
    EXPECT_EQ(emu::weight_loads - before_eight, loads_one);
    // Every Q2_0 weight of the layers (and of the LM head, in the launch) is
    // 2 bits: 16-byte chunks of 64 weights.
    const ModelShape &s = host.shape;
    const long per_layer = (long{s.n_head + 2 * s.n_head_kv} * s.head_dim * s.n_embd +
                            long{s.n_embd} * s.n_head * s.head_dim + 3L * s.n_ff * s.n_embd) /
                           64;
    const long head = how.head ? long{s.n_vocab} * s.n_embd / 64 : 0;
    EXPECT_EQ(loads_one, per_layer * s.n_layer + head);
    EXPECT_EQ(wrong_argmax(r, ref), 0);
    bonsai::test::RefForward reference(ref);
    double worst = 1.0;
    for (size_t t = 0; t < tokens.size(); ++t)
      worst = std::min(worst,
                       cosine(step_logits(r, static_cast<int>(t), ref), reference.step(tokens[t])));
    std::printf("[ persistent ] eight tokens in one step, %s: min cosine %.8f, %ld weight loads\n",
                mode(how).c_str(), worst, loads_one);
    EXPECT_GE(worst, kGoldenCosine);
  }
}

// persistent_prefetch=next: before its wait, each block asks L2 for the
// weights of its next matmul instruction. Every weight chunk a block copies
// must then have been asked for first, except those of each block's first
// instruction (nothing ran before it): with kBlocks blocks, instructions
// 0 .. kBlocks - 1 of the plan. Without the option no chunk was. Each
// instruction's chunks, from its tiles: 16 rows a tile, Q2_0's 16-byte
// chunks of 64 weights along its input, times its matrices (gate/up: 2).
TEST(PersistentKernel, NextInstructionsWeightsArePrefetchedBeforeTheirCopy) {
  Rng rng(808);
  const HostModel host = bonsai::conformance::random_model(small_shape(), kQ2_0, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  for (const bool prefetch : {false, true}) {
    for (const int n_tokens : {1, 3}) {
      const Launch how{.producer = true, .mma = n_tokens > 1, .head = true, .prefetch = prefetch};
      Sequence<float> seq(host.shape);
      const std::vector<int32_t> tokens(size_t(n_tokens), 17);
      emu::reset_prefetches();
      const long before = emu::weight_loads;
      const StepResult r = run_step<TypeQ2_0, Dp4aQ2_0, float>(host, dev, ref, {{&seq, tokens}},
                                                               Fault::none, 21, how);
      const long loads = emu::weight_loads - before;
      long first_instructions = 0;
      const ModelShape &s = host.shape;
      PersistentShape widths{};
      widths.n_embd = s.n_embd, widths.n_head = s.n_head, widths.head_dim = s.head_dim;
      widths.n_ff = s.n_ff;
      for (size_t i = 0; i < r.plan.size() && i < size_t(kBlocks); ++i) {
        const auto stage = static_cast<PersistentStage>(r.plan[i].op);
        if (stage == PersistentStage::attention || stage == PersistentStage::argmax)
          continue;
        const long mats = stage == PersistentStage::ffn_up ? 2 : 1;
        first_instructions += long{r.plan[i].end - r.plan[i].begin} * 16 * mats *
                              bonsai::cuda::persistent_stage_input_width(widths, stage) / 64;
      }
      const long unprefetched = emu::prefetch_log().unprefetched_fetches;
      std::printf("[ persistent ] %d token(s), prefetch %s: %ld of %ld weight chunks copied "
                  "without a prefetch first (first instructions: %ld)\n",
                  n_tokens, prefetch ? "on" : "off", unprefetched, loads, first_instructions);
      EXPECT_EQ(unprefetched, prefetch ? first_instructions : loads);
      EXPECT_GT(first_instructions, 0);
      EXPECT_LT(first_instructions, loads);
      EXPECT_EQ(wrong_argmax(r, ref), 0);
    }
  }
}

// Ties in the LM head's argmax go to the lower row, as bonsai_argmax
// breaks them, within a range and across ranges: an LM head whose rows
// come in equal pairs (row 2i + 1 a copy of row 2i) has every logit twice,
// so each token's best row must be the even one of its pair; one whose rows
// are all equal must pick row 0. One token (dp4a) and three (the MMA).
TEST(PersistentKernel, TheLmHeadsArgmaxBreaksTiesTowardTheLowerRow) {
  for (bool all_equal : {false, true}) {
    Rng rng(555);
    HostModel host = bonsai::conformance::random_model(small_shape(), kQ1_0, rng);
    const size_t row_bytes = host.lm_head.bytes.size() / static_cast<size_t>(host.lm_head.rows);
    for (int64_t r = 1; r < host.lm_head.rows; ++r) {
      const int64_t source = all_equal ? 0 : r - r % 2;
      std::copy_n(host.lm_head.bytes.begin() + static_cast<std::ptrdiff_t>(source * row_bytes),
                  row_bytes,
                  host.lm_head.bytes.begin() + static_cast<std::ptrdiff_t>(r * row_bytes));
    }
    const bonsai::test::RefModel ref = host.reference();
    DeviceModel dev(host);
    for (const Launch how : {Launch{.producer = true, .head = true},
                             Launch{.producer = true, .mma = true, .head = true}}) {
      Sequence<float> seq(host.shape);
      const std::vector<int32_t> tokens =
          how.mma ? std::vector<int32_t>{3, 77, 200} : std::vector<int32_t>{3};
      const StepResult r = run_step<TypeQ1_0, Dp4aQ1_0, float>(host, dev, ref, {{&seq, tokens}},
                                                               Fault::none, 9, how);
      for (size_t t = 0; t < tokens.size(); ++t) {
        const std::vector<double> logits = step_logits(r, static_cast<int>(t), ref);
        const int best = r.argmax[t];
        if (all_equal) {
          EXPECT_EQ(best, 0) << mode(how) << ", token " << t;
          continue;
        }
        EXPECT_EQ(best % 2, 0) << mode(how) << ", token " << t;
        EXPECT_EQ(logits[size_t(best)], logits[size_t(best) + 1]);
        EXPECT_EQ(best, best_row(logits)) << mode(how) << ", token " << t;
      }
    }
  }
}

// A piece's rows on their own, in one block, by persistent_matmul=mma's
// rows (pk_piece_rows_mma, steps of several tokens) or by
// persistent_records=registers' (pk_piece_rows_held, one token). Against
// float64 sums of the weights times the int8 inputs the block staged; rows
// outside the piece and tokens past the step keep their values.
struct PieceCase {
  int rows, cols, begin, end; // the matrix, and the piece's rows [begin, end)
  bool held;                  // pk_piece_rows_held, else pk_piece_rows_mma
};
template <class T, class D, int N_MATS, int KIND>
void check_piece(uint32_t type, int n_tokens, unsigned seed, const PieceCase &shape) {
  const int kRows = shape.rows, kCols = shape.cols, kBegin = shape.begin, kEnd = shape.end;
  const int kBlocksPerRow = kCols / 128;
  Rng rng(seed);
  std::vector<HostWeight> mats;
  std::vector<Aligned> planar;
  for (int m = 0; m < N_MATS; ++m) {
    mats.push_back(bonsai::conformance::random_weight(type, kRows, kCols, 0.05, rng));
    planar.emplace_back(mats.back().bytes.size());
    bonsai::cuda::repack_planar({type, mats.back().bytes.data(), kRows, kCols},
                                planar.back().data());
  }
  std::vector<float> x(size_t(n_tokens) * kCols);
  for (float &v : x)
    v = static_cast<float>(rng.uniform(-1.0, 1.0));
  constexpr float kUntouched = 1234.5f;
  std::vector<float> out(size_t(PK_MAX_TOKENS) * kRows, kUntouched);
  std::vector<float> before = out;
  if (KIND == PK_ADD)
    for (size_t i = 0; i < out.size(); ++i)
      before[i] = out[i] = static_cast<float>(rng.uniform(-1.0, 1.0));
  // The piece's copy in the weight buffer: per matrix the codes of its
  // rows, then their scales (what pk_fetch_weights copies).
  const size_t row_codes = size_t(kBlocksPerRow) * T::PAYLOAD, row_scales = kBlocksPerRow * 2;
  const size_t piece_bytes = (kEnd - kBegin) * (row_codes + row_scales);
  PkPiece piece{};
  piece.n_mats = N_MATS;
  piece.rows = kRows;
  piece.cols = kCols;
  piece.row_begin = kBegin;
  piece.row_end = kEnd;
  piece.out = out.data();
  for (int m = 0; m < N_MATS; ++m) {
    piece.w[m] = planar[size_t(m)].data();
    piece.shared[m] = static_cast<unsigned>(m * ((piece_bytes + 15) / 16 * 16));
  }
  PersistentArgs a{};
  a.n_tokens = n_tokens;
  a.mma = shape.held ? 0 : 1;
  a.weights_offset = static_cast<int>(PK_SHARED_BYTES(kCols, n_tokens, !shape.held));
  std::vector<unsigned char> staged_copy(size_t(n_tokens) * PK_STAGED_TOKEN_BYTES(kCols));
  emu::launch_cooperative({1, 1, 1}, PK_THREADS, a.weights_offset + N_MATS * piece_bytes + 32, [&] {
    BONSAI_DYNAMIC_SHARED(U32x4, shared);
    PkControl *const ctl = (PkControl *)shared;
    unsigned char *const staged = (unsigned char *)shared + PK_CONTROL_BYTES;
    unsigned char *const buffer = (unsigned char *)shared + a.weights_offset;
    if (threadIdx.x == 0)
      for (int m = 0; m < N_MATS; ++m) {
        const u8 *w = piece.w[m];
        std::memcpy(buffer + piece.shared[m], w + kBegin * row_codes, (kEnd - kBegin) * row_codes);
        std::memcpy(buffer + piece.shared[m] + (kEnd - kBegin) * row_codes,
                    w + kRows * row_codes + kBegin * row_scales, (kEnd - kBegin) * row_scales);
      }
    pk_stage_inputs(x.data(), nullptr, 1e-6f, kCols, n_tokens, staged, ctl);
    if (shape.held)
      pk_piece_rows_held<T, D, N_MATS, KIND>(piece, buffer, staged, ctl);
    else
      pk_piece_rows_mma<T, mma_of<T>, N_MATS, KIND>(a, piece, buffer, staged, ctl,
                                                    (float *)(buffer - PK_REDUCE_BYTES), nullptr);
    if (threadIdx.x == 0)
      std::memcpy(staged_copy.data(), staged, staged_copy.size());
  });
  // The inputs as the block quantized them: scale * q per 32 values.
  std::vector<double> xq(size_t(n_tokens) * kCols);
  for (int t = 0; t < n_tokens; ++t) {
    const auto *records =
        reinterpret_cast<const Q8Record *>(staged_copy.data() + t * PK_STAGED_TOKEN_BYTES(kCols));
    for (int c = 0; c < kCols; ++c) {
      const Q8Record &r = records[c / 128];
      const int i = c % 128;
      const auto q = static_cast<signed char>((r.q[i / 4] >> (8 * (i % 4))) & 255u);
      xq[size_t(t) * kCols + c] = double{r.scale[i / 32]} * q;
    }
  }
  std::vector<bonsai::test::RefMatrix> w;
  for (const HostWeight &m : mats)
    w.push_back(m.dequantized());
  for (int t = 0; t < PK_MAX_TOKENS; ++t)
    for (int r = 0; r < kRows; ++r) {
      const float got = out[size_t(t) * kRows + r], was = before[size_t(t) * kRows + r];
      if (t >= n_tokens || r < kBegin || r >= kEnd) {
        ASSERT_EQ(got, was) << "token " << t << ", row " << r << " is not the piece's";
        continue;
      }
      double dot[2] = {0, 0}, size[2] = {0, 0}; // the sums and the sums of magnitudes
      for (int m = 0; m < N_MATS; ++m)
        for (int c = 0; c < kCols; ++c) {
          const double term = w[size_t(m)].w[size_t(r) * kCols + c] * xq[size_t(t) * kCols + c];
          dot[m] += term;
          size[m] += std::fabs(term);
        }
      double want = dot[0], bound = 1e-5 * size[0];
      if (KIND == PK_ADD) {
        want += was;
        bound += 1e-6 * std::fabs(was);
      } else if (KIND == PK_SWIGLU) {
        want = dot[0] / (1.0 + std::exp(-dot[0])) * dot[1];
        bound = 1e-5 * (size[0] * (1.0 + std::fabs(dot[1])) + size[1] * (1.0 + std::fabs(dot[0])));
      }
      ASSERT_NEAR(got, want, bound) << "token " << t << " of " << n_tokens << ", row " << r;
    }
}

template <class T, class D>
void check_piece_kinds(uint32_t type, int n_tokens, unsigned seed, const PieceCase &shape) {
  check_piece<T, D, 1, PK_SET>(type, n_tokens, seed, shape);
  check_piece<T, D, 1, PK_ADD>(type, n_tokens, seed + 1, shape);
  check_piece<T, D, 2, PK_SWIGLU>(type, n_tokens, seed + 2, shape);
}

// The MMA rows: a piece of 40 rows (tiles of 16, 16 and 8) starting at row
// 16 of a 64-row matrix of 1,280 columns, so that the 8 warps take 2 or 1
// of the 10 blocks of 128 columns each and their sums meet in shared
// memory; 2, 5 and 8 tokens.
TEST(PersistentKernel, MmaRowsOfAPieceMatchFloat64SumsOfTheStagedInputs) {
  for (int n_tokens : {2, 5, 8}) {
    check_piece_kinds<TypeQ1_0, Dp4aQ1_0>(kQ1_0, n_tokens, 10u + n_tokens,
                                          {64, 1280, 16, 56, false});
    check_piece_kinds<TypeQ2_0, Dp4aQ2_0>(kQ2_0, n_tokens, 40u + n_tokens,
                                          {64, 1280, 16, 56, false});
  }
}

// The held records' rows at one token: the piece above (10 or 20 chunk
// columns: lanes without one add nothing), and 300 rows of 4,608 columns
// from row 100 of 420 (Q1_0 36 and Q2_0 72 chunks a row: lanes take 2 or 3
// columns; a warp 38 rows, so two rounds of 32 sums for one matrix and
// three of 16 rows for gate and up, the last ones part empty).
TEST(PersistentKernel, HeldRecordRowsOfAPieceMatchFloat64SumsOfTheStagedInputs) {
  for (const PieceCase &shape :
       {PieceCase{64, 1280, 16, 56, true}, PieceCase{420, 4608, 100, 400, true}}) {
    check_piece_kinds<TypeQ1_0, Dp4aQ1_0>(kQ1_0, 1, 60u + shape.rows, shape);
    check_piece_kinds<TypeQ2_0, Dp4aQ2_0>(kQ2_0, 1, 70u + shape.rows, shape);
  }
}

// Removing the waits, waiting for one instruction too few, or fences that
// publish nothing: the numbers fail the gate whatever the block order.
TEST(PersistentKernel, EveryBrokenSynchronizationRuleFailsTheGate) {
  for (const Launch &how : kModes)
    for (Fault fault : {Fault::no_wait, Fault::early, Fault::no_fence})
      for (unsigned seed : {1u, 2u, 3u}) {
        const double worst =
            decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, fault, seed, how);
        std::printf("[ persistent ] fault %d, seed %u, %s: min cosine %.8f\n",
                    static_cast<int>(fault), seed, mode(how).c_str(), worst);
        EXPECT_LT(worst, kGoldenCosine) << "fault " << static_cast<int>(fault) << ", seed " << seed;
      }
}

// persistent_shares=balanced: each matmul stage's rows in units of a few
// rows (8 for the small shape, whose 384-wide FFN input is 3 blocks of 128;
// 1 for a 1,024-wide one) spread evenly over the blocks, ranges of any
// length, some crossing from Q into K or K into V. The decode matches the float64 reference in
// every way it multiplies (one token and several, dp4a and the MMA, records in registers, the LM
// head in the launch) under random block orders, and every broken synchronization rule still fails
// the gate.
TEST(PersistentKernel, BalancedSharesMatchTheReferenceAndBrokenSynchronizationFailsThem) {
  constexpr Launch kBalanced[] = {
      {.balanced = true},
      {.producer = true, .mma = true, .head = true, .balanced = true},
      {.producer = true, .mma = true, .held = true, .head = true, .balanced = true},
      {.producer = true, .head = true, .prefetch = true, .balanced = true}};
  for (Launch how : kBalanced)
    for (unsigned seed : {3u, 41u}) {
      how.splits = seed == 3u ? 1 : 3;
      const double worst =
          decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, Fault::none, seed, how);
      std::printf("[ persistent ] q1_0, %d key ranges, seed %u, %s: min cosine %.8f\n", how.splits,
                  seed, mode(how).c_str(), worst);
      EXPECT_GE(worst, kGoldenCosine);
    }
  // Inputs 1,024 wide (8 blocks of 128): units of one row, so ranges start
  // and end on odd rows, a warp's second row beyond its range.
  ModelShape wide;
  wide.n_embd = 1024, wide.n_layer = 1, wide.n_head = 8, wide.n_head_kv = 2, wide.head_dim = 128;
  wide.n_ff = 1024;
  const double rows = decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, Fault::none, 5,
                                                                          kBalanced[2], wide);
  std::printf("[ persistent ] q1_0, 1-row units, %s: min cosine %.8f\n", mode(kBalanced[2]).c_str(),
              rows);
  EXPECT_GE(rows, kGoldenCosine);
  const double q2 =
      decode_against_reference<TypeQ2_0, Dp4aQ2_0, float>(kQ2_0, Fault::none, 8, kBalanced[1]);
  std::printf("[ persistent ] q2_0, %s: min cosine %.8f\n", mode(kBalanced[1]).c_str(), q2);
  EXPECT_GE(q2, kGoldenCosine);
  for (Fault fault : {Fault::no_wait, Fault::early, Fault::no_fence})
    for (unsigned seed : {1u, 2u}) {
      const double worst =
          decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, fault, seed, kBalanced[1]);
      std::printf("[ persistent ] fault %d, seed %u, %s: min cosine %.8f\n",
                  static_cast<int>(fault), seed, mode(kBalanced[1]).c_str(), worst);
      EXPECT_LT(worst, kGoldenCosine) << "fault " << static_cast<int>(fault) << ", seed " << seed;
    }
}

// persistent_stream=N: the weight buffer is N slots, and a block has the
// weights of its next N - 1 instructions copying (cp.async, a group each)
// before it waits for the current one's inputs; each instruction waits only
// for its own group (cp.async.wait_group N - 1). The emulator lands a copy
// only when its group is waited for, so a wrong count would compute from a
// slot's old bytes. The decode matches float64 in every way it multiplies,
// with balanced shares too; at the waits three groups (the instruction's
// own and two ahead) are in flight where one is without it; and every
// broken synchronization rule still fails the gate.
TEST(PersistentKernel, WeightsStreamedAheadMatchTheReferenceAndBrokenSynchronizationFailsThem) {
  constexpr Launch kStreamed[] = {
      {.stream = 3},
      {.producer = true, .mma = true, .head = true, .stream = 3},
      {.producer = true, .mma = true, .held = true, .head = true, .stream = 2},
      {.producer = true, .head = true, .prefetch = true, .balanced = true, .stream = 4}};
  for (Launch how : kStreamed)
    for (unsigned seed : {5u, 77u}) {
      how.splits = seed == 5u ? 1 : 3;
      emu::in_flight_log() = {};
      const double worst =
          decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, Fault::none, seed, how);
      const emu::InFlightLog seen = emu::in_flight_log();
      std::printf("[ persistent ] q1_0, %d key ranges, seed %u, %s: min cosine %.8f; at most %d "
                  "groups in flight at a wait (%ld of %ld waits)\n",
                  how.splits, seed, mode(how).c_str(), worst, seen.most, seen.waits_at_most,
                  seen.waits);
      EXPECT_GE(worst, kGoldenCosine);
      EXPECT_EQ(seen.most, how.stream);
    }
  emu::in_flight_log() = {};
  decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, Fault::none, 5, Launch{});
  EXPECT_EQ(emu::in_flight_log().most, 1); // one buffer: the instruction's own weights
  const double q2 =
      decode_against_reference<TypeQ2_0, Dp4aQ2_0, float>(kQ2_0, Fault::none, 9, kStreamed[1]);
  std::printf("[ persistent ] q2_0, %s: min cosine %.8f\n", mode(kStreamed[1]).c_str(), q2);
  EXPECT_GE(q2, kGoldenCosine);
  for (Fault fault : {Fault::no_wait, Fault::early, Fault::no_fence})
    for (unsigned seed : {1u, 2u}) {
      const double worst =
          decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, fault, seed, kStreamed[1]);
      std::printf("[ persistent ] fault %d, seed %u, %s: min cosine %.8f\n",
                  static_cast<int>(fault), seed, mode(kStreamed[1]).c_str(), worst);
      EXPECT_LT(worst, kGoldenCosine) << "fault " << static_cast<int>(fault) << ", seed " << seed;
    }
}

// persistent_qkv=fused: each layer's Q/K/V and attention one stage, whose
// instructions compute a share of a KV head's Q/K/V rows, wait on that
// head's ready count for the others, and run its attention. The small
// shape's 2 KV heads on 4 blocks: 1 or 2 key ranges (4 shares a layer at
// most, all resident), and two sequences of one range each. The decode
// matches float64 in every way it multiplies, with balanced shares and
// streamed weights too; every broken synchronization rule fails the gate,
// and a lost update of a head's ready count stalls the launch with a report.
TEST(PersistentKernel, QkvFusedWithAttentionMatchesTheReferenceAndBrokenSynchronizationFailsIt) {
  // (Each sets its key ranges: the default 3 would make 6 shares a layer on
  // 4 blocks, which the plan refuses to fuse.)
  constexpr Launch kFused[] = {
      {.splits = 2, .fused = true},
      {.splits = 2, .producer = true, .mma = true, .head = true, .fused = true},
      {.splits = 2, .producer = true, .mma = true, .held = true, .head = true, .fused = true},
      {.splits = 2,
       .producer = true,
       .head = true,
       .prefetch = true,
       .balanced = true,
       .stream = 3,
       .fused = true}};
  for (Launch how : kFused)
    for (unsigned seed : {6u, 61u}) {
      how.splits = seed == 6u ? 1 : 2;
      const double worst =
          decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, Fault::none, seed, how);
      std::printf("[ persistent ] q1_0, %d key ranges, seed %u, %s: min cosine %.8f\n", how.splits,
                  seed, mode(how).c_str(), worst);
      EXPECT_GE(worst, kGoldenCosine);
    }
  // Two sequences in one step: a head's shares span both.
  Rng rng(78);
  const HostModel host = bonsai::conformance::random_model(small_shape(), kQ1_0, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  const Launch two{.splits = 1, .producer = true, .mma = true, .head = true, .fused = true};
  bonsai::test::RefForward ref_a(ref), ref_b(ref);
  Sequence<float> a(host.shape), b(host.shape);
  run_step<TypeQ1_0, Dp4aQ1_0, float>(host, dev, ref, {{&b, {5, 6, 7}}}, Fault::none, 3, two);
  for (int32_t token : {5, 6, 7})
    ref_b.step(token);
  const StepResult r = run_step<TypeQ1_0, Dp4aQ1_0, float>(
      host, dev, ref, {{&a, {11, 12}}, {&b, {13}}}, Fault::none, 4, two);
  EXPECT_EQ(std::count_if(r.plan.begin(), r.plan.end(),
                          [](const PersistentInstr &i) {
                            return i.op == static_cast<int>(PersistentStage::qkv_attention);
                          }),
            2 * 2 * host.shape.n_layer); // 2 sequences x 2 KV heads a layer, no Q/K/V stage
  EXPECT_GE(cosine(step_logits(r, 0, ref), ref_a.step(11)), kGoldenCosine);
  EXPECT_GE(cosine(step_logits(r, 1, ref), ref_a.step(12)), kGoldenCosine);
  EXPECT_GE(cosine(step_logits(r, 2, ref), ref_b.step(13)), kGoldenCosine);
  for (Fault fault : {Fault::no_wait, Fault::early, Fault::no_fence})
    for (unsigned seed : {1u, 2u}) {
      const double worst =
          decode_against_reference<TypeQ1_0, Dp4aQ1_0, float>(kQ1_0, fault, seed, kFused[1]);
      std::printf("[ persistent ] fault %d, seed %u, %s: min cosine %.8f\n",
                  static_cast<int>(fault), seed, mode(kFused[1]).c_str(), worst);
      EXPECT_LT(worst, kGoldenCosine) << "fault " << static_cast<int>(fault) << ", seed " << seed;
    }
  Sequence<float> stalled(host.shape);
  const StepResult lost = run_step<TypeQ1_0, Dp4aQ1_0, float>(
      host, dev, ref, {{&stalled, {1}}}, Fault::lost_signal, 1, Launch{.splits = 1, .fused = true});
  EXPECT_EQ(lost.status.abort, 1);
  EXPECT_LT(lost.status.observed, lost.status.target);
}

// A lost counter update: the waiting blocks give up at the deadline, the
// first one records where, the rest follow the abort flag, and the launch
// returns instead of hanging.
TEST(PersistentKernel, ALostCounterUpdateEndsTheLaunchWithAReport) {
  Rng rng(1234);
  const HostModel host = bonsai::conformance::random_model(small_shape(), kQ1_0, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  Sequence<float> seq(host.shape);
  const long long before = emu::virtual_ns;
  const StepResult r =
      run_step<TypeQ1_0, Dp4aQ1_0, float>(host, dev, ref, {{&seq, {1}}}, Fault::lost_signal, 1);
  EXPECT_EQ(r.status.abort, 1);
  EXPECT_GE(r.status.block, 0);
  EXPECT_LT(r.status.block, kBlocks);
  EXPECT_LT(r.status.observed, r.status.target);
  // Layer 0's Q/K/V updates come first (32 tiles, 3 per instruction in
  // the test's weight buffer: 11 of them), so the 5th is one of those: the
  // attention instructions wait on that counter for ever.
  const std::vector<PersistentInstr> &plan = r.plan;
  const auto first_stage = std::count_if(
      plan.begin(), plan.end(), [](const PersistentInstr &i) { return i.layer == 0 && i.op == 0; });
  EXPECT_EQ(first_stage, 11);
  EXPECT_EQ(r.status.counter, 0);
  EXPECT_EQ(r.status.target, first_stage);
  ASSERT_LT(static_cast<size_t>(r.status.instr), plan.size());
  EXPECT_EQ(plan[static_cast<size_t>(r.status.instr)].wait_counter, r.status.counter);
  EXPECT_EQ(plan[static_cast<size_t>(r.status.instr)].wait_target, r.status.target);
  // One deadline passed, in virtual time.
  EXPECT_GE(emu::virtual_ns - before, 1000000000LL);
}

// The trace (option persistent_trace): in the emulator its clock ticks once
// per read across all blocks, so the marks are the order things happened in.
// Each instruction's five marks come in order, and its wait ends after every
// instruction it waits for has finished its outputs. Without the waits
// (the no_wait fault) that order breaks, so the check can fail. `plan`:
// the list as built, with its waits (the fault's list has none).
int marks_out_of_order(const StepResult &r, const std::vector<PersistentInstr> &plan) {
  const auto mark = [&](size_t i, int point) { return r.marks[i * PK_MARKS + point]; };
  int broken = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    for (int point = 0; point < PK_MARKS; ++point)
      broken += mark(i, point) == 0 || (point > 0 && mark(i, point) <= mark(i, point - 1));
    if (plan[i].wait_target == 0)
      continue;
    for (size_t j = 0; j < plan.size(); ++j)
      if (plan[j].signal_counter == plan[i].wait_counter)
        broken += mark(i, PK_MARK_GO) <= mark(j, PK_MARK_END);
  }
  return broken;
}

TEST(PersistentKernel, TraceMarksFollowEachInstructionAndItsWait) {
  Rng rng(1234);
  const HostModel host = bonsai::conformance::random_model(small_shape(), kQ1_0, rng);
  const bonsai::test::RefModel ref = host.reference();
  DeviceModel dev(host);
  std::vector<PersistentInstr> plan;
  for (unsigned seed : {1u, 2u, 3u}) {
    Sequence<float> seq(host.shape);
    const StepResult r = run_step<TypeQ1_0, Dp4aQ1_0, float>(
        host, dev, ref, {{&seq, {4, 5}}}, Fault::none, seed, {.traced = true, .head = true});
    plan = r.plan;
    EXPECT_EQ(marks_out_of_order(r, plan), 0) << "seed " << seed;
    // The host's reading of them: every stage of every layer took time, and
    // the LM head and the argmax after them (the last three counters are
    // unused), and the spans add up to the launch.
    const std::span<const uint64_t> marks(reinterpret_cast<const uint64_t *>(r.marks.data()),
                                          r.marks.size());
    const auto timings = bonsai::cuda::persistent_stage_timings(r.plan, marks);
    const size_t used = size_t{5} * host.shape.n_layer + 2;
    ASSERT_EQ(timings.size(), used + 3);
    double spans = 0;
    for (size_t g = 0; g < timings.size(); ++g) {
      if (g < used) {
        EXPECT_GT(timings[g].span, 0) << "counter " << g;
      } else {
        EXPECT_EQ(timings[g].span, 0) << "counter " << g;
      }
      spans += timings[g].span;
    }
    const auto [first, last] = std::minmax_element(r.marks.begin(), r.marks.end());
    EXPECT_DOUBLE_EQ(spans, static_cast<double>(*last - *first));
  }
  Sequence<float> seq(host.shape);
  const StepResult broken = run_step<TypeQ1_0, Dp4aQ1_0, float>(
      host, dev, ref, {{&seq, {4, 5}}}, Fault::no_wait, 1, {.traced = true, .head = true});
  ASSERT_EQ(broken.plan.size(), plan.size());
  EXPECT_GT(marks_out_of_order(broken, plan), 0);
}

} // namespace
