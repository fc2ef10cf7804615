#!/usr/bin/env python3
"""The GPU decode targets (issue 67), met or not, from the logs of
gpu-check.sh's `targets` section: one line per target with bonsai's figure,
the goal, mainline llama.cpp's figure on the same file and the ratio where
it ran.

    gpu-targets.py LOGS_DIR [--note TEXT]

The section's steps (each a log in LOGS_DIR, `bonsai bench -o jsonl` or
`llama-bench -o jsonl` rows among other lines):
  targets_<file>            a pp row and a tg row (with --bandwidth)
  targets_<file>_d4096      a tg row at depth (with --bandwidth)
  targets_<file>_parallel   tg rows of 1 and of N sequences ("tgK xN")
  targets_<file>_steps      ppK rows (one step of K tokens, K <= 8) and a tg row
  targets_spec_<name>       "tgN gen" and "tgN gen+draft" rows (bonsai bench -md
                            or --draft-ngram): greedy generation without and
                            with the draft
  targets_load              "warm run to its first token: S s"
  llama_targets_<file>      llama-bench's pp and tg rows
  targets_tune_<file>       `bonsai bench --tune`: the CUDA decode tuner's tables
                            ("decode tune: ..." lines), one per step width
for the files 1.7b_q1_0, 8b_q1_0 and 8b_q2_0 (the tuner's also 27b_q1_0,
whose llama-bench rows are llama_targets_27b_q1_0). After the verdicts comes
the tuner's table: each candidate decode path's time a step beside
llama.cpp's tg rate on the same file. A missing log or row gives
"no figure", never an error: a call that ran out of time still reports
what it measured. The verdicts are "met", "not met" and "no figure" (the
summary of gpu-check.sh marks a failed step by the word FAIL, which these
must not contain).
"""
import json
import os
import re
import sys

# (label, file, kind, goal): kind "tg" / "pp" is a rate that must reach the
# goal; "vs_llama" is the tg rate over llama.cpp's, at least the goal;
# "steps" is the cost of one step of K tokens over one of a single token
# (K x the tg rate / the ppK rate), the worst K, at most the goal; "spec"
# is greedy generation with a draft over without ("x plain"), at least the
# goal; "depth" is the share of the bandwidth limit at 4,096 positions,
# which may trail tg128's by at most the goal (in points); "parallel" is N
# sequences' rate over one's; "load" is seconds to the first token, at most
# the goal.
TARGETS = [
    ("tg, 1.7B Q1_0 (t/s)", "1.7b_q1_0", "tg", 2400),
    ("tg, 8B Q1_0 (t/s)", "8b_q1_0", "tg", 1200),
    ("tg over llama.cpp's, 8B Q1_0", "8b_q1_0", "vs_llama", 3.0),
    ("tg, 8B Q2_0 (t/s)", "8b_q2_0", "tg", 800),
    ("K-token step / one token, 8B Q1_0", "8b_q1_0", "steps", 1.3),
    ("speculative, 1.7B draft of the 8B pair, all kept", "spec_pair", "spec", 1.5),
    ("speculative, prompt lookup on a repeating text", "spec_ngram", "spec", 2.0),
    ("share at depth, 1.7B Q1_0 (points)", "1.7b_q1_0", "depth", 10),
    ("share at depth, 8B Q1_0 (points)", "8b_q1_0", "depth", 10),
    ("share at depth, 8B Q2_0 (points)", "8b_q2_0", "depth", 10),
    ("sequences / one, 8B Q1_0", "8b_q1_0", "parallel", 4.0),
    ("sequences / one, 8B Q2_0", "8b_q2_0", "parallel", 4.0),
    ("warm load to first token, 8B Q1_0 (s)", "8b_q1_0", "load", 1.5),
]


def json_rows(path):
    """The JSON objects of a log, one per line that starts with '{'. A line
    that does not parse (a row cut short when its step ran out of time) is
    left out, with a note on stderr: its target then has no figure."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, encoding="utf-8", errors="replace") as log:
        for number, line in enumerate(log, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as error:
                print(f"gpu-targets.py: {path}:{number}: left out, not a JSON row: {error}",
                      file=sys.stderr)
    return rows


def bonsai_row(rows, kind, parallel=False):
    """The first bonsai row of a kind ("pp" or "tg"): of one sequence, or
    with parallel the one of the most sequences ("tg64 x8")."""
    best = None
    for row in rows:
        test = str(row.get("test", ""))
        if not test.startswith(kind) or test.endswith((" gen", " gen+draft")):
            continue
        sequences = int(test.split(" x")[1]) if " x" in test else 1
        if not parallel:
            if sequences == 1:
                return row
        elif sequences > 1 and (best is None or sequences > best[0]):
            best = (sequences, row)
    return best[1] if best else None


def llama_rate(rows, kind):
    """llama-bench's mean rate of its pp (n_gen 0) or tg (n_prompt 0) row."""
    for row in rows:
        if row.get("n_depth", 0) != 0:
            continue
        if kind == "pp" and row.get("n_gen") == 0 and row.get("n_prompt", 0) > 0:
            return float(row["avg_ts"])
        if kind == "tg" and row.get("n_prompt") == 0 and row.get("n_gen", 0) > 0:
            return float(row["avg_ts"])
    return None


