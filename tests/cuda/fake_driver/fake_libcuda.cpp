// A fake libcuda for tests: the Driver API functions the CUDA plugin calls,
// with device memory in host RAM and kernels run on the CPU by the fiber
// emulator. Select it with BONSAI_CUDA_DRIVER=<path of this library>; the
// plugin then runs end to end (context, modules, uploads, launches with the
// real argument packing, CUDA graph capture and replay) without a GPU. The
// PTX handed to cuModuleLoadData must come from NVRTC and name every kernel
// the plugin asks for; a CUBIN (NVRTC's ELF for sm_XX) must define them as
// functions. BONSAI_FAKE_CUDA_REFUSE_PTX=1 plays a driver older than NVRTC:
// PTX is refused with CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUBINs load.
// BONSAI_FAKE_CUDA_MEMORY sets the device size in bytes (default 8 GiB) to
// test out-of-memory paths.
//
// It keeps the real driver's rules that the plugin must respect: calls that
// need a current context fail without one, launches are held to the real
// grid, block and shared-memory limits (static + dynamic bytes, 48 KB unless
// the kernel opted in with cuFuncSetAttribute), and primary-context retains
// are counted. BONSAI_FAKE_CUDA_FAIL="cuCtxPushCurrent_v2,cuMemAlloc_v2=2"
// makes the named functions fail (with CUDA_ERROR_DEINITIALIZED, 4, unless a
// code is given), read at every call so a test can inject a fault midway.
// bonsai_fake_cuda_counts() (fake_cuda_control.h) reports what is live.
//
// The persistent decode kernels run with every block alive at once
// (emu::launch_cooperative) and must be launched cooperatively when
// cuLaunchKernelEx exists. BONSAI_FAKE_CUDA_PERSISTENT_FAULT breaks their
// synchronization on purpose, to show that the emulator catches it:
// "lost_signal=N" drops the N-th counter update of every launch,
// "no_wait" removes every wait from the instruction list, "early" makes
// each wait one count short, "no_fence" makes fences publish nothing (the
// stores then land at the kernel's end); "KIND@FLAG" breaks only the
// launches that have FLAG (fake_clock.hpp's flags: head, prefetch, mma,
// quantize, balanced, stream, fused), so that one variant of the kernel
// fails while the others run.
// BONSAI_FAKE_CUDA_SEED seeds the order in which the blocks are visited.
//
// Time: BONSAI_FAKE_CUDA_TIMES scripts how long each kernel run takes on a
// virtual clock that events read (fake_clock.hpp); without it
// cuEventElapsedTime answers CUDA_ERROR_NOT_SUPPORTED.
//
// A copy from pinned host memory (cuMemAllocHost) is asynchronous, as on a
// GPU: it happens only at the next synchronization, event wait, launch or
// other copy, so a plugin that rewrites a pinned buffer before waiting for
// its copy sends the new bytes, and the tests see wrong results. Copies from
// pageable memory happen at once (the real driver stages them before
// returning).
#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_abi_decls.hpp"
#include "fake_clock.hpp"
#include "fake_cuda_control.h"
#include "fiber_emulator.hpp"
// The plugin's kernels, compiled as C++.
#include "common_prelude.cuh"
// The int8 record format and MMA, before the kernel files that use them.
#include "int8_input.cuh"
#include "int8_mma.cuh"

#include "gemv_dp4a.cuh"
#include "persistent.cuh"

#include "attention_tc.cuh"
#include "delta_net.cuh"
#include "layer.cuh"
#include "matmul.cuh"
#include "matmul_mmq.cuh"
#include "matmul_tc.cuh"

using namespace bonsai::cuda;

namespace {

constexpr CUresult kInvalidValue = 1;
constexpr CUresult kDeinitialized = 4;
constexpr CUresult kInvalidImage = 200;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotSupported = 801;
constexpr CUresult kUnsupportedPtxVersion = 222;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kNotFound = 500;
constexpr CUresult kCooperativeLaunchTooLarge = 720;
constexpr int kMultiprocessors = 4;

// An H100's launch limits.
constexpr unsigned kMaxGridX = 2147483647u;
constexpr unsigned kMaxGridYZ = 65535u;
constexpr unsigned kMaxBlockThreads = 1024u;
constexpr int kSharedPerBlockOptin = 232448; // 227 KB

// The fault BONSAI_FAKE_CUDA_FAIL injects into `function`, or success:
// comma-separated entries "name" or "name=code", names compared exactly. A
// code that is not a positive number is a mistake in the test: abort.
CUresult injected_fault(const char *function) {
  const char *env = std::getenv("BONSAI_FAKE_CUDA_FAIL");
  if (env == nullptr)
    return kCudaSuccess;
  const std::string list = env;
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(',', start);
    if (end == std::string::npos)
      end = list.size();
    const std::string entry = list.substr(start, end - start);
    const size_t eq = entry.find('=');
    if (entry.substr(0, eq) == function) {
      if (eq == std::string::npos)
        return kDeinitialized;
      char *rest = nullptr;
      const long code = std::strtol(entry.c_str() + eq + 1, &rest, 10);
      if (rest == entry.c_str() + eq + 1 || *rest != '\0' || code <= 0) {
        std::fprintf(stderr, "BONSAI_FAKE_CUDA_FAIL: bad code in '%s'\n", entry.c_str());
        std::abort();
      }
      return static_cast<CUresult>(code);
    }
    start = end + 1;
  }
  return kCudaSuccess;
}
#define BONSAI_FAKE_FAULT()                                                                        \
  if (const CUresult fault = injected_fault(__func__); fault != kCudaSuccess)                      \
  return fault

