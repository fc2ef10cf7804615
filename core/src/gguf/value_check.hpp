#pragma once
// Internal: checks that a Value's declared type matches its payload (and the
// payload fits the declared width), so the writer never emits a value the
// reader would decode differently.
#include <string>

#include "bonsai/core/gguf.hpp"

namespace bonsai::gguf {

// Throws bonsai::Error naming `where` when the value is inconsistent or its
// arrays nest deeper than kMaxArrayDepth. `depth` is the array depth of v.
void check_value(const Value &v, const std::string &where, int depth = 0);

} // namespace bonsai::gguf