def generation_rows(rows):
    """The "tgN gen" and "tgN gen+draft" rows of a drafted bench, or None."""
    plain = next((r for r in rows if str(r.get("test", "")).endswith(" gen")), None)
    drafted = next((r for r in rows if str(r.get("test", "")).endswith(" gen+draft")), None)
    return (plain, drafted) if plain is not None and drafted is not None else None


def step_costs(rows):
    """(K, cost) of each ppK row with K <= 8, a step of K tokens over one
    single-token step (K x the tg rate / the ppK rate), with the tg row's
    test; ([], None) without a tg row."""
    tg = bonsai_row(rows, "tg")
    if tg is None or float(tg["median_ts"]) <= 0:
        return [], None
    costs = []
    for row in rows:
        test = str(row.get("test", ""))
        if not test.startswith("pp") or " " in test or float(row.get("median_ts", 0)) <= 0:
            continue
        k = int(test[2:])
        if 2 <= k <= 8:
            costs.append((k, k * float(tg["median_ts"]) / float(row["median_ts"])))
    return costs, tg["test"]


def first_token_seconds(path):
    if not os.path.exists(path):
        return None
    prefix = "warm run to its first token:"
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            if line.startswith(prefix):
                return float(line[len(prefix):].split()[0])
    return None


def verdict_of(met):
    return "no figure" if met is None else "met" if met else "not met"


def evaluate(logs):
    """One dict per target: label, test, figure (text), goal (text),
    llama (text), ratio (text) and verdict."""
    results = []
    for label, name, kind, goal in TARGETS:
        out = {"label": label, "test": "", "figure": "-", "goal": "", "llama": "-",
               "ratio": "-", "verdict": "no figure"}
        base = json_rows(os.path.join(logs, f"targets_{name}.log"))
        if kind == "vs_llama":
            out["goal"] = f">= {goal:g}x"
            row = bonsai_row(base, "tg")
            llama = llama_rate(json_rows(os.path.join(logs, f"llama_targets_{name}.log")), "tg")
            if llama is not None:
                out["llama"] = f"{llama:.1f}"
            if row is not None and llama:
                times = float(row["median_ts"]) / llama
                out["test"] = row["test"]
                out["figure"] = f"{float(row['median_ts']):.1f}"
                out["ratio"] = f"{times:.2f}"
                out["verdict"] = verdict_of(times >= goal)
        elif kind == "steps":
            out["goal"] = f"<= {goal:g}x"
            costs, tg_test = step_costs(json_rows(os.path.join(logs, f"targets_{name}_steps.log")))
            if costs:
                k, worst = max(costs, key=lambda c: c[1])
                out["test"] = f"pp{k} / {tg_test}"
                out["figure"] = f"{worst:.2f}x"
                out["verdict"] = verdict_of(worst <= goal)
        elif kind == "spec":
            out["goal"] = f">= {goal:g}x"
            pair = generation_rows(json_rows(os.path.join(logs, f"targets_{name}.log")))
            if pair is not None and float(pair[0]["median_ts"]) > 0:
                times = float(pair[1]["median_ts"]) / float(pair[0]["median_ts"])
                out["test"] = f"{pair[1]['test']} / {pair[0]['test']}"
                out["figure"] = f"{times:.2f}x"
                out["verdict"] = verdict_of(times >= goal)
        elif kind in ("tg", "pp"):
            out["goal"] = f">= {goal:g}"
            row = bonsai_row(base, kind)
            llama = llama_rate(json_rows(os.path.join(logs, f"llama_targets_{name}.log")), kind)
            if llama is not None:
                out["llama"] = f"{llama:.1f}"
            if row is not None:
                rate = float(row["median_ts"])
                out["test"] = row["test"]
                out["figure"] = f"{rate:.1f}"
                out["verdict"] = verdict_of(rate >= goal)
                if llama:
                    out["ratio"] = f"{rate / llama:.2f}"
        elif kind == "depth":
            out["goal"] = f"within {goal:g}"
            short = bonsai_row(base, "tg")
            deep = bonsai_row(json_rows(os.path.join(logs, f"targets_{name}_d4096.log")), "tg")
            if short is not None and deep is not None and "share_of_limit" in short \
                    and "share_of_limit" in deep:
                a, b = 100 * float(short["share_of_limit"]), 100 * float(deep["share_of_limit"])
                out["test"] = f"{short['test']} / {deep['test']}"
                out["figure"] = f"{a:.1f} % / {b:.1f} %"
                out["verdict"] = verdict_of(a - b <= goal)
        elif kind == "parallel":
            out["goal"] = f">= {goal:g}x"
            rows = json_rows(os.path.join(logs, f"targets_{name}_parallel.log"))
            one, many = bonsai_row(rows, "tg"), bonsai_row(rows, "tg", parallel=True)
            if one is not None and many is not None and float(one["median_ts"]) > 0:
                times = float(many["median_ts"]) / float(one["median_ts"])
                out["test"] = f"{many['test']} / {one['test']}"
                out["figure"] = f"{times:.2f}x"
                out["verdict"] = verdict_of(times >= goal)
        else:  # load
            out["goal"] = f"<= {goal:g}"
            seconds = first_token_seconds(os.path.join(logs, "targets_load.log"))
            if seconds is not None:
                out["test"] = "bonsai run -n 1"
                out["figure"] = f"{seconds:.2f}"
                out["verdict"] = verdict_of(seconds <= goal)
        results.append(out)
    return results


