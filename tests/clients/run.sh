#!/usr/bin/env bash
# The agent programs people point at a local server, run as their users run
# them against the real `bonsai serve` (docs/server.md, "Agent programs").
# The programs are pinned in package-lock.json beside this file.
#
# usage: run.sh CASE BONSAI_BIN MODEL.gguf WORK_ROOT [SCRIPTED_PLUGIN.so]
#   install          the pinned programs into WORK_ROOT/npm (ctest's fixture)
#   claude_code      `claude -p`, then a second turn (`--continue`) that must
#                    read >= 90 % of its prompt from the prompt cache
#   claude_code_tools, codex_tools, opencode_tools, qwen_code_tools,
#   continue_tools   one tool round trip: the model asks for a tool, the
#                    program runs it, the model answers from its output
#   codex, opencode, qwen_code, continue_openai, continue_ollama
#                    one turn
#   agents           the OpenAI Agents SDK: an agent with a tool and an
#                    output type, on the Responses API and Chat Completions
#   random           every program's turn on the CPU plugin and MODEL's
#                    random weights (replies capped by `-n`): every request
#                    each program makes is answered 200
# Every case but `random` runs the server on SCRIPTED_PLUGIN, a model that
# replies a given text token by token (tests/fake_plugins), so that a turn
# ends and a tool is asked for. The tool's output holds 7315, which nothing
# before it does: the scripted model answers once that number is in its
# prompt, so the answer proves the program ran the tool.
# Exit 77 (ctest: skipped) when node/npm are missing or npm cannot install.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../server/npm_test_setup.sh
source "$here/../server/npm_test_setup.sh"
if [[ $# -lt 4 ]]; then
  echo "usage: $0 CASE BONSAI_BIN MODEL.gguf WORK_ROOT [SCRIPTED_PLUGIN.so]" >&2
  exit 2
fi
case_name=$1 bin=$2 model=$3
mkdir -p "$4"
root=$(cd "$4" && pwd)
plugin=${5:-}
npm_dir=$root/npm
require_node

if [[ $case_name == install ]]; then
  mkdir -p "$npm_dir"
  cp "$here/package.json" "$here/package-lock.json" "$here/agents.mjs" "$npm_dir/"
  # `npm install` with the lock, not `npm ci`: Qwen Code names optional
  # packages that the registry does not have (@teddyzhu/clipboard for other
  # systems), which no lock file can hold and which `npm ci` then calls out
  # of sync. Every package the registry has is installed at its locked
  # version; --no-save leaves the lock as committed.
  if [[ ! -d $npm_dir/node_modules/@anthropic-ai/claude-code ]] ||
     ! cmp -s "$npm_dir/package-lock.json" "$npm_dir/.installed-lock.json"; then
    rm -f "$npm_dir/.installed-lock.json"
    if ! (cd "$npm_dir" && npm install --no-save --no-audit --no-fund --loglevel=error); then
      echo "skipped: npm could not install the agent programs"
      exit 77
    fi
    cp "$npm_dir/package-lock.json" "$npm_dir/.installed-lock.json"
  fi
  echo "installed: $(cd "$npm_dir" && node -e 'const l=require("./package-lock.json");
    console.log(Object.entries(l.packages[""].dependencies).map(([k,v])=>k+"@"+v).join(", "))')"
  exit 0
fi
if [[ ! -d $npm_dir/node_modules/@anthropic-ai/claude-code ]]; then
  echo "skipped: the programs are not installed (run the 'install' case first)"
  exit 77
fi
work=$root/$case_name
rm -rf "$work"
mkdir -p "$work/home" "$work/project"
# Each program runs as a new user would: its own HOME, Node.js 22 from the
# lock first on PATH, no telemetry or update checks (no internet in CI).
export HOME=$work/home PATH=$npm_dir/node_modules/.bin:$PATH
export DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 OPENCODE_DISABLE_AUTOUPDATE=1
key=test-key
marker=$work/project/answer.txt
echo "The answer is 7315." >"$marker"

ids_of() { "$(dirname "$bin")/bonsai-gguf" tokenize "$model" --text "$1"; }
# scripted REPLY [TRIGGER REPLY_AFTER]: the scripted model's replies.
scripted() {
  [[ -n $plugin ]] || { echo "case $case_name needs the scripted plugin" >&2; exit 2; }
  BONSAI_FAKE_SCRIPT=$(ids_of "$1")
  export BONSAI_FAKE_SCRIPT
  if [[ $# -ge 3 ]]; then
    BONSAI_FAKE_SCRIPT_WHEN="$(ids_of "$2")/$(ids_of "$3")"
    export BONSAI_FAKE_SCRIPT_WHEN
  fi
}
# A tool call as Qwen3 writes one.
call() { printf '<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call><|im_end|>' "$1" "$2"; }
serve_scripted() {
  start_bonsai_serve --backend "$plugin" --parallel 2 -c 32768 --api-key "$key" --log-level debug
}

fail() {
  echo "FAIL ($case_name): $*" >&2
  exit 1
}
# run_program NAME CMD...: runs it in the project folder (output in
# $work/NAME.out, printed), within 240 s; its exit status in $rc.
run_program() {
  local name=$1
  shift
  echo "## $name: $*"
  set +e
  (cd "$work/project" && timeout 240 "$@") >"$work/$name.out" 2>&1 </dev/null
  rc=$?
  set -e
  sed 's/^/  | /' "$work/$name.out" | tail -n 40
  echo "## $name: exit $rc"
}
expect_exit_0() { [[ $rc -eq 0 ]] || fail "$1 exited $rc"; }
expect_output() { grep -qF -- "$2" "$work/$1.out" || fail "$1 did not print '$2'"; }
# Every POST the programs made was answered 2xx (a probe such as Claude
# Code's HEAD /api/hello may get a 404).
expect_no_api_error() {
  local posts bad
  posts=$(grep -c ' POST /' "$log" || true)
  bad=$(grep -E ' POST /[^ ]* -> [^2]' "$log" || true)
  [[ $posts -gt 0 ]] || fail "no request reached the server"
  [[ -z $bad ]] || fail "requests answered with an error: $bad"
  echo "server: $posts POST requests, all answered 2xx"
}
metric() { curl_get "$url/metrics" | sed -n "s/^$1 //p"; }
curl_get() { node -e 'fetch(process.argv[1]).then(r=>r.text()).then(t=>process.stdout.write(t))' "$1"; }

claude() {
  ANTHROPIC_BASE_URL=$url ANTHROPIC_API_KEY=$key run_program "$1" claude -p "${@:2}"
}
codex_config() {
  mkdir -p "$HOME/.codex"
  cat >"$HOME/.codex/config.toml" <<EOF
model = "$(basename "$model" .gguf)"
model_provider = "bonsai"
model_reasoning_summary = "auto"
[model_providers.bonsai]
name = "bonsai serve"
base_url = "$url/v1"
wire_api = "responses"
env_key = "BONSAI_API_KEY"
EOF
}
codex() {
  BONSAI_API_KEY=$key run_program "$1" codex exec --skip-git-repo-check "${@:2}"
}
opencode_config() {
  cat >"$work/project/opencode.json" <<EOF
{
  "\$schema": "https://opencode.ai/config.json",
  "provider": {
    "bonsai": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "bonsai serve",
      "options": { "baseURL": "$url/v1", "apiKey": "$key" },
      "models": { "bonsai": { "name": "bonsai" } }
    }
  },
  "model": "bonsai/bonsai"
}
EOF
}
qwen() {
  OPENAI_BASE_URL=$url/v1 OPENAI_API_KEY=$key OPENAI_MODEL=bonsai run_program "$1" qwen -p "${@:2}"
}
# continue_config PROVIDER: the Continue CLI's config with one model.
continue_config() {
  local base=$url/v1
  [[ $1 == ollama ]] && base=$url
  cat >"$work/continue.yaml" <<EOF
name: bonsai
version: 1.0.0
schema: v1
models:
  - name: bonsai
    provider: $1
    model: bonsai
    apiBase: $base
    apiKey: $key
    roles: [chat, edit, apply]
EOF
}
cn() { run_program "$1" cn -p "${@:2}" --config "$work/continue.yaml"; }

hello='Hello from bonsai.'
answer='The answer is 7315.'
case $case_name in
claude_code)
  scripted "$hello<|im_end|>"
  serve_scripted
  claude turn1 "Say hi"
  expect_exit_0 turn1
  expect_output turn1 "$hello"
  prompt1=$(metric bonsai_prompt_tokens_total) cached1=$(metric bonsai_prompt_tokens_cached_total)
  claude turn2 --continue "Say it again"
  expect_exit_0 turn2
  expect_output turn2 "$hello"
  prompt=$(($(metric bonsai_prompt_tokens_total) - prompt1))
  cached=$(($(metric bonsai_prompt_tokens_cached_total) - cached1))
  echo "second turn: $cached of $prompt prompt tokens read from the cache"
  ((prompt > 0 && cached * 10 >= prompt * 9)) ||
    fail "the second turn read $cached of $prompt prompt tokens from the cache (< 90 %)"
  # A new session shares the system prompt and the tools (about 80 % of
  # this prompt; the user's words and the environment block after them
  # differ), but its first system block, the billing header, differs too:
  # left out, what is shared is read from the cache (kept in, nothing is).
  prompt2=$(metric bonsai_prompt_tokens_total) cached2=$(metric bonsai_prompt_tokens_cached_total)
  claude session2 "Say hello"
  expect_exit_0 session2
  prompt=$(($(metric bonsai_prompt_tokens_total) - prompt2))
  cached=$(($(metric bonsai_prompt_tokens_cached_total) - cached2))
  echo "a new session: $cached of $prompt prompt tokens read from the cache"
  ((prompt > 0 && cached * 4 >= prompt * 3)) ||
    fail "a new session read $cached of $prompt prompt tokens from the cache (< 75 %)"
  ;;
claude_code_tools)
  scripted "$(call Bash '{"command": "expr 2131 + 5184", "description": "Add the numbers"}')" \
    7315 "$answer<|im_end|>"
  serve_scripted
  claude tools "Add 2131 and 5184 in the shell" --allowedTools "Bash(expr:*)" --max-turns 4
  expect_exit_0 tools
  expect_output tools "$answer"
  ;;
codex)
  scripted "$hello<|im_end|>"
  serve_scripted
  codex_config
  codex turn "Say hi"
  expect_exit_0 turn
  expect_output turn "$hello"
  ;;
