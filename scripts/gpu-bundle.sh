#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on a bare GPU machine (no package
# registry, no Boost/spdlog/TBB) into one folder: the programs and test
# binaries of a Release build, the host library and plugins in their build
# layout (bin/, lib/bonsai/plugins/), and every non-system shared library they
# link. The repository's tests/data travels with the checkout.
#
# Usage: scripts/gpu-bundle.sh [DEST]   (default ./.gpu, ignored by git)
# Environment: BONSAI_BUILD_DIR (default ./build; built first if needed).
# Then, on the GPU machine from the repository root: scripts/gpu-check.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_BUILD_DIR:-$root/build}"
dest="${1:-$root/.gpu}"

BONSAI_BUILD_DIR="$build" "$root/scripts/build.sh" >&2

programs=(bonsai bonsai-gguf bonsai-plugin-check test_cuda test_conformance test_golden)
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/bonsai/plugins" "$dest/syslib"
for p in "${programs[@]}"; do
  cp "$build/bin/$p" "$dest/bin/"
done
cp -P "$build"/lib/libbonsai_host.so* "$dest/lib/"
cp "$build"/lib/bonsai/plugins/*.so "$dest/lib/bonsai/plugins/"
if [ -f "$build/tests/cuda/fake_driver/libbonsai_fake_cuda.so" ]; then
  cp "$build/tests/cuda/fake_driver/libbonsai_fake_cuda.so" "$dest/lib/"
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