// Pushes minus pops on this thread: the real driver's current-context stack.
thread_local int current_depth = 0;
#define BONSAI_FAKE_NEEDS_CONTEXT()                                                                \
  if (current_depth <= 0)                                                                          \
  return kInvalidContext
struct FakeKernel {
  std::string name;
  std::vector<size_t> arg_sizes;
  std::function<void(void **, emu::Dim3, unsigned, size_t)> run;
  bool cooperative = false; // its blocks wait for each other (persistent decode)
  // The launch's flags for the scripted clock and scoped faults (the
  // persistent kernel's switches), or none.
  std::function<std::vector<std::string>(void **)> flags;
};

template <class... A, size_t... I>
std::tuple<A...> unpack(void **params, std::index_sequence<I...>) {
  std::tuple<A...> args;
  (std::memcpy(&std::get<I>(args), params[I], sizeof(A)), ...);
  return args;
}

template <class... A> FakeKernel make_kernel(const char *name, void (*fn)(A...)) {
  FakeKernel k;
  k.name = name;
  k.arg_sizes = {sizeof(A)...};
  k.run = [fn](void **params, emu::Dim3 grid, unsigned block, size_t shared) {
    const auto args = unpack<A...>(params, std::index_sequence_for<A...>{});
    emu::launch(grid, block, shared, [&] { std::apply(fn, args); });
  };
  return k;
}

// BONSAI_FAKE_CUDA_PERSISTENT_FAULT, read at every launch.
struct PersistentFault {
  std::string kind; // "", "lost_signal", "no_wait", "early", "no_fence"
  long n = 1;
  std::string flag; // "KIND@FLAG": only launches with this flag
};
PersistentFault persistent_fault() {
  PersistentFault fault;
  const char *env = std::getenv("BONSAI_FAKE_CUDA_PERSISTENT_FAULT");
  if (env == nullptr || *env == '\0')
    return fault;
  std::string text = env;
  if (const size_t at = text.find('@'); at != std::string::npos) {
    fault.flag = text.substr(at + 1);
    text = text.substr(0, at);
  }
  const size_t eq = text.find('=');
  fault.kind = text.substr(0, eq);
  if (eq != std::string::npos)
    fault.n = std::strtol(text.c_str() + eq + 1, nullptr, 10);
  if ((fault.kind != "lost_signal" && fault.kind != "no_wait" && fault.kind != "early" &&
       fault.kind != "no_fence") ||
      fault.n < 1) {
    std::fprintf(stderr, "BONSAI_FAKE_CUDA_PERSISTENT_FAULT: bad value '%s'\n", env);
    std::abort();
  }
  return fault;
}

// The switches a persistent launch's arguments carry, as flags.
std::vector<std::string> persistent_flags(const PersistentArgs &args) {
  std::vector<std::string> flags;
  if (args.n_vocab > 0)
    flags.push_back("head");
  if (args.prefetch != 0)
    flags.push_back("prefetch");
  if (args.mma != 0)
    flags.push_back("mma");
  if (args.quantize != 0)
    flags.push_back("quantize");
  if (args.unit_rows > 0 && args.unit_rows < PK_TILE_ROWS)
    flags.push_back("balanced");
  if (args.stream_slots > 1)
    flags.push_back("stream");
  if (args.head_ready_base > 0)
    flags.push_back("fused");
  return flags;
}

// A persistent decode kernel: all blocks at once, with the injected fault.
FakeKernel make_persistent_kernel(const char *name, void (*fn)(PersistentArgs)) {
  FakeKernel k;
  k.name = name;
  k.arg_sizes = {sizeof(PersistentArgs)};
  k.cooperative = true;
  k.flags = [](void **params) {
    PersistentArgs args;
    std::memcpy(&args, params[0], sizeof args);
    return persistent_flags(args);
  };
  k.run = [fn](void **params, emu::Dim3 grid, unsigned block, size_t shared) {
    PersistentArgs args;
    std::memcpy(&args, params[0], sizeof args);
    PersistentFault fault = persistent_fault();
    if (!fault.flag.empty()) {
      const std::vector<std::string> flags = persistent_flags(args);
      if (std::find(flags.begin(), flags.end(), fault.flag) == flags.end())
        fault = PersistentFault{};
    }
    std::vector<PkInstr> changed;
    if (fault.kind == "no_wait" || fault.kind == "early") {
      changed.assign(args.instrs, args.instrs + args.n_instrs);
      for (PkInstr &instr : changed)
        instr.wait_target = fault.kind == "no_wait" ? 0 : std::max(0, instr.wait_target - 1);
      args.instrs = changed.data();
    }
    emu::ignore_fences = fault.kind == "no_fence";
    emu::lose_signal_at = fault.kind == "lost_signal" ? fault.n : 0;
    if (const char *seed = std::getenv("BONSAI_FAKE_CUDA_SEED"); seed != nullptr && *seed != '\0')
      emu::schedule_seed = std::strtoul(seed, nullptr, 10);
    emu::launch_cooperative(grid, block, shared, [&] { fn(args); });
    emu::ignore_fences = false;
    emu::lose_signal_at = 0;
  };
  return k;
}