codex_tools)
  scripted "$(call exec_command '{"cmd": "expr 2131 + 5184"}')" 7315 "$answer<|im_end|>"
  serve_scripted
  codex_config
  codex tools --dangerously-bypass-approvals-and-sandbox "Add 2131 and 5184 in the shell"
  expect_exit_0 tools
  expect_output tools "$answer"
  ;;
agents)
  scripted "$(call get_weather '{"city": "Paris"}')" '<tool_response>' \
    '{"city": "Paris", "temperature": 18}<|im_end|>'
  serve_scripted
  for api in responses chat; do
    BONSAI_URL=$url/v1 BONSAI_API_KEY=$key BONSAI_MODEL_ID=bonsai \
      run_program "agents_$api" node "$npm_dir/agents.mjs" "$api"
    expect_exit_0 "agents_$api"
  done
  ;;
opencode)
  scripted "$hello<|im_end|>"
  serve_scripted
  opencode_config
  run_program turn opencode run "Say hi"
  expect_exit_0 turn
  expect_output turn "$hello"
  ;;
opencode_tools)
  scripted "$(call read "{\"filePath\": \"$marker\"}")" 7315 "$answer<|im_end|>"
  serve_scripted
  opencode_config
  run_program tools opencode run "What does answer.txt say?"
  expect_exit_0 tools
  expect_output tools "$answer"
  ;;
