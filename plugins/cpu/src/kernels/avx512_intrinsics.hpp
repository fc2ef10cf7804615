#pragma once
// What the AVX-512 kernel files include first. GCC 12's avx512fintrin.h trips
// -W(maybe-)uninitialized on its own _mm512_undefined_* helpers wherever they
// are inlined (GCC bug 105593), so those two warnings are off for the rest of
// every file that includes this header; only AVX-512 kernel files (and the
// benchmark that reuses their tile) do.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "kernels/simd_kernels.hpp"
#include "kernels/x86_helpers.hpp"
