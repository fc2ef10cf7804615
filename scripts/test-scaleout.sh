#!/usr/bin/env bash
# The scale-out test (docs/deploy.md, "What is tested"): three `bonsai serve`
# replicas, each in its own network namespace, behind Debian's HAProxy and
# scraped by Debian's Prometheus, under streaming load: a rolling restart, a
# SIGTERM without a drain, a SIGKILL and an overload, with every figure
# printed (scripts/scaleout/scaleout.py).
#   scripts/test-scaleout.sh      uses $BONSAI_BUILD_DIR (default ./build)/bin/bonsai
# Needs root for `ip netns`; without it (or where namespaces cannot be made)
# it says why and exits 77, which CI and ctest count as skipped.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_BUILD_DIR:-$root/build}"
skip() {
  echo "test-scaleout: skipped: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root (ip netns)"
"$root/scripts/install-deps.sh" scaleout
probe="bonsai-so-probe-$$"
ip netns add "$probe" 2>/dev/null || skip "this machine does not allow network namespaces (ip netns add failed)"
ip netns del "$probe"
bonsai="$build/bin/bonsai"
if [ ! -x "$bonsai" ]; then
  echo "test-scaleout: $bonsai is missing; build it first (scripts/build.sh, or cmake --build $build --target bonsai)" >&2
  exit 2
fi
work="$(mktemp -d /tmp/bonsai-scaleout.XXXXXX)"
keep_logs() { echo "test-scaleout: logs kept in $work"; }
trap keep_logs EXIT
python3 "$root/scripts/scaleout/scaleout.py" --bonsai "$bonsai" \
  --model "$root/tests/data/tiny-q1.gguf" --work "$work" "$@"
trap - EXIT
rm -rf "$work"
