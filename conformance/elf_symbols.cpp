#include "elf_symbols.hpp"

#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace bonsai::conformance {
namespace {

template <class T>
T read_at(const std::vector<char> &bytes, size_t offset, const std::string &path) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    throw std::runtime_error(path + ": truncated ELF structure at offset " +
                             std::to_string(offset));
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

} // namespace

std::vector<std::string> exported_symbols(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  const auto header = read_at<Elf64_Ehdr>(bytes, 0, path);
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64)
    throw std::runtime_error(path + " is not an ELF64 file");

  std::vector<std::string> names;
  for (size_t i = 0; i < header.e_shnum; ++i) {
    const auto section = read_at<Elf64_Shdr>(bytes, header.e_shoff + i * sizeof(Elf64_Shdr), path);
    if (section.sh_type != SHT_DYNSYM)
      continue;
    const auto strings =
        read_at<Elf64_Shdr>(bytes, header.e_shoff + section.sh_link * sizeof(Elf64_Shdr), path);
    const size_t count = section.sh_entsize ? section.sh_size / section.sh_entsize : 0;
    for (size_t s = 0; s < count; ++s) {
      const auto sym = read_at<Elf64_Sym>(bytes, section.sh_offset + s * section.sh_entsize, path);
      const unsigned bind = ELF64_ST_BIND(sym.st_info);
      const unsigned visibility = ELF64_ST_VISIBILITY(sym.st_other);
      if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
          (visibility != STV_DEFAULT && visibility != STV_PROTECTED))
        continue;
      const size_t name_at = strings.sh_offset + sym.st_name;
      if (name_at >= bytes.size())
        throw std::runtime_error(path + ": symbol name outside the file");
      const char *name = bytes.data() + name_at;
      names.emplace_back(name, strnlen(name, bytes.size() - name_at));
    }
  }
  return names;
}

} // namespace bonsai::conformance
