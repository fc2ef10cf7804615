#!/usr/bin/env bash
# Builds deploy/Dockerfile (unchanged) with Debian's podman and runs the image
# as a replica would run (docs/deploy.md, "Container image"):
#  1. debian:12 and debian:12-slim, the Dockerfile's bases, made with
#     debootstrap (no image registry is reachable here; Debian's mirror is);
#  2. the image built from the repository (a Release build inside it);
#  3. two containers, read-only, as the image's unprivileged user, serving a
#     model mounted read-only; each answers /health and a completion;
#  4. drain: SIGTERM (`podman stop`) while a stream runs: /health is 503 at
#     once, the stream ends whole, the container exits 0;
#  5. kill: SIGKILL of the other one: it is gone, its port refuses.
# Needs root, podman, runc, debootstrap and python3 (install-deps.sh
# container); says "skipped" and exits 77 where the container engine cannot
# run. Not in CI: the build inside the image is a full Release build.
# usage: scripts/test-container.sh [WORK_DIR]   (default /tmp/bonsai-container)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/tmp/bonsai-container}"
mkdir -p "$work"
skip() {
  echo "skipped: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "podman needs root here (rootless needs subuids this machine lacks)"
"$root/scripts/install-deps.sh" container
# The flags this kind of machine needs (docs/deploy.md): vfs storage, runc
# (crun refuses hybrid cgroups), cgroupfs, and limits given explicitly.
pm=(podman --storage-driver vfs --runtime runc --cgroup-manager cgroupfs)
limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
probe_image=localhost/bonsai-probe:latest
if ! "${pm[@]}" image exists docker.io/library/debian:12; then
  echo "## debian:12 made with debootstrap"
  rootfs="$work/rootfs"
  rm -rf "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    skip "debootstrap could not reach Debian's mirror (see $work/debootstrap.log)"
  tar -C "$rootfs" -c . | "${pm[@]}" import - docker.io/library/debian:12 >/dev/null
  "${pm[@]}" tag docker.io/library/debian:12 docker.io/library/debian:12-slim
  rm -rf "$rootfs"
fi
"${pm[@]}" tag docker.io/library/debian:12 "$probe_image"
if ! "${pm[@]}" run --rm --network host "${limits[@]}" --read-only --user 10001 "$probe_image" true; then
  skip "podman cannot run a container on this machine"
fi

echo "## the image, from deploy/Dockerfile"
start=$SECONDS
"${pm[@]}" build --pull=never --network host "${limits[@]}" -f "$root/deploy/Dockerfile" \
  -t localhost/bonsai:test "$root" >"$work/build.log" 2>&1 || {
  tail -n 40 "$work/build.log"
  echo "FAIL: the image did not build (log: $work/build.log)"
  exit 1
}
echo "built in $((SECONDS - start)) s: $("${pm[@]}" image inspect localhost/bonsai:test --format '{{.Size}}') bytes"

# The model: the tiny shape over the real vocabulary, world-readable.
mkdir -p "$work/models"
bin="${BONSAI_BUILD_DIR:-$root/build}/bin"
"$bin/bonsai-gguf" make-model --vocab "$root/tests/data/qwen3-vocab.gguf" --preset tiny \
  --seed 5 -o "$work/models/model.gguf" >/dev/null
chmod -R a+rX "$work/models"

ports=(18181 18182)
names=(bonsai-a bonsai-b)
cleanup() { "${pm[@]}" rm -f "${names[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
for i in 0 1; do
  # The image's own user (10001), a read-only root, the model read-only.
  "${pm[@]}" run -d --name "${names[$i]}" --network host "${limits[@]}" --read-only \
    -v "$work/models:/models:ro" localhost/bonsai:test \
    -m /models/model.gguf --host 127.0.0.1 --port "${ports[$i]}" --parallel 2 \
    --shutdown-grace 20 >/dev/null
done
python3 - "${ports[@]}" <<'EOF'
import json, sys, time, urllib.request
for port in sys.argv[1:]:
    end = time.time() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    break
        except Exception:
            pass
        if time.time() > end:
            sys.exit(f"FAIL: the container on port {port} never became healthy")
        time.sleep(0.2)
    body = json.dumps({"prompt": "Hello", "max_tokens": 8}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        reply = json.load(r)
    assert reply["usage"]["completion_tokens"] == 8, reply
    print(f"container on port {port}: healthy, a completion of 8 tokens")
EOF
for name in "${names[@]}"; do
  pid=$("${pm[@]}" inspect --format '{{.State.Pid}}' "$name")
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
  [ "$uid" = 10001 ] || { echo "FAIL: $name runs as uid $uid, not 10001"; exit 1; }
  ro=$("${pm[@]}" inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$name")
  [ "$ro" = true ] || { echo "FAIL: $name's root is not read-only"; exit 1; }
done
echo "both run as uid 10001 with a read-only root"

# A stream long enough to be running when the signal comes.
stream_check() { # PORT STOP_COMMAND... : streams, runs the command mid-way, reports
  python3 - "$@" <<'EOF'
import json, subprocess, sys, threading, time, urllib.request
port, command = sys.argv[1], sys.argv[2:]
body = json.dumps({"prompt": "Count", "max_tokens": 3000, "ignore_eos": True, "stream": True,
                   "stream_options": {"include_usage": True}}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                             {"Content-Type": "application/json"})
result = {"tokens": None, "done": False, "error": None}
def read():
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            for line in r:
                line = line.decode().strip()
                if line == "data: [DONE]":
                    result["done"] = True
                elif line.startswith("data: "):
                    chunk = json.loads(line[6:])
                    if chunk.get("usage"):
                        result["tokens"] = chunk["usage"]["completion_tokens"]
    except Exception as e:
        result["error"] = repr(e)
reader = threading.Thread(target=read)
reader.start()
time.sleep(0.5)
signal_at = time.time()
stopper = subprocess.Popen(command, stdout=subprocess.DEVNULL)
health_503 = None
while time.time() - signal_at < 5:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
    except urllib.error.HTTPError as e:
        if e.code == 503:
            health_503 = time.time() - signal_at
            break
    except Exception:
        break  # refused: the process is gone
    time.sleep(0.02)
reader.join()
code = stopper.wait()
print(json.dumps({"stream_tokens": result["tokens"], "stream_done": result["done"],
                  "stream_error": result["error"], "health_503_after_s": health_503,
                  "stop_command_exit": code}))
EOF
}
echo "## drain: SIGTERM while a stream runs"
drain=$(stream_check "${ports[0]}" "${pm[@]}" stop -t 30 "${names[0]}")
echo "$drain"
exit_code=$("${pm[@]}" inspect --format '{{.State.ExitCode}}' "${names[0]}")
python3 - "$drain" "$exit_code" <<'EOF'
import json, sys
d, code = json.loads(sys.argv[1]), int(sys.argv[2])
assert d["health_503_after_s"] is not None and d["health_503_after_s"] < 1.0, d
assert d["stream_done"] and d["stream_tokens"] == 3000 and d["stream_error"] is None, d
assert code == 0, f"the drained container exited {code}"
print(f"drained: /health 503 after {d['health_503_after_s'] * 1000:.0f} ms, the stream ended whole "
      f"({d['stream_tokens']} tokens), exit 0")
EOF
echo "## kill: SIGKILL while a stream runs"
kill_result=$(stream_check "${ports[1]}" "${pm[@]}" kill -s KILL "${names[1]}")
echo "$kill_result"
state=$("${pm[@]}" inspect --format '{{.State.Status}}' "${names[1]}")
python3 - "$kill_result" "$state" "${ports[1]}" <<'EOF'
import json, sys, urllib.request
d, state, port = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
assert state in ("exited", "stopped"), state
try:
    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
    sys.exit("FAIL: the killed container still answers")
except urllib.error.URLError:
    pass
print(f"killed: the container is {state}, its port refuses; its running stream was cut "
      f"(done={d['stream_done']})")
EOF
echo "PASS: the image built and ran as a replica does"
