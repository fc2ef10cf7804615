#pragma once
// ggml type id 42 names two layouts: PrismML's Q2_0 (128 weights in 34
// bytes) and mainline llama.cpp's (64 in 18). Only the room a tensor has in
// the file tells them apart, so the parser asks this after reading the table.
#include <cstdint>
#include <string>
#include <vector>

#include "bonsai/core/gguf.hpp"

namespace bonsai::gguf {

// Sets `encoding` of every tensor stored as id 42 to Q2_0 or Q2_0_G64. A
// tensor's room runs from its offset to the next larger offset or the end of
// the data section (section_bytes); a layout fits when its size is at most
// that room and leaves less than `alignment` bytes of padding. The file
// must be one layout throughout: tensors that fit both (below 64 *
// alignment weights) follow the others, and PrismML's when all are like
// that. Returns "" or the reason the file cannot be read.
std::string resolve_type42(std::vector<TensorInfo> &tensors, uint64_t section_bytes,
                           uint64_t alignment);

} // namespace bonsai::gguf