const std::map<std::string, FakeKernel> &kernel_table() {
  static const std::map<std::string, FakeKernel> table = [] {
    std::map<std::string, FakeKernel> t;
    auto add = [&t](FakeKernel k) { t.emplace(k.name, std::move(k)); };
// Each kernel under its own name (the PTX entry name is the symbol's).
#define BONSAI_FAKE(kernel) add(make_kernel(#kernel, kernel));
#define BONSAI_FAKE_TYPE(s)                                                                        \
  BONSAI_FAKE(bonsai_gemv_##s)                                                                     \
  BONSAI_FAKE(bonsai_gemm_##s)                                                                     \
  BONSAI_FAKE(bonsai_gemv_swiglu_##s)                                                              \
  BONSAI_FAKE(bonsai_gemm_swiglu_##s)                                                              \
  BONSAI_FAKE(bonsai_get_rows_##s)
// The tensor-core and int8 kernels of the 128-value block types.
#define BONSAI_FAKE_FAST_TYPE(s)                                                                   \
  BONSAI_FAKE(bonsai_gemm_tc_##s)                                                                  \
  BONSAI_FAKE(bonsai_gemm_swiglu_tc_##s)                                                           \
  BONSAI_FAKE(bonsai_gemm_mmq_##s)                                                                 \
  BONSAI_FAKE(bonsai_gemm_swiglu_mmq_##s)                                                          \
  BONSAI_FAKE(bonsai_gemv_dp4a_##s)                                                                \
  BONSAI_FAKE(bonsai_gemv_swiglu_dp4a_##s)
    BONSAI_FAKE_TYPE(f32)
    BONSAI_FAKE_TYPE(f16)
    BONSAI_FAKE_TYPE(bf16)
    BONSAI_FAKE_TYPE(q8_0)
    BONSAI_FAKE_TYPE(q1_0)
    BONSAI_FAKE_TYPE(q2_0)
    BONSAI_FAKE_FAST_TYPE(q1_0)
    BONSAI_FAKE_FAST_TYPE(q2_0)
    BONSAI_FAKE(bonsai_rmsnorm)
    BONSAI_FAKE(bonsai_qk_norm_rope)
    BONSAI_FAKE(bonsai_attention_split)
    BONSAI_FAKE(bonsai_attention_split_warps)
    BONSAI_FAKE(bonsai_qk_norm_rope_f16)
    BONSAI_FAKE(bonsai_attention_split_f16)
    BONSAI_FAKE(bonsai_attention_split_warps_f16)
    BONSAI_FAKE(bonsai_attention_split_warps_wide)
    BONSAI_FAKE(bonsai_attention_split_warps_wide_f16)
    BONSAI_FAKE(bonsai_attention_merge)
    BONSAI_FAKE(bonsai_attention_tc)
    BONSAI_FAKE(bonsai_attention_tc_f16)
    BONSAI_FAKE(bonsai_sigmoid_gate)
    BONSAI_FAKE(bonsai_delta_net_conv)
    BONSAI_FAKE(bonsai_delta_net_prepare)
    BONSAI_FAKE(bonsai_delta_rule)
    BONSAI_FAKE(bonsai_delta_net_gated_norm)
    BONSAI_FAKE(bonsai_argmax)
    BONSAI_FAKE(bonsai_quantize_input)
    BONSAI_FAKE(bonsai_quantize_rows)
    add(make_persistent_kernel("bonsai_decode_persistent_q1_0", bonsai_decode_persistent_q1_0));
    add(make_persistent_kernel("bonsai_decode_persistent_q2_0", bonsai_decode_persistent_q2_0));
    add(make_persistent_kernel("bonsai_decode_persistent_q1_0_f16",
                               bonsai_decode_persistent_q1_0_f16));
    add(make_persistent_kernel("bonsai_decode_persistent_q2_0_f16",
                               bonsai_decode_persistent_q2_0_f16));
    // The held-records program's kernels (persistent_records=registers):
    // its source defines BONSAI_PK_HELD_RECORDS, this file's does not.
    add(make_persistent_kernel("bonsai_decode_persistent_held_q1_0", [](PersistentArgs a) {
      decode_persistent<TypeQ1_0, Dp4aQ1_0, MmqQ1_0, float, true>(a);
    }));
    add(make_persistent_kernel("bonsai_decode_persistent_held_q2_0", [](PersistentArgs a) {
      decode_persistent<TypeQ2_0, Dp4aQ2_0, MmqQ2_0, float, true>(a);
    }));
    add(make_persistent_kernel("bonsai_decode_persistent_held_q1_0_f16", [](PersistentArgs a) {
      decode_persistent<TypeQ1_0, Dp4aQ1_0, MmqQ1_0, u16, true>(a);
    }));
    add(make_persistent_kernel("bonsai_decode_persistent_held_q2_0_f16", [](PersistentArgs a) {
      decode_persistent<TypeQ2_0, Dp4aQ2_0, MmqQ2_0, u16, true>(a);
    }));
#undef BONSAI_FAKE_FAST_TYPE
#undef BONSAI_FAKE_TYPE
#undef BONSAI_FAKE
    return t;
  }();
  return table;
}

// A kernel as cuModuleGetFunction returns it: the emulated code plus the
// attributes the driver keeps per function.
struct FakeFunction {
  const FakeKernel *kernel = nullptr;
  int static_shared = 0; // bytes of the .shared variables its PTX uses
  int max_dynamic_shared = 0;
  bool waits_for_grid = true; // its PTX runs griddepcontrol.wait (unknown for a CUBIN: true)
};

// A loaded image: the kernels it defines, with their static shared bytes.
struct FakeModule {
  std::map<std::string, int> entries;
  std::map<std::string, bool> waits_for_grid; // PTX entries: whether the body waits
  std::map<std::string, std::unique_ptr<FakeFunction>> functions;
};

// The static shared bytes of `entry` in `ptx`: every non-extern .shared
// variable of the module that the entry's body names (NVRTC declares them
// at module scope or inside the body), as ptxas allocates them.
// The text of `entry` in `ptx`, up to the next entry.
std::string entry_body(const std::string &ptx, const std::string &entry) {
  const size_t begin = ptx.find(".entry " + entry + "(");
  const size_t end = ptx.find(".entry ", begin + 1);
  return ptx.substr(begin, end == std::string::npos ? end : end - begin);
}

int static_shared_bytes(const std::string &ptx, const std::string &entry) {
  const std::string body = entry_body(ptx, entry);
  static const std::regex declaration(
      R"((^|\n)[ \t]*\.shared\s+\.align\s+\d+\s+\.b8\s+([A-Za-z0-9_$]+)\[(\d+)\];)");
  int bytes = 0;
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), declaration);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[2];
    for (size_t at = body.find(name); at != std::string::npos; at = body.find(name, at + 1)) {
      const char next = at + name.size() < body.size() ? body[at + name.size()] : ' ';
      if (!std::isalnum(static_cast<unsigned char>(next)) && next != '_' && next != '$') {
        bytes += std::stoi((*it)[3]);
        break;
      }
    }
  }
  return bytes;
}

// The entries of NVRTC's PTX (".entry NAME(").
std::map<std::string, int> ptx_entries(const std::string &ptx) {
  static const std::regex entry(R"(\.entry\s+([A-Za-z0-9_$]+)\()");
  std::map<std::string, int> entries;
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), entry); it != std::sregex_iterator();
       ++it)
    entries[(*it)[1]] = static_shared_bytes(ptx, (*it)[1]);
  return entries;
}

// The functions of a CUBIN (an ELF64 image): every STT_FUNC symbol, with the
// size of its ".nv.shared.NAME" section as its static shared bytes. Empty
// when the image is not a well-formed ELF64.
std::map<std::string, int> cubin_entries(const unsigned char *image) {
  Elf64_Ehdr header;
  std::memcpy(&header, image, sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr))
    return {};
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), image + header.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  if (header.e_shstrndx >= sections.size())
    return {};
  const char *section_names =
      reinterpret_cast<const char *>(image) + sections[header.e_shstrndx].sh_offset;
  std::map<std::string, int> shared_by_function, entries;
  const std::string shared_prefix = ".nv.shared.";
  for (const Elf64_Shdr &section : sections) {
    const std::string name = section_names + section.sh_name;
    if (name.rfind(shared_prefix, 0) == 0)
      shared_by_function[name.substr(shared_prefix.size())] = static_cast<int>(section.sh_size);
  }
  for (const Elf64_Shdr &section : sections) {
    if (section.sh_type != SHT_SYMTAB || section.sh_link >= sections.size())
      continue;
    const char *names = reinterpret_cast<const char *>(image) + sections[section.sh_link].sh_offset;
    for (size_t i = 0; i < section.sh_size / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym symbol;
      std::memcpy(&symbol, image + section.sh_offset + i * sizeof(Elf64_Sym), sizeof symbol);
      if (ELF64_ST_TYPE(symbol.st_info) == STT_FUNC) {
        const std::string name = names + symbol.st_name;
        entries[name] = shared_by_function.count(name) ? shared_by_function[name] : 0;
      }
    }
  }
  return entries;
}

bool refuses_ptx() {
  const char *env = std::getenv("BONSAI_FAKE_CUDA_REFUSE_PTX");
  return env != nullptr && std::string(env) == "1";
}

struct RecordedLaunch {
  const FakeKernel *kernel;
  emu::Dim3 grid;
  unsigned block;
  size_t shared;
  std::vector<std::vector<unsigned char>> args;
};

struct FakeGraph {
  std::vector<RecordedLaunch> launches;
};

// A copy from pinned memory not yet performed.
struct PendingCopy {
  CUdeviceptr dst;
  const void *src;
  size_t bytes;
};

struct State {
  std::mutex mutex; // the plugin may probe from several threads
  std::map<CUdeviceptr, size_t> allocations;
  std::map<const void *, size_t> pinned; // cuMemAllocHost blocks
  std::vector<PendingCopy> pending;      // guarded by mutex
  int events = 0;
  int timings = 0;                 // cuEventElapsedTime answers given
  double clock_us = 0;             // the scripted device clock (fake_clock.hpp)
  int programmatic_launches = 0;   // cuLaunchKernelEx with programmatic serialization
  std::map<std::string, int> runs; // kernels run, by name
  size_t allocated = 0;
  int primary_retains = 0;
  int modules = 0;
  int streams = 0;
  FakeGraph *capturing = nullptr;
};

State &state() {
  static State s;
  return s;
}

size_t device_bytes() {
  const char *env = std::getenv("BONSAI_FAKE_CUDA_MEMORY");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : (size_t{8} << 30);
}

// The compute capability the device reports: 9.0 (an H100), or
// BONSAI_FAKE_CUDA_COMPUTE=MAJOR.MINOR (7.5 to 12.x) to play another GPU.
struct ComputeCapability {
  int major = 9, minor = 0;
};
ComputeCapability compute_capability() {
  ComputeCapability cc;
  const char *env = std::getenv("BONSAI_FAKE_CUDA_COMPUTE");
  int major = 0, minor = 0;
  if (env != nullptr && std::sscanf(env, "%d.%d", &major, &minor) == 2 &&
      major * 10 + minor >= 75 && major <= 12 && minor >= 0 && minor <= 9)
    cc = {major, minor};
  return cc;
}

int fake_context_tag = 0;
int fake_stream_tag = 0;

// An event: when it was last recorded on the scripted clock.
struct FakeEvent {
  unsigned flags = 0;
  bool recorded = false;
  double at_us = 0;
};

// Whether [src, src + bytes) lies in pinned memory (state().mutex held).
bool is_pinned(const void *src, size_t bytes) {
  const auto it = state().pinned.upper_bound(src);
  if (it == state().pinned.begin())
    return false;
  const auto block = std::prev(it);
  const auto *begin = static_cast<const char *>(block->first);
  const auto *p = static_cast<const char *>(src);
  return p >= begin && p + bytes <= begin + block->second;
}

// Performs the copies from pinned memory queued so far.
void flush_pending() {
  std::lock_guard<std::mutex> lock(state().mutex);
  for (const PendingCopy &copy : state().pending)
    std::memcpy(reinterpret_cast<void *>(copy.dst), copy.src, copy.bytes);
  state().pending.clear();
}

void run_launch(const RecordedLaunch &launch) {
  std::vector<void *> params;
  for (const auto &arg : launch.args)
    params.push_back(const_cast<unsigned char *>(arg.data()));
  const std::vector<std::string> flags =
      launch.kernel->flags ? launch.kernel->flags(params.data()) : std::vector<std::string>{};
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().runs[launch.kernel->name];
    state().clock_us += fake_clock::cost_us(launch.kernel->name, flags);
  }
  launch.kernel->run(params.data(), launch.grid, launch.block, launch.shared);
}

} // namespace

extern "C" {

#define BONSAI_FAKE_API __attribute__((visibility("default")))

BONSAI_FAKE_API void bonsai_fake_cuda_counts(bonsai_fake_cuda_counts_t *counts) {
  std::lock_guard<std::mutex> lock(state().mutex);
  counts->allocations = static_cast<int>(state().allocations.size());
  counts->primary_retains = state().primary_retains;
  counts->modules = state().modules;
  counts->streams = state().streams;
  counts->pinned_blocks = static_cast<int>(state().pinned.size());
  counts->events = state().events;
  counts->timings = state().timings;
  counts->programmatic_launches = state().programmatic_launches;
}

BONSAI_FAKE_API int bonsai_fake_cuda_launches(const char *part) {
  std::lock_guard<std::mutex> lock(state().mutex);
  int total = 0;
  for (const auto &[name, runs] : state().runs)
    if (name.find(part) != std::string::npos)
      total += runs;
  return total;
}

BONSAI_FAKE_API CUresult cuInit(unsigned) {
  BONSAI_FAKE_FAULT();
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDriverGetVersion(int *version) {
  BONSAI_FAKE_FAULT();
  *version = 13000;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuGetErrorName(CUresult, const char **text) {
  *text = "FAKE_CUDA_ERROR";
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "error reported by the fake driver";
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDeviceGetCount(int *count) {
  BONSAI_FAKE_FAULT();
  *count = 1;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  BONSAI_FAKE_FAULT();
  if (ordinal != 0)
    return kInvalidValue;
  *device = 0;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  BONSAI_FAKE_FAULT();
  std::snprintf(name, static_cast<size_t>(length), "%s", "bonsai fake GPU (CPU emulation)");
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice) {
  BONSAI_FAKE_FAULT();
  *bytes = device_bytes();
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice) {
  BONSAI_FAKE_FAULT();
  switch (attribute) {
  case 5: // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X
    *value = static_cast<int>(kMaxGridX);
    break;
  case 6: // ..._MAX_GRID_DIM_Y
  case 7: // ..._MAX_GRID_DIM_Z
    *value = static_cast<int>(kMaxGridYZ);
    break;
  case 8: // ..._MAX_SHARED_MEMORY_PER_BLOCK
    *value = kDefaultSharedPerBlock;
    break;
  case kAttrMaxSharedPerBlockOptin:
    *value = kSharedPerBlockOptin;
    break;
  case kAttrComputeCapabilityMajor:
    *value = compute_capability().major;
    break;
  case kAttrComputeCapabilityMinor:
    *value = compute_capability().minor;
    break;
  case kAttrMultiprocessorCount:
    *value = kMultiprocessors;
    break;
  default:
    *value = 0;
  }
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  BONSAI_FAKE_FAULT();
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().primary_retains;
  *context = reinterpret_cast<CUcontext>(&fake_context_tag);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) {
  BONSAI_FAKE_FAULT();
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().primary_retains <= 0)
    return kInvalidContext; // released more often than retained
  --state().primary_retains;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuCtxPushCurrent_v2(CUcontext context) {
  BONSAI_FAKE_FAULT();
  if (context != reinterpret_cast<CUcontext>(&fake_context_tag))
    return kInvalidValue;
  ++current_depth;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuCtxPopCurrent_v2(CUcontext *context) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  --current_depth;
  if (context != nullptr)
    *context = reinterpret_cast<CUcontext>(&fake_context_tag);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  std::lock_guard<std::mutex> lock(state().mutex);
  *total_bytes = device_bytes();
  *free_bytes = *total_bytes - std::min(*total_bytes, state().allocated);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  std::lock_guard<std::mutex> lock(state().mutex);
  if (bytes == 0)
    return kInvalidValue;
  if (state().allocated + bytes > device_bytes())
    return kCudaErrorOutOfMemory;
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (memory == nullptr)
    return kCudaErrorOutOfMemory;
  std::memset(memory, 0xA5, bytes); // device memory starts as garbage
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  state().allocations[*pointer] = bytes;
  state().allocated += bytes;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemFree_v2(CUdeviceptr pointer) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  flush_pending(); // as cuMemFree waits for the work that uses the memory
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto it = state().allocations.find(pointer);
  if (it == state().allocations.end())
    return kInvalidValue;
  state().allocated -= it->second;
  state().allocations.erase(it);
  std::free(reinterpret_cast<void *>(pointer));
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                                              CUstream) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  if (state().capturing != nullptr)
    return kInvalidValue; // copies are not captured by the plugin
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (is_pinned(src, bytes)) {
      state().pending.push_back({dst, src, bytes});
      return kCudaSuccess;
    }
  }
  flush_pending(); // stream order: earlier copies land first
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  if (state().capturing != nullptr)
    return kInvalidValue;
  flush_pending();
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                              CUstream) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  if (state().capturing != nullptr)
    return kInvalidValue;
  flush_pending();
  std::memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, CUstream) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  flush_pending();
  auto *words = reinterpret_cast<unsigned *>(dst);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuStreamCreate(CUstream *stream, unsigned) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().streams;
  *stream = reinterpret_cast<CUstream>(&fake_stream_tag);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuStreamDestroy_v2(CUstream) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().streams;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuStreamSynchronize(CUstream) {
  BONSAI_FAKE_FAULT();
  if (state().capturing != nullptr)
    return kInvalidValue;
  flush_pending();
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemAllocHost_v2(void **pointer, size_t bytes) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  if (bytes == 0)
    return kInvalidValue;
  void *memory = std::malloc(bytes);
  if (memory == nullptr)
    return kCudaErrorOutOfMemory;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().pinned[memory] = bytes;
  *pointer = memory;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuMemFreeHost(void *pointer) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  flush_pending(); // the real driver waits for work that reads it
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().pinned.erase(pointer) != 1)
    return kInvalidValue;
  std::free(pointer);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuEventCreate(CUevent *event, unsigned flags) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().events;
  auto *created = new FakeEvent;
  created->flags = flags;
  *event = reinterpret_cast<CUevent>(created);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuEventDestroy_v2(CUevent event) {
  BONSAI_FAKE_FAULT();
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().events;
  delete reinterpret_cast<FakeEvent *>(event);
  return kCudaSuccess;
}
// Recording queues nothing: the copies before it are pending already, and
// the kernels before it have run (the clock has their time).
BONSAI_FAKE_API CUresult cuEventRecord(CUevent event, CUstream) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  if (state().capturing != nullptr)
    return kInvalidValue;
  std::lock_guard<std::mutex> lock(state().mutex);
  auto *e = reinterpret_cast<FakeEvent *>(event);
  e->recorded = true;
  e->at_us = state().clock_us;
  return kCudaSuccess;
}
// The scripted clock's milliseconds from `start` to `end`; as the real
// driver, refused for an event made without timing or never recorded.
BONSAI_FAKE_API CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  BONSAI_FAKE_FAULT();
  if (!fake_clock::scripted())
    return kNotSupported;
  const auto *a = reinterpret_cast<const FakeEvent *>(start);
  const auto *b = reinterpret_cast<const FakeEvent *>(end);
  if (a == nullptr || b == nullptr || !a->recorded || !b->recorded ||
      ((a->flags | b->flags) & kEventDisableTiming) != 0)
    return kInvalidHandle;
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().timings;
  *ms = static_cast<float>((b->at_us - a->at_us) / 1000.0);
  return kCudaSuccess;
}
// Waiting performs every pending copy (at least those before the record).
BONSAI_FAKE_API CUresult cuEventSynchronize(CUevent) {
  BONSAI_FAKE_FAULT();
  flush_pending();
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  const auto *bytes = static_cast<const unsigned char *>(image);
  std::map<std::string, int> entries;
  // Byte by byte: a short PTX string ends (NUL) before the magic would.
  if (bytes[0] == ELFMAG0 && bytes[1] == ELFMAG1 && bytes[2] == ELFMAG2 && bytes[3] == ELFMAG3) {
    entries = cubin_entries(bytes);
  } else {
    const std::string ptx(static_cast<const char *>(image));
    if (ptx.find(".entry") == std::string::npos || ptx.find(".target") == std::string::npos)
      return kInvalidImage;
    if (refuses_ptx())
      return kUnsupportedPtxVersion;
    entries = ptx_entries(ptx);
  }
  if (entries.empty())
    return kInvalidImage;
  auto *loaded = new FakeModule;
  if (bytes[0] != ELFMAG0)
    for (const auto &entry : entries)
      loaded->waits_for_grid[entry.first] =
          entry_body(static_cast<const char *>(image), entry.first).find("griddepcontrol.wait") !=
          std::string::npos;
  loaded->entries = std::move(entries);
  *module = reinterpret_cast<CUmodule>(loaded);
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().modules;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuModuleUnload(CUmodule module) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  delete reinterpret_cast<FakeModule *>(module);
  std::lock_guard<std::mutex> lock(state().mutex);
  --state().modules;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuModuleGetFunction(CUfunction *function, CUmodule module,
                                             const char *name) {
  BONSAI_FAKE_FAULT();
  // The real driver finds only kernels the module's image defines.
  auto *m = reinterpret_cast<FakeModule *>(module);
  const auto entry = m->entries.find(name);
  if (entry == m->entries.end())
    return kNotFound;
  const auto it = kernel_table().find(name);
  if (it == kernel_table().end())
    return kNotFound;
  auto &slot = m->functions[name];
  if (!slot) {
    slot = std::make_unique<FakeFunction>();
    slot->kernel = &it->second;
    slot->static_shared = entry->second;
    slot->max_dynamic_shared = kDefaultSharedPerBlock - slot->static_shared;
    const auto waits = m->waits_for_grid.find(name);
    slot->waits_for_grid = waits == m->waits_for_grid.end() || waits->second;
  }
  *function = reinterpret_cast<CUfunction>(slot.get());
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuFuncGetAttribute(int *value, int attribute, CUfunction function) {
  BONSAI_FAKE_FAULT();
  const auto *f = reinterpret_cast<const FakeFunction *>(function);
  if (attribute == kFuncAttrSharedSizeBytes)
    *value = f->static_shared;
  else if (attribute == kFuncAttrMaxDynamicSharedSizeBytes)
    *value = f->max_dynamic_shared;
  else
    return kInvalidValue;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuFuncSetAttribute(CUfunction function, int attribute, int value) {
  BONSAI_FAKE_FAULT();
  auto *f = reinterpret_cast<FakeFunction *>(function);
  if (attribute != kFuncAttrMaxDynamicSharedSizeBytes || value < 0 ||
      value > kSharedPerBlockOptin - f->static_shared)
    return kInvalidValue;
  f->max_dynamic_shared = value;
  return kCudaSuccess;
}
namespace {

// A launch's grid, block and dynamic shared bytes as both entry points take them.
struct LaunchGeometry {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
};

CUresult launch_function(CUfunction function, const LaunchGeometry &g, void **params,
                         void **extra) {
  const auto *f = reinterpret_cast<const FakeFunction *>(function);
  // The real limits: grid and block dimensions, and shared memory (the
  // kernel's static bytes plus these dynamic ones) within what it opted in to.
  if (g.block_y != 1 || g.block_z != 1 || g.block_x == 0 || g.block_x > kMaxBlockThreads ||
      g.grid_x == 0 || g.grid_y == 0 || g.grid_z == 0 || g.grid_x > kMaxGridX ||
      g.grid_y > kMaxGridYZ || g.grid_z > kMaxGridYZ ||
      g.shared_bytes > static_cast<unsigned>(f->max_dynamic_shared) || extra != nullptr ||
      params == nullptr)
    return kInvalidValue;
  RecordedLaunch launch;
  launch.kernel = f->kernel;
  launch.grid = {g.grid_x, g.grid_y, g.grid_z};
  launch.block = g.block_x;
  launch.shared = g.shared_bytes;
  for (size_t i = 0; i < launch.kernel->arg_sizes.size(); ++i) {
    const auto *bytes = static_cast<const unsigned char *>(params[i]);
    launch.args.emplace_back(bytes, bytes + launch.kernel->arg_sizes[i]);
  }
  if (state().capturing != nullptr) {
    state().capturing->launches.push_back(std::move(launch));
  } else {
    flush_pending(); // the kernel reads what the stream copied before it
    run_launch(launch);
  }
  return kCudaSuccess;
}

} // namespace

BONSAI_FAKE_API CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y,
                                        unsigned grid_z, unsigned block_x, unsigned block_y,
                                        unsigned block_z, unsigned shared_bytes, CUstream,
                                        void **params, void **extra) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  return launch_function(
      function, {grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes}, params, extra);
}
// With programmatic stream serialization the kernel may overlap the one
// before it, so it must wait for it itself: a kernel whose PTX never runs
// griddepcontrol.wait is refused here (a real GPU would run it and race).
// Grids still run one after another on the CPU.
BONSAI_FAKE_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction function,
                                          void **params, void **extra) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  if (config == nullptr || (config->n_attrs > 0 && config->attrs == nullptr))
    return kInvalidValue;
  bool programmatic = false, cooperative = false;
  for (unsigned i = 0; i < config->n_attrs; ++i) {
    if (config->attrs[i].id == kLaunchAttrProgrammaticStreamSerialization)
      programmatic = config->attrs[i].value.programmatic_stream_serialization_allowed != 0;
    else if (config->attrs[i].id == kLaunchAttrCooperative)
      cooperative = config->attrs[i].value.cooperative != 0;
    else
      return kInvalidValue; // the plugin sets no other attribute
  }
  const auto *f = reinterpret_cast<const FakeFunction *>(function);
  if (programmatic && !f->waits_for_grid)
    return kInvalidValue;
  // A cooperative grid must fit on the device at once: at most 2,048
  // threads per SM (the shared memory check is launch_function's).
  if (cooperative && static_cast<unsigned long long>(config->grid_x) * config->grid_y *
                             config->grid_z * config->block_x >
                         2048ull * kMultiprocessors)
    return kCooperativeLaunchTooLarge;
  if (f->kernel->cooperative && !cooperative)
    return kInvalidValue; // its blocks wait for each other: they must all be resident
  const CUresult result =
      launch_function(function,
                      {config->grid_x, config->grid_y, config->grid_z, config->block_x,
                       config->block_y, config->block_z, config->shared_bytes},
                      params, extra);
  if (result == kCudaSuccess && programmatic) {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().programmatic_launches;
  }
  return result;
}
BONSAI_FAKE_API CUresult cuStreamBeginCapture_v2(CUstream, int) {
  BONSAI_FAKE_FAULT();
  if (state().capturing != nullptr)
    return kInvalidValue;
  state().capturing = new FakeGraph;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuStreamEndCapture(CUstream, CUgraph *graph) {
  BONSAI_FAKE_FAULT();
  if (state().capturing == nullptr)
    return kInvalidValue;
  *graph = reinterpret_cast<CUgraph>(state().capturing);
  state().capturing = nullptr;
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                                     unsigned long long) {
  BONSAI_FAKE_FAULT();
  *exec = reinterpret_cast<CUgraphExec>(new FakeGraph(*reinterpret_cast<FakeGraph *>(graph)));
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuGraphLaunch(CUgraphExec exec, CUstream) {
  BONSAI_FAKE_FAULT();
  BONSAI_FAKE_NEEDS_CONTEXT();
  flush_pending();
  for (const RecordedLaunch &launch : reinterpret_cast<FakeGraph *>(exec)->launches)
    run_launch(launch);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuGraphExecDestroy(CUgraphExec exec) {
  BONSAI_FAKE_FAULT();
  delete reinterpret_cast<FakeGraph *>(exec);
  return kCudaSuccess;
}
BONSAI_FAKE_API CUresult cuGraphDestroy(CUgraph graph) {
  BONSAI_FAKE_FAULT();
  delete reinterpret_cast<FakeGraph *>(graph);
  return kCudaSuccess;
}

} // extern "C"
