// Fuzz target: what Engine::open does with a file before any backend is
// involved. Parse the bytes, validate them as a qwen3 or qwen35 model
// (ModelSpec::from_gguf) and load the tokenizer from the same metadata
// (Tokenizer::from_gguf). Accepted specs must describe tensors that lie inside
// the input with the shapes the hyper-parameters imply.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/error.hpp"
#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"
#include "bonsai/core/model_spec.hpp"
#include "bonsai/core/tokenizer.hpp"
#include "fuzz_support.hpp"

namespace {

using namespace bonsai;
using bonsai::fuzz::require;

void check_view(const gguf::File &file, const TensorView &v) {
  require(!v.dims.empty(), "tensor view without dimensions");
  require(v.nbytes == row_bytes(v.type, v.cols()) * static_cast<size_t>(v.rows()),
          "view byte size does not match its shape");
  if (v.nbytes == 0)
    return;
  const uint8_t *begin = file.bytes().data();
  require(v.data >= begin && v.data + v.nbytes <= begin + file.file_size(),
          "view data outside the file");
  // Touch the first and last byte: ASan reports anything past the input.
  volatile uint8_t sink = v.data[0] ^ v.data[v.nbytes - 1];
  (void)sink;
  // The exact conversions the host may apply at upload, on the first row
  // (any data: a refusal is an Error, never a crash).
  if (v.cols() > 0 && v.cols() <= (int64_t{1} << 16)) {
    for (const GgmlType to : upload_candidates(v.type)) {
      std::vector<uint8_t> out(row_bytes(to, v.cols()));
      try {
        convert_row(v.type, to, v.data, out.data(), v.cols());
      } catch (const Error &) {
      }
    }
  }
}

void check_spec(const gguf::File &file, const ModelSpec &spec) {
  const Qwen3Hparams &h = spec.hparams;
  require(h.n_embd > 0 && h.n_layer > 0 && h.n_head > 0 && h.n_head_kv > 0 && h.head_dim > 0 &&
              h.n_ff > 0 && h.n_vocab > 0 && h.n_ctx_train > 0,
          "non-positive hyper-parameter accepted");
  require(h.n_head % h.n_head_kv == 0, "head_count not a multiple of head_count_kv");
  require(h.head_dim % 2 == 0, "odd head dim accepted");
  require(h.rms_eps > 0 && h.rope.freq_base > 0, "non-positive eps or rope base");
  require(spec.layers.size() == static_cast<size_t>(h.n_layer), "layer count mismatch");
  require(spec.token_embd.cols() == h.n_embd && spec.token_embd.rows() == h.n_vocab,
          "embedding shape mismatch");
  require(spec.lm_head().cols() == h.n_embd && spec.lm_head().rows() == h.n_vocab,
          "LM head shape mismatch");
  const auto is_float = [](const TensorView &v) {
    return v.type == GgmlType::F32 || v.type == GgmlType::F16 || v.type == GgmlType::BF16;
  };
  require(spec.arch() == Architecture::qwen35 || !h.hybrid, "qwen3 spec with qwen35 parameters");
  for (const LayerWeights &l : spec.layers) {
    require(l.ffn_down.cols() == h.n_ff && l.ffn_down.rows() == h.n_embd, "ffn_down shape");
    require(is_float(l.attn_norm) && is_float(l.ffn_norm), "quantized norm accepted");
    if (const auto &d = l.delta_net) {
      require(h.hybrid.has_value(), "DeltaNet layer in a qwen3 model");
      const DeltaNetHparams &g = h.hybrid->delta_net;
      require(d->qkv.rows() == g.conv_dim() && d->out.cols() == g.value_dim(), "DeltaNet shapes");
      require(d->conv.cols() == g.conv_kernel && d->conv.rows() == g.conv_dim(), "conv shape");
      require(is_float(d->conv) && is_float(d->a) && is_float(d->dt_bias) && is_float(d->norm),
              "quantized DeltaNet vector accepted");
      continue;
    }
    const int64_t q_rows = (h.hybrid ? 2 : 1) * h.n_head * h.head_dim; // qwen35: query + gate
    require(l.attn_q.rows() == q_rows, "attn_q rows");
    require(l.attn_k.rows() == h.n_head_kv * h.head_dim, "attn_k rows");
    require(l.attn_output.cols() == h.n_head * h.head_dim, "attn_output cols");
    require(is_float(l.attn_q_norm) && is_float(l.attn_k_norm), "quantized norm accepted");
  }
  if (h.hybrid)
    require(h.hybrid->recurrent.size() == spec.layers.size(), "layer kinds mismatch");
  for (const TensorView *v : spec.all_tensors())
    check_view(file, *v);
  require(spec.n_params() > 0, "model without parameters");
  (void)spec.weight_bytes();
}

void check_tokenizer(const Tokenizer &tokenizer) {
  const int32_t n = tokenizer.n_vocab();
  require(n > 0, "empty vocabulary accepted");
  std::vector<int32_t> all(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i)
    all[static_cast<size_t>(i)] = i;
  (void)tokenizer.decode(all);
  for (const char *text :
       {"Hello, world!", "<|im_start|>user\n1 + 1 = 2<|im_end|>", "\xC3\xA9t\xC3\xA9"}) {
    const std::vector<int32_t> ids = tokenizer.encode(text);
    for (int32_t id : ids)
      require(id >= 0 && id < n, "encode produced an id outside the vocabulary");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<gguf::File> file;
  try {
    file.emplace(gguf::File::parse({data, size}, "fuzz.gguf"));
  } catch (const Error &) {
    return 0;
  }
  try {
    const ModelSpec spec = ModelSpec::from_gguf(*file);
    check_spec(*file, spec);
  } catch (const Error &e) {
    require(std::strncmp(e.what(), "fuzz.gguf: ", 11) == 0, "error message does not name the file");
  }
  try {
    check_tokenizer(Tokenizer::from_gguf(*file));
  } catch (const Error &e) {
    require(std::strncmp(e.what(), "fuzz.gguf", 9) == 0, "error message does not name the file");
  }
  return 0;
}
