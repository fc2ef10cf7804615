#pragma once
// Reads the dynamic symbol table of an ELF64 shared library from the file,
// so a check can count what a plugin exports without running nm.
#include <string>
#include <vector>

namespace bonsai::conformance {

// Names of the symbols the library defines and exports (global or weak
// binding, default or protected visibility, a defined section). Throws
// std::runtime_error when the file is not a readable ELF64 library.
std::vector<std::string> exported_symbols(const std::string &path);

} // namespace bonsai::conformance
