#include "weight.hpp"

#include <cstring>
#include <limits>
#include <sys/mman.h>
#include <unistd.h>

#include <oneapi/tbb/parallel_for.h>

#include "plugin_error.hpp"
#include "q1_tiles.hpp"

namespace bonsai::cpu {

// core's encoding ids are the ABI's.
static_assert(static_cast<uint32_t>(GgmlType::Q1_0) == BONSAI_WEIGHT_Q1_0);
static_assert(static_cast<uint32_t>(GgmlType::Q2_0) == BONSAI_WEIGHT_Q2_0);
static_assert(static_cast<uint32_t>(GgmlType::Q2_0_G64) == BONSAI_WEIGHT_Q2_0_G64);
static_assert(static_cast<uint32_t>(GgmlType::Q8_0) == BONSAI_WEIGHT_Q8_0);

bool is_supported_type(uint32_t type_id) {
  switch (type_id) {
  case static_cast<uint32_t>(GgmlType::F32):
  case static_cast<uint32_t>(GgmlType::F16):
  case static_cast<uint32_t>(GgmlType::BF16):
  case static_cast<uint32_t>(GgmlType::Q8_0):
  case static_cast<uint32_t>(GgmlType::Q1_0):
  case static_cast<uint32_t>(GgmlType::Q2_0):
  case static_cast<uint32_t>(GgmlType::Q2_0_G64):
    return true;
  default:
    return false;
  }
}

std::string Weight::label() const {
  return strformat("'%s' (%.*s, %lld rows x %lld cols)", name.c_str(),
                   static_cast<int>(type_name(static_cast<uint32_t>(type)).size()),
                   type_name(static_cast<uint32_t>(type)).data(), static_cast<long long>(rows),
                   static_cast<long long>(cols));
}

std::unique_ptr<Weight> make_weight(const bonsai_weight_desc &desc) {
  const std::string name = desc.name ? desc.name : "(unnamed)";
  if (!is_supported_type(desc.type))
    fail(BONSAI_ERR_UNSUPPORTED,
         strformat("weight '%s': ggml type %u is not supported by the CPU plugin", name.c_str(),
                   desc.type));
  const TypeTraits traits = traits_of(static_cast<GgmlType>(desc.type));
  if (desc.cols <= 0 || desc.rows <= 0)
    fail_invalid(strformat("weight '%s': shape %lld rows x %lld cols must be positive",
                           name.c_str(), static_cast<long long>(desc.rows),
                           static_cast<long long>(desc.cols)));
  if (desc.cols % traits.block_elements != 0)
    fail_invalid(strformat("weight '%s': %lld cols is not a whole number of %lld-element %.*s "
                           "blocks",
                           name.c_str(), static_cast<long long>(desc.cols),
                           static_cast<long long>(traits.block_elements),
                           static_cast<int>(traits.name.size()), traits.name.data()));
  // Keep every size computation far from overflow (int32 indices elsewhere).
  constexpr int64_t kMaxDim = int64_t{1} << 31;
  if (desc.cols >= kMaxDim || desc.rows >= kMaxDim)
    fail_invalid(strformat("weight '%s': a dimension exceeds 2^31", name.c_str()));
  // Both factors are below 2^31 and block_bytes is small: no overflow.
  const uint64_t row_bytes =
      static_cast<uint64_t>(desc.cols / traits.block_elements) * traits.block_bytes;
  const uint64_t expected = static_cast<uint64_t>(desc.rows) * row_bytes;
  if (desc.nbytes != expected)
    fail_invalid(strformat("weight '%s': nbytes is %llu but %lld rows of %lld %.*s values take "
                           "%llu bytes",
                           name.c_str(), static_cast<unsigned long long>(desc.nbytes),
                           static_cast<long long>(desc.rows), static_cast<long long>(desc.cols),
                           static_cast<int>(traits.name.size()), traits.name.data(),
                           static_cast<unsigned long long>(expected)));
  if (desc.data == nullptr)
    fail_invalid(strformat("weight '%s': data is NULL", name.c_str()));
  if (expected > std::numeric_limits<size_t>::max())
    fail_invalid(strformat("weight '%s': too large for this machine", name.c_str()));

  auto w = std::make_unique<Weight>();
  w->type = static_cast<GgmlType>(desc.type);
  w->rows = desc.rows;
  w->cols = desc.cols;
  w->row_bytes = static_cast<size_t>(row_bytes);
  w->name = name;
  if ((desc.flags & BONSAI_WEIGHT_DATA_OUTLIVES_CONTEXT) != 0) {
    w->data = static_cast<const uint8_t *>(desc.data);
  } else {
    w->owned = std::make_unique_for_overwrite<uint8_t[]>(static_cast<size_t>(expected));
    std::memcpy(w->owned.get(), desc.data, static_cast<size_t>(expected));
    w->data = w->owned.get();
  }
  return w;
}

HugeAlignedBuffer::HugeAlignedBuffer(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  mapping_bytes_ = bytes + kHuge;
  mapping_ =
      mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping_ == MAP_FAILED)
    fail(BONSAI_ERR_OUT_OF_MEMORY,
         strformat("cannot map %zu bytes for tiled weights", mapping_bytes_));
  const auto start = reinterpret_cast<uintptr_t>(mapping_);
  const uintptr_t aligned = (start + kHuge - 1) & ~uintptr_t{kHuge - 1};
  // Keep only whole pages from the boundary on: unmap the slack around them.
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t end = start + mapping_bytes_;
  const uintptr_t kept_end = (aligned + bytes + page - 1) & ~(page - 1);
  if (aligned > start)
    munmap(mapping_, aligned - start);
  if (end > kept_end)
    munmap(reinterpret_cast<void *>(kept_end), end - kept_end);
  mapping_ = reinterpret_cast<void *>(aligned);
  mapping_bytes_ = kept_end - aligned;
  data_ = reinterpret_cast<uint8_t *>(aligned);
  // No MADV_HUGEPAGE: with the kernel's default defrag setting it makes page
  // faults compact memory on the spot, and an 8B load then took 1.5 s now
  // and then instead of 0.4-0.7 s, with decode and prefill no faster for it
  // (docs/history/2026-11-26-cpu-round-3-avx512-nibble-masks.md).
}

