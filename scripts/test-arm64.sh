#!/usr/bin/env bash
# Cross-builds bonsai for 64-bit ARM Linux (aarch64) into build-arm64/ with
# Debian's cross compiler and arm64 libraries (multiarch), and runs the CPU
# plugin's suites under qemu-aarch64 in user mode (docs/arm64.md). The
# programs run on the multiarch loader and C library (libc6:arm64, at the
# paths an arm64 system has them), not on the cross compiler's own copies in
# /usr/aarch64-linux-gnu (qemu's -L): those are another build of glibc, and a
# loader of one build with the C library of the other corrupts pthread_create's
# stack cache (the first thread a program starts never starts).
#   scripts/test-arm64.sh                     install what is missing, build, test
#   scripts/test-arm64.sh run PROGRAM [ARGS]  run one aarch64 program under the
#       emulator: a name in build-arm64/bin (test_cpu, bonsai, ...) or a path.
#       QEMU_CPU=cortex-a53 (ARMv8.0), neoverse-n1 (dotprod) or max (the
#       default: dotprod and i8mm) picks the CPU it emulates.
# The suites: the kernel tests (every AArch64 set against float64, the scalar
# quantizer and each other), then the golden gates of the dense and qwen35
# models and the plugin conformance suite, each with the reference kernels
# and every AArch64 set forced by name, and the CPU plugin's own tests on
# three emulated CPUs (an ARMv8.0 Cortex-A53 has only the neon set, a
# Neoverse N1 adds dotprod, qemu's max CPU i8mm).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_ARM64_BUILD_DIR:-$root/build-arm64}"

emulator() {
  command -v qemu-aarch64-static || command -v qemu-aarch64 || {
    echo "test-arm64: no qemu-aarch64 (scripts/install-deps.sh arm64 installs it)" >&2
    return 1
  }
}

if [ "${1:-}" = run ]; then
  shift
  if [ $# -eq 0 ]; then
    echo "usage: scripts/test-arm64.sh run PROGRAM [ARGS...]" >&2
    exit 2
  fi
  program="$1"
  shift
  if [[ "$program" != */* ]]; then program="$build/bin/$program"; fi
  if [ ! -f "$program" ]; then
    echo "test-arm64: no program $program (build it with scripts/test-arm64.sh first)" >&2
    exit 2
  fi
  qemu="$(emulator)"
  exec "$qemu" "$program" "$@"
fi
if [ $# -ne 0 ]; then
  echo "usage: scripts/test-arm64.sh [run PROGRAM [ARGS...]]" >&2
  exit 2
fi

"$root/scripts/install-deps.sh" arm64
qemu="$(emulator)"
if [ ! -f "$build/build.ninja" ]; then
  # No benchmarks (Google Benchmark has no arm64 package here); tests are
  # listed when ctest runs, not by running each program at build time.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
    -DBONSAI_BUILD_BENCHMARKS=OFF -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST
fi
cmake --build "$build" --target bonsai_cpu test_cpu test_golden test_conformance test_host \
  bonsai-plugin-check

failed=()
# suite NAME CPU PROGRAM [ARGS...]: one program under the emulator on CPU.
suite() {
  local name="$1" cpu="$2" program="$3"
  shift 3
  echo "## $name (qemu -cpu $cpu)"
  local start=$SECONDS
  if QEMU_CPU="$cpu" "$qemu" "$build/bin/$program" "$@"; then
    echo "## $name: passed in $((SECONDS - start)) s"
  else
    echo "## $name: FAILED" >&2
    failed+=("$name")
  fi
}
brief=(--gtest_brief=1)
suite "kernels, every AArch64 set" max test_cpu "${brief[@]}"
suite "kernels, ARMv8.0 only" cortex-a53 test_cpu "${brief[@]}"
# The golden gates run every set by name (x86-64 sets skip as unsupported).
suite "golden gates" max test_golden "${brief[@]}"
suite "qwen35 gates" max test_host "${brief[@]}" --gtest_filter='Qwen35*'
suite "conformance" max test_conformance "${brief[@]}"
suite "CPU plugin options, dotprod CPU" neoverse-n1 test_conformance "${brief[@]}" \
  --gtest_filter='CpuPlugin.*'
suite "CPU plugin options, ARMv8.0 CPU" cortex-a53 test_conformance "${brief[@]}" \
  --gtest_filter='CpuPlugin.*'
for kernels in reference neon; do
  suite "bonsai-plugin-check kernels=$kernels" max bonsai-plugin-check \
    "$build/lib/bonsai/plugins/libbonsai_cpu.so" --options "kernels=$kernels"
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "test-arm64: failed: ${failed[*]}" >&2
  exit 1
fi
echo "test-arm64: every suite passed"
