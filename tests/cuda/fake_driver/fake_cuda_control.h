#pragma once
// What a test can ask the fake CUDA driver (fake_libcuda.cpp) directly:
// resolve bonsai_fake_cuda_counts with dlsym on the library that
// BONSAI_CUDA_DRIVER names (dlopen of the same path gives the same copy).
#ifdef __cplusplus
extern "C" {
#endif

typedef struct bonsai_fake_cuda_counts_t {
  int allocations;           // live cuMemAlloc blocks
  int primary_retains;       // cuDevicePrimaryCtxRetain calls not yet released
  int modules;               // loaded modules not yet unloaded
  int streams;               // created streams not yet destroyed
  int pinned_blocks;         // live cuMemAllocHost blocks
  int events;                // created events not yet destroyed
  int programmatic_launches; // launches with programmatic dependent launch, ever
  int timings;               // cuEventElapsedTime answers given, ever
} bonsai_fake_cuda_counts_t;

typedef void (*bonsai_fake_cuda_counts_fn)(bonsai_fake_cuda_counts_t *counts);

// bonsai_fake_cuda_launches(part): kernels run so far (direct launches and
// graph replays) whose name contains `part`.
typedef int (*bonsai_fake_cuda_launches_fn)(const char *part);

#ifdef __cplusplus
}
#endif
