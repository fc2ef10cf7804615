#include "make_model_head.hpp"

#include <cstring>

#include "bonsai/core/convert.hpp"
#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"

namespace bonsai::tools {
namespace {

std::string type_text(GgmlType type) {
  return std::string(type_name(static_cast<uint32_t>(type)));
}

const gguf::TensorInfo &require_tensor(const gguf::File &file, const std::string &name) {
  const gguf::TensorInfo *t = file.find_tensor(name);
  if (t == nullptr)
    throw Error(file.path() + ": --head-of needs a tensor " + name);
  return *t;
}

// Each row: the source's blocks (a Q1_0 source's converted exactly for a
// Q2_0 model), then all-zero blocks. Only encodings whose every block
// carries its own scale qualify: a block of zero bytes has d = 0, so it
// decodes to zeros whatever its codes say.
std::vector<uint8_t> pad_rows(const gguf::TensorInfo &t, const HeadRequest &r) {
  const size_t source_row = row_bytes(t.type(), t.dims[0]);
  const size_t row = row_bytes(r.type, r.hidden);
  std::vector<uint8_t> out(row * static_cast<size_t>(r.vocab), 0);
  for (int64_t i = 0; i < r.vocab; ++i) {
    uint8_t *dst = out.data() + static_cast<size_t>(i) * row;
    const uint8_t *src = t.data + static_cast<size_t>(i) * source_row;
    if (t.type() == r.type)
      std::memcpy(dst, src, source_row);
    else
      convert_row(t.type(), r.type, src, dst, t.dims[0]);
  }
  return out;
}

void check_matrix(const gguf::File &file, const gguf::TensorInfo &t, const HeadRequest &r) {
  const bool converts = t.type() == GgmlType::Q1_0 && r.type == GgmlType::Q2_0;
  if (t.type() != r.type && !converts)
    throw Error(file.path() + ": " + t.name + " is " + type_text(t.type()) +
                ", the new model's matrices " + type_text(r.type) + " (pass --type " +
                type_text(t.type()) + ")");
  if (t.dims.size() != 2 || t.dims[1] != r.vocab)
    throw Error(file.path() + ": " + t.name + " has " +
                std::to_string(t.dims.size() == 2 ? t.dims[1] : 0) + " rows, the new model " +
                std::to_string(r.vocab) + " (the vocabularies must match)");
  if (t.dims[0] > r.hidden)
    throw Error(file.path() + ": its width " + std::to_string(t.dims[0]) +
                " is more than the new model's " + std::to_string(r.hidden));
}

} // namespace

BorrowedHead borrow_head(const HeadRequest &r) {
  if (r.type != GgmlType::Q1_0 && r.type != GgmlType::Q2_0)
    throw Error("--head-of works with q1_0 and q2_0 (a scale per block, so padding blocks are "
                "zero), not " +
                type_text(r.type));
  const gguf::File file = gguf::File::open(r.source);
  const gguf::TensorInfo &embd = require_tensor(file, "token_embd.weight");
  check_matrix(file, embd, r);
  const gguf::TensorInfo *head = file.find_tensor("output.weight");
  if (head != nullptr && r.tied)
    throw Error(file.path() + ": its LM head is not its embedding, so a tied model cannot "
                              "share it (pass --untied)");
  if (head != nullptr)
    check_matrix(file, *head, r);
  const gguf::TensorInfo &norm = require_tensor(file, "output_norm.weight");
  if (norm.type() != GgmlType::F32 || norm.dims.size() != 1 || norm.dims[0] != embd.dims[0])
    throw Error(file.path() + ": output_norm.weight is not " + std::to_string(embd.dims[0]) +
                " f32 values");

  BorrowedHead out;
  out.source_hidden = embd.dims[0];
  out.token_embd = pad_rows(embd, r);
  if (!r.tied)
    out.output =
        pad_rows(head != nullptr ? *head : embd, r); // a tied source's head is its embedding
  out.output_norm.resize(static_cast<size_t>(r.hidden) * sizeof(float));
  const float one = 1.0f;
  for (int64_t i = 0; i < r.hidden; ++i)
    std::memcpy(out.output_norm.data() + static_cast<size_t>(i) * sizeof(float), &one, sizeof one);
  std::memcpy(out.output_norm.data(), norm.data, norm.nbytes);
  return out;
}

} // namespace bonsai::tools