# The files the tuner's table covers, in order.
TUNED = ["1.7b_q1_0", "8b_q1_0", "27b_q1_0"]
TUNE_TITLE = re.compile(r"decode tune: steps of (\d+) tokens? on (.*) \((.*)\): (\S+)$")
TUNE_ROW = re.compile(r"decode tune: ([* ]) (\S+) +(-|[0-9.]+)  (passed|failed.*)$")


def tune_tables(path):
    """The tuner's tables in a log: a list of (width, rows, note) where rows
    are (chosen, candidate, microseconds or None, check), and notes the
    tuner's other "decode tune:" lines (why nothing was tuned)."""
    tables, notes = [], []
    if not os.path.exists(path):
        return tables, notes
    with open(path, encoding="utf-8", errors="replace") as log:
        for line in log:
            line = line.rstrip("\n")
            at = line.find("decode tune:")
            if at < 0:
                continue
            line = line[at:]
            title, row = TUNE_TITLE.match(line), TUNE_ROW.match(line)
            if title:
                tables.append((int(title.group(1)), []))
            elif row and tables:
                us = None if row.group(3) == "-" else float(row.group(3))
                tables[-1][1].append((row.group(1) == "*", row.group(2), us, row.group(4)))
            elif "candidate" not in line:
                notes.append(line)
    return tables, notes


def tune_lines(logs):
    """The tuner's table over the TUNED files, or [] when none was tuned
    (no targets_tune_* log)."""
    header = ("file", "tokens/step", "candidate", "us/step", "t/s", "llama.cpp", "ratio", "check")
    rows, notes, any_log = [], [], False
    for name in TUNED:
        path = os.path.join(logs, f"targets_tune_{name}.log")
        any_log = any_log or os.path.exists(path)
        tables, file_notes = tune_tables(path)
        llama = llama_rate(json_rows(os.path.join(logs, f"llama_targets_{name}.log")), "tg")
        for width, table_rows in tables:
            for chosen, candidate, us, check in table_rows:
                rate = width * 1e6 / us if us else None
                # Per token against llama.cpp's one sequence: single tokens only.
                ratio = f"{rate / llama:.2f}" if rate and llama and width == 1 else "-"
                rows.append((name, str(width), ("* " if chosen else "  ") + candidate,
                             f"{us:.1f}" if us is not None else "-",
                             f"{rate:.1f}" if rate else "-",
                             f"{llama:.1f}" if llama else "-", ratio, check))
        if not tables and os.path.exists(path):
            notes += [f"{name}: {n}" for n in file_notes] or [f"{name}: no table in its log"]
        elif not os.path.exists(path):
            notes.append(f"{name}: no figure (no targets_tune_{name} log)")
    if not any_log:
        return []
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    lines = ["decode paths as tuned (bonsai bench --tune: each candidate's device time a step, "
             "CUDA events, median; * chosen; llama.cpp's tg beside)"]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines += notes
    return lines


def table(results):
    columns = [("target", "label"), ("test", "test"), ("bonsai", "figure"), ("goal", "goal"),
               ("llama.cpp", "llama"), ("ratio", "ratio"), ("verdict", "verdict")]
    widths = [max(len(title), *(len(r[key]) for r in results)) for title, key in columns]
    lines = ["  ".join(title.ljust(w) for (title, _), w in zip(columns, widths)).rstrip()]
    for r in results:
        lines.append("  ".join(r[key].ljust(w) for (_, key), w in zip(columns, widths)).rstrip())
    met = sum(r["verdict"] == "met" for r in results)
    lines.append(f"{met} of {len(results)} targets met")
    return "\n".join(lines)


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--note"):
        print("usage: gpu-targets.py LOGS_DIR [--note TEXT]", file=sys.stderr)
        return 2
    if not os.path.isdir(argv[1]):
        print(f"gpu-targets.py: no such folder: {argv[1]}", file=sys.stderr)
        return 2
    results = evaluate(argv[1])
    if len(argv) == 4:
        print(argv[3])
    print(table(results))
    for line in tune_lines(argv[1]):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
