# Sourced by the npm-driven server tests (npm_client_test.sh, schemas/,
# webui/): the checks, the pinned install and the server they share. Skips
# (exit 77, as ctest's SKIP_RETURN_CODE) say why.

# read_args "$@": the arguments every run.sh takes, BONSAI_BIN MODEL.gguf
# WORK_DIR, then any more (a run.sh's own); sets bin, model and work
# (created, absolute) and `more` (an array). Exits 2 otherwise.
read_args() {
  if [[ $# -lt 3 ]]; then
    echo "usage: $0 BONSAI_BIN MODEL.gguf WORK_DIR [...]" >&2
    exit 2
  fi
  bin=$1 model=$2
  mkdir -p "$3"
  work=$(cd "$3" && pwd)
  more=("${@:4}")
}

# Exits 77 unless node and npm are installed.
require_node() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "skipped: node/npm not installed"
    exit 77
  fi
}

# install_pinned SRC_DIR WORK_DIR PACKAGE FILE...: copies package.json,
# package-lock.json and FILEs from SRC_DIR to WORK_DIR and installs the
# locked packages there, again only when the lock file changed (so repeated
# runs need no network); exits 77 when npm cannot install them.
install_pinned() {
  local src=$1 work=$2 package=$3
  shift 3
  cp "$src/package.json" "$src/package-lock.json" "$@" "$work/"
  if [[ ! -d $work/node_modules/$package ]] ||
     ! cmp -s "$work/package-lock.json" "$work/.installed-lock.json"; then
    rm -f "$work/.installed-lock.json"
    if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
      echo "skipped: npm could not install $package"
      exit 77
    fi
    cp "$work/package-lock.json" "$work/.installed-lock.json"
  fi
}

# start_bonsai_serve SERVE_ARGS...: starts `$bin serve -m $model --port 0
# SERVE_ARGS...` in the background (log in $work/server.log), waits for its
# port and for /health (sets $url, http://127.0.0.1:PORT), and stops it on
# exit: SIGTERM, then up to 15 s for running requests before SIGKILL. The
# exit status is $status (set it to the test's); the log is printed when it
# is not 0. Exits 1 when the server does not come up.
start_bonsai_serve() {
  log=$work/server.log
  # Created here, not by the background job's redirection: the port loop
  # below may read it before that job has run (it did once on a loaded CI
  # machine, and set -e ended the test on sed's "can't read").
  : >"$log"
  "$bin" serve -m "$model" --port 0 "$@" >"$log" 2>&1 &
  pid=$!
  status=1
  trap stop_bonsai_serve EXIT
  trap 'exit 1' INT TERM
  local port=
  for _ in $(seq 100); do
    port=$(sed -n 's|^bonsai serve: listening on http://[^ ]*:\([0-9][0-9]*\) .*|\1|p' "$log" |
      head -n1)
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || { echo "server exited before listening" >&2; exit 1; }
    sleep 0.1
  done
  [[ -n $port ]] || { echo "no 'listening on' line within 10 s" >&2; exit 1; }
  # The model loads (/health is 503 until then). Node's fetch, since curl
  # may be missing; stop early if the server dies.
  url=http://127.0.0.1:$port
  if ! node -e '
    const [url, pid] = process.argv.slice(1);
    const end = Date.now() + 60000;
    (async () => {
      for (;;) {
        try { if ((await fetch(url)).status === 200) process.exit(0); } catch {}
        try { process.kill(Number(pid), 0); } catch { process.exit(2); }
        if (Date.now() > end) process.exit(1);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();' "$url/health" "$pid"; then
    echo "server at $url never became healthy" >&2
    exit 1
  fi
}

stop_bonsai_serve() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "server did not stop within 15 s of SIGTERM; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      status=1
    fi
  fi
  wait "$pid" 2>/dev/null || true
  if [[ $status -ne 0 ]]; then
    echo "---- server log ($log) ----" >&2
    cat "$log" >&2 || true
  fi
  exit "$status"
}
