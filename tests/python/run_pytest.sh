#!/usr/bin/env bash
# ctest python.pytest (python/CMakeLists.txt): the Python package as a user
# gets it, with Debian 12's python3 and nothing from an index.
#   1. a venv (/usr/bin/python3 -m venv --system-site-packages) under the build
#      tree, the package pip-installed into it from this build tree;
#   2. a wheel (pip wheel), checked to hold libbonsai_host and the CPU plugin
#      and to be platform-specific, then installed alone into a second venv
#      without the system's packages, where it must run;
#   3. a missing build tree must stop the build with a clear error;
#   4. pytest (tests/python) from the first venv.
# Exits 77 ("skipped: ...") when /usr/bin/python3, its venv module or pytest is
# missing, or when told to skip (a sanitizer build).
#
#   run_pytest.sh BUILD_DIR SOURCE_DIR HOST_LIBRARY CPU_PLUGIN [PROGRAM] [VERSION] [SKIP_REASON]
set -euo pipefail

build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
host_library=$3
cpu_plugin=$4
program=${5:-}
version=${6:-}
skip_reason=${7:-}
python=/usr/bin/python3

skip() {
  echo "skipped: $*"
  exit 77
}

[ -z "$skip_reason" ] || skip "$skip_reason"
[ -x "$python" ] || skip "$python is missing (apt-get install python3)"
"$python" -c 'import venv, ensurepip' 2>/dev/null ||
  skip "$python cannot make a venv with pip (apt-get install python3-venv)"
"$python" -c 'import pytest' 2>/dev/null || skip "pytest is missing (apt-get install python3-pytest)"
"$python" -c 'import setuptools, wheel' 2>/dev/null ||
  skip "setuptools or wheel is missing (apt-get install python3-setuptools python3-wheel)"
for file in "$host_library" "$cpu_plugin"; do
  if [ ! -f "$file" ]; then
    echo "error: $file is not built; build it first: cmake --build $build --target bonsai_host bonsai_cpu" >&2
    exit 1
  fi
done

work=$build/python-test
rm -rf "$work"
mkdir -p "$work"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1
# The package must find its own copy of the libraries, whatever the caller set.
unset BONSAI_LIBRARY BONSAI_PLUGIN_PATH PYTHONPATH

step() { echo "== $*"; }

step "venv $work/venv, package installed from the build tree"
"$python" -m venv --system-site-packages "$work/venv"
BONSAI_BUILD_DIR=$build "$work/venv/bin/pip" install --no-build-isolation --no-index -q \
  "$source/python"

step "wheel"
BONSAI_BUILD_DIR=$build "$work/venv/bin/pip" wheel --no-build-isolation --no-index --no-deps -q \
  -w "$work/dist" "$source/python"
wheels=("$work"/dist/*.whl)
[ ${#wheels[@]} -eq 1 ] || { echo "error: expected one wheel, got ${wheels[*]}" >&2; exit 1; }
"$python" - "${wheels[0]}" <<'EOF'
import sys, zipfile
path = sys.argv[1]
names = set(zipfile.ZipFile(path).namelist())
wanted = {"bonsai_lm/__init__.py", "bonsai_lm/_libs/libbonsai_host.so",
          "bonsai_lm/_libs/bonsai/plugins/libbonsai_cpu.so", "bonsai_lm/py.typed"}
# The distribution is bonsai-lm (the name `bonsai` belongs to an LDAP client).
assert path.rsplit("/", 1)[-1].startswith("bonsai_lm-"), path
missing = wanted - names
assert not missing, f"{path} lacks {sorted(missing)}"
wheel_file = next(n for n in names if n.endswith(".dist-info/WHEEL"))
meta = zipfile.ZipFile(path).read(wheel_file).decode()
assert "Root-Is-Purelib: false" in meta, meta
assert "-any.whl" not in path and "-none-any" not in meta, f"{path} is marked pure:\n{meta}"
print(f"{path.rsplit('/', 1)[-1]}: {len(names)} files, libraries bundled, platform-specific")
EOF

step "the wheel alone, in a venv without the system's packages"
"$python" -m venv "$work/wheel-venv"
"$work/wheel-venv/bin/pip" install --no-index -q "${wheels[0]}"
(cd "$work" && "$work/wheel-venv/bin/python" - "$source/tests/data/tiny-q1.gguf" <<'EOF'
import sys
from pathlib import Path
import bonsai_lm
assert Path(bonsai_lm.library_path()).is_relative_to(Path(sys.prefix)), bonsai_lm.library_path()
with bonsai_lm.Bonsai(sys.argv[1], backend="cpu", n_ctx=64) as llm:
    reply = llm.create_completion("Hello", max_tokens=4, temperature=0)
    assert reply["usage"]["completion_tokens"] == 4, reply
    print(f"wheel install: {bonsai_lm.library_path()} generates on {llm.backend!r}")
EOF
)

step "a missing build tree is a clear error"
if BONSAI_BUILD_DIR=$work/no-such-build "$work/venv/bin/pip" wheel --no-build-isolation \
  --no-index --no-deps -q -w "$work/dist-none" "$source/python" >"$work/missing.log" 2>&1; then
  echo "error: a wheel was built without a build tree" >&2
  exit 1
fi
grep -q "bonsai: no build tree at $work/no-such-build" "$work/missing.log" ||
  { cat "$work/missing.log" >&2; echo "error: no clear message for a missing build tree" >&2; exit 1; }
echo "refused: $(grep -o 'bonsai: no build tree at [^;]*' "$work/missing.log" | head -1)"

step "pytest"
cd "$work"
BONSAI_EXPECT_BUNDLED=1 BONSAI_EXPECT_VERSION=$version BONSAI_PROGRAM=$program \
  BONSAI_TEST_DATA_DIR=$source/tests/data \
  "$work/venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$source/tests/python"
