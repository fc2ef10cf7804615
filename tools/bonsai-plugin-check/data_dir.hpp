#pragma once
// Where the golden tiny models are: installed next to the program
// (<bin>/../share/bonsai), else the source tree's tests/data for a build-tree
// checker.
#include <filesystem>

namespace bonsai::plugin_check {

// The first folder that holds tiny-q1.gguf; empty when none does.
std::filesystem::path find_golden_dir();

} // namespace bonsai::plugin_check
