// gguf::File: opening (read-only mmap) and the accessors over parsed data.
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bonsai/core/error.hpp"
#include "bonsai/core/gguf.hpp"
#include "parser.hpp"

namespace bonsai::gguf {

struct File::Mapping {
  void *addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr)
      ::munmap(addr, size);
  }
};

namespace {

// Closes the descriptor on every path out of open(); the mapping stays valid.
struct FdGuard {
  int fd;
  ~FdGuard() { ::close(fd); }
};

} // namespace

void File::release_resident_pages(const std::shared_ptr<const void> &mapping_handle,
                                  const void *data, size_t n) {
  const auto *mapping = static_cast<const Mapping *>(mapping_handle.get());
  if (mapping == nullptr || mapping->addr == nullptr || n == 0)
    return;
  const auto base = reinterpret_cast<uintptr_t>(mapping->addr);
  const auto begin = reinterpret_cast<uintptr_t>(data);
  if (begin < base || begin - base > mapping->size || n > mapping->size - (begin - base))
    return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = begin / page * page; // the mapping itself is page-aligned
  const uintptr_t end = std::min(base + mapping->size, (begin + n + page - 1) / page * page);
  // Advice only: a failure changes nothing.
  ::madvise(reinterpret_cast<void *>(first), end - first, MADV_DONTNEED);
}

File::File(File &&) noexcept = default;
File &File::operator=(File &&) noexcept = default;
File::~File() = default;

File File::open(const std::filesystem::path &path) {
  const std::string name = path.string();
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; it
  // is then rejected below as not a regular file. No effect on regular files.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw Error(name + ": cannot open: " + std::strerror(errno));
  FdGuard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw Error(name + ": cannot stat: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    throw Error(name + ": is a directory, not a GGUF file");
  if (!S_ISREG(st.st_mode))
    throw Error(name + ": not a regular file");
  if (st.st_size == 0)
    throw Error(name + ": empty file (0 bytes), not a GGUF file");

  auto mapping = std::make_shared<Mapping>();
  const auto size = static_cast<size_t>(st.st_size);
  void *addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED)
    throw Error(name + ": cannot map " + std::to_string(size) + " bytes: " + std::strerror(errno));
  mapping->addr = addr;
  mapping->size = size;

  File file;
  file.name_ = name;
  file.bytes_ = std::span<const uint8_t>(static_cast<const uint8_t *>(addr), size);
  file.mapping_ = std::move(mapping);
  parse_into(file);
  return file;
}

File File::parse(std::span<const uint8_t> bytes, std::string name) {
  File file;
  file.name_ = std::move(name);
  file.bytes_ = bytes;
  parse_into(file);
  return file;
}

const Value *File::find(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const Value &File::at(std::string_view key) const {
  if (const Value *v = find(key))
    return *v;
  throw Error(name_ + ": missing metadata key '" + std::string(key) + "'");
}

namespace {

std::string describe(const std::string &file, std::string_view key) {
  return file + ": metadata key '" + std::string(key) + "'";
}

} // namespace

std::string File::get_string(std::string_view key) const {
  return at(key).as_string(describe(name_, key));
}

uint64_t File::get_u64(std::string_view key) const {
  return at(key).as_u64(describe(name_, key));
}

double File::get_f64(std::string_view key) const {
  return at(key).as_f64(describe(name_, key));
}

const TensorInfo *File::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t ne : dims)
    n *= ne;
  return n;
}

} // namespace bonsai::gguf