HugeAlignedBuffer::~HugeAlignedBuffer() {
  munmap(mapping_, mapping_bytes_);
}

const uint8_t *Weight::natural_row(int64_t r, uint8_t *scratch) const {
  if (tiled == TileFormat::None)
    return row(r);
  const int64_t first = r / kTileRows * kTileRows;
  untile_q1_row({tiled, cols / 128, row_bytes}, row(first), static_cast<int>(r - first), scratch);
  return scratch;
}

bool tile_weight(Weight &w, TileFormat format, oneapi::tbb::task_arena &arena) {
  // Both tile formats so far are Q1_0's.
  if (format == TileFormat::None || w.tiled != TileFormat::None || w.type != GgmlType::Q1_0 ||
      !q1_tileable(w.rows, w.cols))
    return false;
  // 2 MiB-aligned so that huge pages, where the kernel grants them, spare
  // the long sweeps of the kernels the TLB (alignment measured against
  // 64-byte and page alignment in
  // docs/history/2026-11-26-cpu-round-3-q1-tiles-tables.md).
  auto tiled = std::make_unique<HugeAlignedBuffer>(w.nbytes());
  uint8_t *base = tiled->data();
  const size_t tile_bytes = static_cast<size_t>(kTileRows) * w.row_bytes;
  arena.execute([&] {
    oneapi::tbb::parallel_for(int64_t{0}, w.rows / kTileRows, [&](int64_t tile) {
      const size_t at = static_cast<size_t>(tile) * tile_bytes;
      tile_q1_rows({format, w.cols / 128, w.row_bytes}, w.data + at, base + at);
    });
  });
  w.tiles = std::move(tiled);
  w.owned.reset(); // a copy made at upload is no longer needed
  w.data = base;
  w.tiled = format;
  return true;
}

} // namespace bonsai::cpu
