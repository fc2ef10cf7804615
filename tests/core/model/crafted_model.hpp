#pragma once
// A small, valid Qwen3 description (f32 weights of zeros) that tests edit
// (drop a tensor, change a shape or a key) before turning it into GGUF bytes.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bonsai/core/formats.hpp"
#include "bonsai/core/gguf.hpp"

namespace bonsai::test {

struct CraftedTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> dims;
};

class CraftedModel {
public:
  // Hidden 64, 2 layers, 4 query heads and 2 KV heads of dim 16, FFN 96,
  // vocabulary 50.
  static constexpr int64_t kEmbd = 64, kLayers = 2, kHeads = 4, kKvHeads = 2, kHeadDim = 16,
                           kFf = 96, kVocab = 50;

  explicit CraftedModel(bool tied = false) {
    set(gguf::Value::string("qwen3"), "general.architecture");
    set(gguf::Value::u32(kLayers), "qwen3.block_count");
    set(gguf::Value::u32(1024), "qwen3.context_length");
    set(gguf::Value::u32(kEmbd), "qwen3.embedding_length");
    set(gguf::Value::u32(kFf), "qwen3.feed_forward_length");
    set(gguf::Value::u32(kHeads), "qwen3.attention.head_count");
    set(gguf::Value::u32(kKvHeads), "qwen3.attention.head_count_kv");
    set(gguf::Value::u32(kHeadDim), "qwen3.attention.key_length");
    set(gguf::Value::f32(10000.0f), "qwen3.rope.freq_base");
    set(gguf::Value::f32(1e-5f), "qwen3.attention.layer_norm_rms_epsilon");

    tensors.push_back({"token_embd.weight", GgmlType::F32, {kEmbd, kVocab}});
    for (int64_t i = 0; i < kLayers; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      tensors.push_back({p + "attn_norm.weight", GgmlType::F32, {kEmbd}});
      tensors.push_back({p + "attn_q.weight", GgmlType::F32, {kEmbd, kHeads * kHeadDim}});
      tensors.push_back({p + "attn_k.weight", GgmlType::F32, {kEmbd, kKvHeads * kHeadDim}});
      tensors.push_back({p + "attn_v.weight", GgmlType::F32, {kEmbd, kKvHeads * kHeadDim}});
      tensors.push_back({p + "attn_q_norm.weight", GgmlType::F32, {kHeadDim}});
      tensors.push_back({p + "attn_k_norm.weight", GgmlType::F32, {kHeadDim}});
      tensors.push_back({p + "attn_output.weight", GgmlType::F32, {kHeads * kHeadDim, kEmbd}});
      tensors.push_back({p + "ffn_norm.weight", GgmlType::F32, {kEmbd}});
      tensors.push_back({p + "ffn_gate.weight", GgmlType::F32, {kEmbd, kFf}});
      tensors.push_back({p + "ffn_up.weight", GgmlType::F32, {kEmbd, kFf}});
      tensors.push_back({p + "ffn_down.weight", GgmlType::F32, {kFf, kEmbd}});
    }
    tensors.push_back({"output_norm.weight", GgmlType::F32, {kEmbd}});
    if (!tied)
      tensors.push_back({"output.weight", GgmlType::F32, {kEmbd, kVocab}});
  }

  void set(gguf::Value v, const std::string &key) {
    erase_key(key);
    metadata.emplace_back(key, std::move(v));
  }
  void erase_key(const std::string &key) {
    std::erase_if(metadata, [&](const auto &kv) { return kv.first == key; });
  }
  void erase_tensor(const std::string &name) {
    std::erase_if(tensors, [&](const CraftedTensor &t) { return t.name == name; });
  }
  CraftedTensor &tensor(const std::string &name) {
    return *std::find_if(tensors.begin(), tensors.end(),
                         [&](const CraftedTensor &t) { return t.name == name; });
  }

  std::vector<uint8_t> image() const {
    gguf::Writer w;
    for (const auto &[key, value] : metadata)
      w.set(key, value);
    for (const CraftedTensor &t : tensors) {
      int64_t rows = 1;
      for (size_t i = 1; i < t.dims.size(); ++i)
        rows *= t.dims[i];
      const size_t nbytes = row_bytes(t.type, t.dims[0]) * static_cast<size_t>(rows);
      w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(nbytes, 0));
    }
    return w.serialize();
  }

  std::vector<std::pair<std::string, gguf::Value>> metadata;
  std::vector<CraftedTensor> tensors;
};

} // namespace bonsai::test
