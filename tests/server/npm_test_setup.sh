# Sourced by the run.sh of the npm-driven server tests (openai/, webui/):
# the checks and the pinned install they share. Skips (exit 77, as ctest's
# SKIP_RETURN_CODE) say why.

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