qwen_code)
  scripted "$hello<|im_end|>"
  serve_scripted
  qwen turn "Say hi"
  expect_exit_0 turn
  expect_output turn "$hello"
  ;;
qwen_code_tools)
  scripted "$(call read_file "{\"file_path\": \"$marker\"}")" 7315 "$answer<|im_end|>"
  serve_scripted
  qwen tools "What does answer.txt say?"
  expect_exit_0 tools
  expect_output tools "$answer"
  ;;
continue_openai | continue_ollama)
  scripted "$hello<|im_end|>"
  serve_scripted
  continue_config "${case_name#continue_}"
  cn turn "Say hi"
  expect_exit_0 turn
  expect_output turn "$hello"
  ;;
continue_tools)
  scripted "$(call Read "{\"filepath\": \"$marker\"}")" 7315 "$answer<|im_end|>"
  serve_scripted
  continue_config openai
  cn tools "What does answer.txt say?"
  expect_exit_0 tools
  expect_output tools "$answer"
  ;;
random)
  # Random weights write no end of turn: replies end at -n with the API's
  # "length", which Claude Code and Codex report as an output limit. The
  # check is the server's side: every request of every program answered.
  start_bonsai_serve --parallel 1 -c 32768 -n 16 --api-key "$key" --log-level info
  codex_config
  opencode_config
  continue_config openai
  claude claude "Say hi" || true
  codex codex "Say hi" || true
  run_program opencode opencode run "Say hi"
  qwen qwen "Say hi"
  cn continue "Say hi"
  for program in claude codex opencode qwen continue; do
    grep -qiE 'API Error: [45][0-9][0-9]|status code [45][0-9][0-9]|40[0-9] Bad Request' \
      "$work/$program.out" && fail "$program reported an API error"
  done
  ;;
*)
  echo "unknown case '$case_name'" >&2
  exit 2
  ;;
esac
expect_no_api_error
status=0
echo "PASS: $case_name"
