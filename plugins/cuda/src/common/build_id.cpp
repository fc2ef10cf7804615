#include "build_id.hpp"

#include <elf.h>
#include <link.h>

#include <cstring>

namespace bonsai::cuda {
namespace {

struct Search {
  const void *address = nullptr; // a function of the binary to find
  std::string id;                // its build ID in hex, once found
};

// The NT_GNU_BUILD_ID note of the loaded object that holds search->address.
int find_build_id(struct dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<Search *>(data);
  const auto at = reinterpret_cast<ElfW(Addr)>(search->address);
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && at >= info->dlpi_addr + ph.p_vaddr &&
        at < info->dlpi_addr + ph.p_vaddr + ph.p_memsz)
      holds = true;
  }
  if (!holds)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const auto *p = reinterpret_cast<const unsigned char *>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char *const end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof note);
      const unsigned char *name = p + sizeof note;
      const unsigned char *desc = name + ((note.n_namesz + 3) & ~3u);
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && desc + note.n_descsz <= end) {
        static const char kHex[] = "0123456789abcdef";
        for (unsigned j = 0; j < note.n_descsz; ++j) {
          search->id += kHex[desc[j] >> 4];
          search->id += kHex[desc[j] & 15];
        }
        return 1;
      }
      p = desc + ((note.n_descsz + 3) & ~3u);
    }
  }
  return 1; // the object, without a build ID
}

} // namespace

std::string plugin_build_id(const std::string &fallback) {
  Search search;
  search.address = reinterpret_cast<const void *>(&plugin_build_id);
  dl_iterate_phdr(find_build_id, &search);
  return search.id.empty() ? "version-" + fallback : "gnu-" + search.id;
}

} // namespace bonsai::cuda
