#!/usr/bin/env python3
"""scripts/gpu-targets.py against logs written here by hand: each verdict
and ratio below is worked out from the rows the test writes, not from the
script. Run by ctest (scripts.gpu_targets)."""
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "gpu-targets.py")
spec = importlib.util.spec_from_file_location("gpu_targets", SCRIPT)
gpu_targets = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_targets)


def bonsai(test, median, share=None):
    row = {"model": "m.gguf", "backend": "cuda", "test": test, "avg_ts": median + 1,
           "median_ts": median}
    if share is not None:
        row["share_of_limit"] = share
    return json.dumps(row)


def llama(n_prompt, n_gen, avg, depth=0):
    return json.dumps({"model_type": "qwen3 8B Q1_0", "n_prompt": n_prompt, "n_gen": n_gen,
                       "n_depth": depth, "avg_ts": avg})


class GpuTargets(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.logs = self.dir.name

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, *lines):
        with open(os.path.join(self.logs, name + ".log"), "w", encoding="utf-8") as f:
            f.write("=== a step's command line\nbonsai bench: test 1 of 2\n")
            f.write("\n".join(lines) + "\n")

    def results(self):
        return {r["label"]: r for r in gpu_targets.evaluate(self.logs)}

    def test_rates_meet_their_goals_at_or_above_them_with_llama_beside(self):
        self.write("targets_8b_q1_0", bonsai("pp512", 19999.9), bonsai("tg128", 1200.0, 0.43))
        self.write("llama_targets_8b_q1_0", llama(512, 0, 9397.0), llama(0, 128, 400.0))
        self.write("targets_1.7b_q1_0", bonsai("pp512", 50000.0), bonsai("tg128", 2399.5, 0.2))
        r = self.results()
        tg = r["tg, 8B Q1_0 (t/s)"]
        self.assertEqual((tg["figure"], tg["verdict"]), ("1200.0", "met"))  # the goal itself
        self.assertEqual((tg["llama"], tg["ratio"]), ("400.0", "3.00"))  # 1200 / 400
        self.assertEqual(tg["test"], "tg128")  # not the pp row
        times = r["tg over llama.cpp's, 8B Q1_0"]
        self.assertEqual((times["figure"], times["ratio"], times["goal"], times["verdict"]),
                         ("1200.0", "3.00", ">= 3x", "met"))
        small = r["tg, 1.7B Q1_0 (t/s)"]
        self.assertEqual((small["verdict"], small["llama"], small["ratio"]),
                         ("not met", "-", "-"))  # 2399.5 < 2400; no llama.cpp log for it

    def test_against_llama_below_three_times_is_not_met_and_without_it_no_figure(self):
        self.write("targets_8b_q1_0", bonsai("tg128", 1199.0))
        self.write("llama_targets_8b_q1_0", llama(0, 128, 400.0))
        self.assertEqual(self.results()["tg over llama.cpp's, 8B Q1_0"]["verdict"],
                         "not met")  # 2.9975
        os.remove(os.path.join(self.logs, "llama_targets_8b_q1_0.log"))
        self.assertEqual(self.results()["tg over llama.cpp's, 8B Q1_0"]["verdict"], "no figure")

    def test_a_k_token_step_costs_k_times_tg_over_its_pp_rate_the_worst_k_counts(self):
        # One token a step at 1,000 t/s: 1 ms. pp2 at 1,800 t/s: a 2-token
        # step 1.111 ms (1.11x); pp4 at 3,200: 1.25 ms (1.25x); pp8 at 6,000:
        # 1.333 ms (1.33x), the worst; pp512 is not a step of <= 8 tokens.
        self.write("targets_8b_q1_0_steps", bonsai("pp2", 1800.0), bonsai("pp4", 3200.0),
                   bonsai("pp8", 6000.0), bonsai("pp512", 9000.0), bonsai("tg128", 1000.0))
        step = self.results()["K-token step / one token, 8B Q1_0"]
        self.assertEqual((step["figure"], step["test"], step["verdict"]),
                         ("1.33x", "pp8 / tg128", "not met"))
        self.write("targets_8b_q1_0_steps", bonsai("pp2", 1800.0), bonsai("pp8", 6200.0),
                   bonsai("tg128", 1000.0))
        step = self.results()["K-token step / one token, 8B Q1_0"]
        self.assertEqual((step["figure"], step["verdict"]), ("1.29x", "met"))  # 8000 / 6200
        self.write("targets_8b_q1_0_steps", bonsai("pp8", 6200.0))  # no tg row
        self.assertEqual(self.results()["K-token step / one token, 8B Q1_0"]["verdict"],
                         "no figure")

    def test_speculative_rows_are_generation_with_the_draft_over_without(self):
        self.write("targets_spec_pair", bonsai("tg128", 400.0), bonsai("tg128 gen", 390.0),
                   bonsai("tg128 gen+draft", 585.0))
        self.write("targets_spec_ngram", bonsai("tg128", 400.0), bonsai("tg128 gen", 390.0),
                   bonsai("tg128 gen+draft", 779.0))
        r = self.results()
        pair = r["speculative, 1.7B draft of the 8B pair, all kept"]
        self.assertEqual((pair["figure"], pair["verdict"], pair["test"]),
                         ("1.50x", "met", "tg128 gen+draft / tg128 gen"))  # 585 / 390
        lookup = r["speculative, prompt lookup on a repeating text"]
        self.assertEqual((lookup["figure"], lookup["verdict"]), ("2.00x", "not met"))  # 1.997
        for label in r:
            if "draft" in label or "lookup" in label:
                self.assertTrue(label.startswith("speculative"))

    def test_a_missing_log_or_row_is_no_figure(self):
        self.write("targets_8b_q2_0", bonsai("pp512", 9000.0))  # its tg row is missing
        r = self.results()
        self.assertEqual(r["tg, 8B Q2_0 (t/s)"]["verdict"], "no figure")
        self.assertEqual(r["tg, 8B Q2_0 (t/s)"]["figure"], "-")
        for result in r.values():
            self.assertIn(result["verdict"], ("met", "not met", "no figure"))
        self.assertNotIn("FAIL", gpu_targets.table(list(r.values())))

    def test_the_share_at_depth_may_trail_by_ten_points(self):
        self.write("targets_8b_q1_0", bonsai("tg128", 425.0, 0.5000))
        self.write("targets_8b_q1_0_d4096", bonsai("tg128 @ d4096", 309.0, 0.4000))
        self.write("targets_8b_q2_0", bonsai("tg128", 300.0, 0.5000))
        self.write("targets_8b_q2_0_d4096", bonsai("tg128 @ d4096", 200.0, 0.3990))
        self.write("targets_1.7b_q1_0", bonsai("tg128", 700.0, 0.10))  # no d4096 log
        r = self.results()
        q1 = r["share at depth, 8B Q1_0 (points)"]
        self.assertEqual((q1["figure"], q1["verdict"]), ("50.0 % / 40.0 %", "met"))  # 10 points
        self.assertEqual(q1["test"], "tg128 / tg128 @ d4096")
        self.assertEqual(r["share at depth, 8B Q2_0 (points)"]["verdict"], "not met")  # 10.1
        self.assertEqual(r["share at depth, 1.7B Q1_0 (points)"]["verdict"], "no figure")

    def test_sequences_over_one_uses_the_most_sequences(self):
        self.write("targets_8b_q1_0_parallel", bonsai("tg64", 425.0), bonsai("tg64 x2", 700.0),
                   bonsai("tg64 x8", 1700.0))
        self.write("targets_8b_q2_0_parallel", bonsai("tg64", 300.0), bonsai("tg64 x8", 1199.0))
        r = self.results()
        q1 = r["sequences / one, 8B Q1_0"]
        self.assertEqual((q1["figure"], q1["verdict"], q1["test"]),
                         ("4.00x", "met", "tg64 x8 / tg64"))  # 1700 / 425 = 4
        q2 = r["sequences / one, 8B Q2_0"]
        self.assertEqual((q2["figure"], q2["verdict"]), ("4.00x", "not met"))  # 3.9967

    def test_the_load_is_read_from_its_line(self):
        self.write("targets_load", "stats: backend cuda | load 272.4 ms | prompt 1 tokens",
                   "warm run to its first token: 1.50 s")
        load = self.results()["warm load to first token, 8B Q1_0 (s)"]
        self.assertEqual((load["figure"], load["verdict"]), ("1.50", "met"))
        self.write("targets_load", "warm run to its first token: 1.51 s")
        self.assertEqual(self.results()["warm load to first token, 8B Q1_0 (s)"]["verdict"],
                         "not met")

    def test_llama_rows_at_depth_or_of_both_kinds_are_not_taken(self):
        self.write("targets_8b_q1_0", bonsai("tg128", 500.0))
        self.write("llama_targets_8b_q1_0", llama(0, 128, 999.0, depth=4096),
                   llama(512, 128, 888.0), llama(0, 128, 250.0))
        self.assertEqual(self.results()["tg, 8B Q1_0 (t/s)"]["ratio"], "2.00")  # 500 / 250

    def test_the_table_counts_the_targets_met(self):
        self.write("targets_8b_q1_0", bonsai("tg128", 1300.0), bonsai("pp512", 25000.0))
        self.write("llama_targets_8b_q1_0", llama(0, 128, 400.0))
        text = gpu_targets.table(gpu_targets.evaluate(self.logs))
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("target"))
        self.assertEqual(len(lines), 1 + len(gpu_targets.TARGETS) + 1)
        self.assertEqual(lines[-1], f"2 of {len(gpu_targets.TARGETS)} targets met")

    def test_a_row_cut_short_is_left_out_with_a_note(self):
        self.write("targets_8b_q1_0", bonsai("pp512", 21000.0), '{"test": "tg128", "median_ts": ')
        self.write("targets_8b_q2_0", bonsai("tg128", 900.0))
        err, out = io.StringIO(), io.StringIO()
        with redirect_stderr(err), redirect_stdout(out):
            self.assertEqual(gpu_targets.main(["gpu-targets.py", self.logs]), 0)
        self.assertIn("targets_8b_q1_0.log:4: left out, not a JSON row", err.getvalue())
        rows = {line.split("  ")[0]: line for line in out.getvalue().splitlines()}
        self.assertTrue(rows["tg, 8B Q1_0 (t/s)"].endswith("no figure"))
        self.assertTrue(rows["tg, 8B Q2_0 (t/s)"].endswith("met"))

    def test_the_tuners_table_puts_each_candidates_rate_beside_llama(self):
        # The plugin's lines as `bonsai bench --tune` prints them on stderr.
        self.write("targets_tune_8b_q1_0",
                   "[cuda] decode tune: steps of 1 token on NVIDIA H200, sm_90, 132 SMs "
                   "(measured in 812 ms): decode=persistent;persistent_prefetch=next",
                   "[cuda] decode tune:   candidate" + " " * 51 + "us a step  check",
                   "[cuda] decode tune:   decode=persistent" + " " * 40 + "1000.0  passed",
                   "[cuda] decode tune:   decode=graph" + " " * 45 + "2500.0  passed",
                   "[cuda] decode tune:   decode=persistent;persistent_head=off" + " " * 23
                   + "-  failed: token 0: cosine 0.100000 to the reference's logits",
                   "[cuda] decode tune: * decode=persistent;persistent_prefetch=next" + " " * 14
                   + "800.0  passed",
                   "[cuda] decode tune: steps of 8 tokens on NVIDIA H200, sm_90, 132 SMs "
                   "(cached in /c/x.tune): decode=persistent",
                   "[cuda] decode tune: * decode=persistent" + " " * 40 + "2000.0  passed",
                   bonsai("tg16", 900.0))
        self.write("llama_targets_8b_q1_0", llama(0, 128, 400.0))
        self.write("targets_tune_27b_q1_0", "[cuda] decode tune: nothing to tune for this "
                   "model: its layers are qwen35's kinds")
        lines = gpu_targets.tune_lines(self.logs)
        rows = {tuple(line.split()[:3]): line.split() for line in lines[2:]}
        # One token a step: 1e6 / 800 us = 1,250 t/s, 3.12x llama.cpp's 400.
        self.assertEqual(rows[("8b_q1_0", "1", "*")][3:],
                         ["decode=persistent;persistent_prefetch=next", "800.0", "1250.0",
                          "400.0", "3.12", "passed"])
        self.assertEqual(rows[("8b_q1_0", "1", "decode=graph")][3:7],
                         ["2500.0", "400.0", "400.0", "1.00"])
        failed = rows[("8b_q1_0", "1", "decode=persistent;persistent_head=off")]
        self.assertEqual(failed[3:8], ["-", "-", "400.0", "-", "failed:"])
        # Eight tokens a step: 8e6 / 2000 us = 4,000 t/s, no ratio (not one sequence).
        self.assertEqual(rows[("8b_q1_0", "8", "*")][4:7], ["2000.0", "4000.0", "400.0"])
        self.assertEqual(rows[("8b_q1_0", "8", "*")][7], "-")
        self.assertIn("27b_q1_0: decode tune: nothing to tune for this model: its layers are "
                      "qwen35's kinds", lines)
        self.assertIn("1.7b_q1_0: no figure (no targets_tune_1.7b_q1_0 log)", lines)
        # Without any tuner log there is no table.
        for name in ("targets_tune_8b_q1_0", "targets_tune_27b_q1_0"):
            os.remove(os.path.join(self.logs, name + ".log"))
        self.assertEqual(gpu_targets.tune_lines(self.logs), [])

    def test_a_bad_call_is_one_clear_error(self):
        for argv in (["gpu-targets.py"], ["gpu-targets.py", os.path.join(self.logs, "none")],
                     ["gpu-targets.py", self.logs, "--title", "x"]):
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(gpu_targets.main(argv), 2)
            self.assertTrue(err.getvalue().startswith(("usage:", "gpu-targets.py:")))

if __name__ == "__main__":
    unittest.main()
