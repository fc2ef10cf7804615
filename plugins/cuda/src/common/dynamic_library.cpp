#include "dynamic_library.hpp"

#include <dlfcn.h>

namespace bonsai::cuda {

OpenedLibrary open_first_library(const std::vector<std::string> &candidates) {
  OpenedLibrary opened;
  for (const std::string &candidate : candidates) {
    dlerror(); // clear a stale message
    void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      opened.handle = handle;
      opened.path = candidate;
      opened.error.clear();
      return opened;
    }
    const char *why = dlerror();
    opened.error += (opened.error.empty() ? "" : "; ") +
                    std::string(why != nullptr ? why : candidate + ": dlopen failed");
  }
  return opened;
}

void *lookup_symbol(void *handle, const char *name) {
  return handle == nullptr ? nullptr : dlsym(handle, name);
}

} // namespace bonsai::cuda
