#pragma once
// dlopen/dlsym helpers for libraries the plugin loads at run time (the CUDA
// driver, NVRTC). Handles are never closed: the driver keeps threads and
// state tied to its code, so unloading it is not safe.
#include <string>
#include <vector>

namespace bonsai::cuda {

struct OpenedLibrary {
  void *handle = nullptr; // NULL when no candidate could be opened
  std::string path;       // the candidate that opened
  std::string error;      // every candidate's dlerror() text when none opened
};

// Tries `candidates` in order with RTLD_NOW | RTLD_LOCAL.
OpenedLibrary open_first_library(const std::vector<std::string> &candidates);

// Resolves `name` into `*slot`; returns false (and leaves *slot NULL) when
// the symbol is missing.
template <class Fn> bool resolve_symbol(void *handle, const char *name, Fn *slot);
void *lookup_symbol(void *handle, const char *name);

template <class Fn> bool resolve_symbol(void *handle, const char *name, Fn *slot) {
  *slot = reinterpret_cast<Fn>(lookup_symbol(handle, name));
  return *slot != nullptr;
}

} // namespace bonsai::cuda
