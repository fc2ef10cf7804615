#!/usr/bin/env bash
# expect_exit.sh STATUS PATTERN COMMAND...: runs COMMAND and passes when it
# exits with STATUS and its output (stdout and stderr) matches PATTERN.
status="$1"
pattern="$2"
shift 2
output="$("$@" 2>&1)"
got=$?
printf '%s\n' "$output"
[[ $got == "$status" ]] || { echo "FAIL: exit status $got, expected $status"; exit 1; }
grep -Eq -- "$pattern" <<<"$output" || { echo "FAIL: the output lacks /$pattern/"; exit 1; }
