#!/usr/bin/env bash
# sdk_test.sh BUILD_DIR SOURCE_DIR: installs BUILD_DIR into a temporary
# prefix, builds examples/plugin-minimal, examples/embed and examples/embed-c
# out of tree against it, and checks what each produces.
set -euo pipefail
build="$1"
source="$2"
work="$(mktemp -d "${TMPDIR:-/tmp}/bonsai-sdk-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
data="$source/tests/data"
step() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

step "install into $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for f in include/bonsai/bonsai_backend.h include/bonsai/engine.hpp include/bonsai/bonsai.h \
  include/bonsai/core/error.hpp lib/libbonsai_host.so lib/bonsai/plugins/libbonsai_cpu.so \
  bin/bonsai bin/bonsai-gguf bin/bonsai-plugin-check share/bonsai/tiny-q1.gguf \
  share/bonsai/qwen3-vocab.gguf lib/cmake/bonsai/bonsaiConfig.cmake lib/pkgconfig/bonsai.pc; do
  [[ -e "$prefix/$f" ]] || fail "the install lacks $f"
done
soname="$(readelf -d "$prefix/lib/libbonsai_host.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')"
[[ "$soname" =~ ^libbonsai_host\.so\.[0-9]+$ ]] || fail "libbonsai_host SONAME is '$soname'"

step "the installed bonsai finds its plugins without environment variables"
backends="$(env -u BONSAI_PLUGIN_PATH "$prefix/bin/bonsai" backends)"
grep -q "path: *$prefix/lib/bonsai/plugins/libbonsai_cpu.so" <<<"$backends" ||
  fail "bonsai backends does not list the installed CPU plugin: $backends"

# Out-of-tree builds, as a third party would do them.
flags="${BONSAI_SDK_SANITIZE_FLAGS:-}"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
build_example() {
  step "build examples/$1 out of tree"
  cmake -S "$source/examples/$1" -B "$work/$1" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
    -DCMAKE_MODULE_LINKER_FLAGS="$flags" >"$work/$1.configure.log" ||
    { cat "$work/$1.configure.log"; fail "configuring examples/$1"; }
  cmake --build "$work/$1" || fail "building examples/$1"
}
build_example plugin-minimal
build_example embed
build_example embed-c
example_plugin="$work/plugin-minimal/libbonsai_example.so"

step "bonsai-plugin-check on the example plugin (exact tolerances, golden models)"
"$prefix/bin/bonsai-plugin-check" "$example_plugin" --exact | tee "$work/check-example.log"
grep -q "^PASS  golden tiny-q2" "$work/check-example.log" || fail "the golden checks did not run"
grep -q "^PASS  golden tiny-q35-q1" "$work/check-example.log" ||
  fail "the qwen35 golden model did not pass through the host's layers"

step "bonsai-plugin-check on the installed CPU plugin"
"$prefix/bin/bonsai-plugin-check" "$prefix/lib/bonsai/plugins/libbonsai_cpu.so" \
  --options kernels=reference
if [[ -e "$prefix/lib/bonsai/plugins/libbonsai_cuda.so" ]]; then
  step "bonsai-plugin-check on the installed CUDA plugin (77 = no device here)"
  status=0
  "$prefix/bin/bonsai-plugin-check" "$prefix/lib/bonsai/plugins/libbonsai_cuda.so" || status=$?
  [[ $status == 0 || $status == 77 ]] || fail "the CUDA plugin check exited with $status"
fi

step "the example plugin's greedy ids equal the golden reference (bonsai eval)"
golden_ids() { python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))[sys.argv[2]])))" "$data/tiny-q1.ref.greedy.json" "$1"; }
got="$("$prefix/bin/bonsai" eval -m "$data/tiny-q1.gguf" --backend "$example_plugin" \
  --tokens "$(golden_ids prompt)" --greedy 24)"
[[ "$got" == "$(golden_ids greedy)" ]] || fail "greedy ids $got differ from $(golden_ids greedy)"
echo "$got"

step "the embedding examples (C++ and C) on tiny-q1"
for program in embed/embed embed-c/embed-c; do
  "$work/$program" "$data/tiny-q1.gguf" cpu | tee "$work/run.log"
  grep -q "^\[stop: length\] prompt" "$work/run.log" || fail "$program: no streamed completion"
  grep -q "^\[stop: cancelled\]" "$work/run.log" || fail "$program: the second run was not cancelled"
done
grep -qE "^\[chat\] [0-9]+ tokens, mean logprob -" "$work/run.log" ||
  fail "embed-c: no chat turn with log probabilities"
"$work/embed/embed" "$data/tiny-q1.gguf" "$example_plugin" >"$work/run.log" ||
  fail "embed with the example plugin"

step "pkg-config: the C example with plain cc"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs bonsai >"$work/pc.flags"
${CC:-cc} $flags -o "$work/embed-c-pc" "$source/examples/embed-c/main.c" $(cat "$work/pc.flags") \
  -Wl,-rpath,"$prefix/lib" -lpthread
"$work/embed-c-pc" "$data/tiny-q1.gguf" cpu >/dev/null || fail "the pkg-config build does not run"

echo "sdk test: all passed"
