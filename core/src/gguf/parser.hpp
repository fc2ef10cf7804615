#pragma once
// Internal: validates the image in file.bytes() and fills in the File.
#include "bonsai/core/gguf.hpp"

namespace bonsai::gguf {

void parse_into(File &file);

} // namespace bonsai::gguf
