#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a bare GPU machine (no package
# registry, no Boost/spdlog/TBB) into one folder: the programs and test
# binaries of a Release build, the host library and plugins in their build
# layout (bin/, lib/bonsai/plugins/), and every non-system shared library they
# link. The repository's tests/data travels with the checkout.
#
# The folder is also packed, xz-compressed, into ./.gpu-carry (ignored by
# git) with mainline llama.cpp for llama-bench beside bonsai: a llama-bench
# built here for the GPU when $LLAMA_BENCH_BUILD/bin/llama-bench exists (a
# CUDA build with BUILD_SHARED_LIBS=OFF, so one file; it runs at once on
# the device), else, when mainline llama.cpp's source is at $LLAMA_CPP_SRC
# (default /tmp/peers/llama.cpp, see ../shared/peers), the part of it that
# builds llama-bench (the device builds it in the background, which takes
# longer than one call). The checkout plus the carry must stay under the
# device tool's 64 MiB (docs/cuda.md says how).
#
# Usage: scripts/gpu-bundle.sh [DEST]   (default ./.gpu, ignored by git)
# Environment: BONSAI_BUILD_DIR (default ./build; its bundled targets are built first),
# LLAMA_BENCH_BUILD, LLAMA_CPP_SRC. Then one device call, carrying .gpu-carry, from the
# repository root: scripts/gpu-check.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_BUILD_DIR:-$root/build}"
dest="${1:-$root/.gpu}"

if [ -n "${LLAMA_BENCH_BUILD:-}" ] && [ ! -x "$LLAMA_BENCH_BUILD/bin/llama-bench" ]; then
  echo "gpu-bundle: LLAMA_BENCH_BUILD=$LLAMA_BENCH_BUILD has no bin/llama-bench" >&2
  exit 1
fi
programs=(bonsai bonsai-gguf bonsai-plugin-check test_cuda test_conformance test_golden)
# Only what the bundle packs is built: on two cores the whole tree takes
# several times longer.
"$root/scripts/install-deps.sh" >&2
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
targets=("${programs[@]}" bonsai_host bonsai_cpu bonsai_cuda)
# The fake driver exists only in builds without sanitizers.
if cmake --build "$build" --target help | grep -q '^bonsai_fake_cuda:'; then
  targets+=(bonsai_fake_cuda)
fi
cmake --build "$build" --target "${targets[@]}" >&2
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/bonsai/plugins" "$dest/syslib"
for p in "${programs[@]}"; do
  cp "$build/bin/$p" "$dest/bin/"
done
cp -P "$build"/lib/libbonsai_host.so* "$dest/lib/"
cp "$build"/lib/bonsai/plugins/*.so "$dest/lib/bonsai/plugins/"
# The fake driver at its build-tree path: test_cuda's fake-driver tests open
# it there (gpu-check.sh links the original build folder to the bundle).
fake="tests/cuda/fake_driver/libbonsai_fake_cuda.so"
if [ -f "$build/$fake" ]; then
  mkdir -p "$dest/$(dirname "$fake")"
  cp "$build/$fake" "$dest/$fake"
fi

# Shared libraries outside glibc and the compiler runtime (the GPU machine
# has newer ones of those): Boost, spdlog, fmt, oneTBB, PCRE2, utf8proc...
is_system_lib() {
  case "$(basename "$1")" in
  libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | ld-linux* | libstdc++.so* | \
    libgcc_s.so* | linux-vdso*) return 0 ;;
  esac
  return 1
}
for f in "$dest"/bin/* "$dest"/lib/*.so* "$dest"/lib/bonsai/plugins/*.so; do
  ldd "$f" 2>/dev/null | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  if ! is_system_lib "$lib" && [[ "$lib" != "$build"/* ]]; then
    cp -L "$lib" "$dest/syslib/"
  fi
done
strip --strip-unneeded "$dest"/bin/* "$dest"/syslib/* 2>/dev/null || true
echo "gpu-bundle: $(du -sh "$dest" | cut -f1) in $dest ($(ls "$dest/syslib" | wc -l) shared libraries)"

carry="$root/.gpu-carry"
rm -rf "$carry"
mkdir -p "$carry"
tar -C "$(dirname "$dest")" -cJf "$carry/bundle.tar.xz" "$(basename "$dest")"
llama="${LLAMA_CPP_SRC:-/tmp/peers/llama.cpp}"
if [ -n "${LLAMA_BENCH_BUILD:-}" ]; then
  mkdir -p "$carry/bin"
  strip --strip-unneeded -o "$carry/bin/llama-bench" "$LLAMA_BENCH_BUILD/bin/llama-bench"
  tar -C "$carry" -cJf "$carry/llama-bench.tar.xz" bin/llama-bench
  rm -rf "$carry/bin"
elif [ -f "$llama/ggml/include/ggml.h" ]; then
  tar -C "$llama" --exclude=.git --exclude=tools/ui --exclude=tools/server -cJf \
    "$carry/llama.tar.xz" CMakeLists.txt cmake ggml src include common tools vendor app licenses
fi
echo "gpu-bundle: carry $carry ($(du -sh "$carry" | cut -f1): $(ls "$carry" | tr '\n' ' '))"
