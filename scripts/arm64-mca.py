#!/usr/bin/env python3
"""Static throughput estimates of the CPU plugin's AArch64 kernels (docs/arm64.md).

Compiles the kernel sources to assembly exactly as build-arm64/ compiles them
(its compile_commands.json, from scripts/test-arm64.sh), takes the innermost
loop of each kernel that holds its characteristic instruction, and runs LLVM's
machine-code analyser on it for each CPU model:

    scripts/arm64-mca.py [--build build-arm64] [--llvm-mca llvm-mca-19]

These are estimates of a core running the loop from L1, with no cache misses,
branch mispredictions or memory stalls: they compare the kernel sets with each
other, not with a measurement (`bonsai bench` on the machine itself).
LLVM 14 (Debian 12's `llvm`) models none of these cores (it takes the
Cortex-A57 model for all of them); LLVM 19 (`apt-get install llvm-19`) has
Neoverse V1 and N1 models. The Cortex-A76 is the core Neoverse N1 was built
from, and LLVM 19 has no model of its own for it: the N1 column stands for it.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

# CPU model, the -mattr it needs for the set's instructions, the sets it runs.
CPUS = [
    ("neoverse-v1", "+dotprod,+i8mm", {"neon", "dotprod", "i8mm"}),
    ("neoverse-n1", "+dotprod", {"neon", "dotprod"}),
]

# Multiply-accumulates (weight x token products) each instruction does; for
# the SMMLA kernel's sign expansion (cmtst), the weights it expands.
MACS = {"tbl": 32, "sdot": 16, "smmla": 32, "smull": 8, "smull2": 8, "smlal": 8, "smlal2": 8,
        "cmtst": 16}


# The widening multiplies of the ARMv8.0 kernels (the first product of a sum
# compiles to SMULL, the rest to SMLAL).
SMLAL = ["smull", "smull2", "smlal", "smlal2"]


class Kernel:
    def __init__(self, name, kernel_set, source, function, marker, macs_from, unit="MACs"):
        self.name = name
        self.unit = unit  # what the loop's work counts: MACs, or weights expanded
        self.set = kernel_set
        self.source = source
        self.function = re.compile(function)
        self.marker = marker
        self.macs_from = macs_from  # instructions whose MACS count the loop's work


KERNELS = [
    Kernel("Q1_0 tiles, 1 token (TBL)", "neon", "neon_q1_tables.cpp", r"tile_one_token", "tbl",
           ["tbl"]),
    Kernel("Q1_0 tiles, steps (TBL)", "neon", "neon_q1_tables.cpp", r"tile_tokens", "tbl", ["tbl"]),
    Kernel("Q1_0 tiles, token pairs (SMMLA)", "i8mm", "i8mm_q1_tiles.cpp", r"tile_pairs", "smmla",
           ["smmla"]),
    Kernel("Q1_0 tiles, sign expansion for SMMLA", "i8mm", "i8mm_q1_tiles.cpp", r"tile_pairs",
           "cmtst", ["cmtst"], unit="weights"),
    Kernel("Q2_0 rows, 1 token (SMLAL)", "neon", "neon_quant.cpp",
           r"arm_rows<[^>]*ArmQ2>|neon_rows_q2\(", "smlal", SMLAL),
    Kernel("Q2_0 rows, 1 token (SDOT)", "dotprod", "dotprod_quant.cpp",
           r"arm_rows<[^>]*ArmQ2>|dotprod_rows_q2\(", "sdot", ["sdot"]),
    Kernel("Q2_0 rows, 4 tokens (SMLAL)", "neon", "neon_quant.cpp",
           r"arm_rows_tile<.*ArmQ2, 4>", "smlal", SMLAL),
    Kernel("Q2_0 rows, 4 tokens (SDOT)", "dotprod", "dotprod_quant.cpp",
           r"arm_rows_tile<.*ArmQ2, 4>", "sdot", ["sdot"]),
    Kernel("Q8_0 rows, 1 token (SMULL)", "neon", "neon_quant.cpp",
           r"arm_rows<[^>]*ArmQ8>|neon_rows_q8\(", "smull", SMLAL),
    Kernel("Q8_0 rows, 1 token (SDOT)", "dotprod", "dotprod_quant.cpp",
           r"arm_rows<[^>]*ArmQ8>|dotprod_rows_q8\(", "sdot", ["sdot"]),
]

# A branch to a local label: b, b.cond or GCC's bcond, cbz/cbnz, tbz/tbnz.
BRANCH = re.compile(r"^\s*(b(?:\.?(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le))?|cbn?z|tbn?z)"
                    r"\s+(?:[wx]\d+,\s*(?:#?\d+,\s*)?)?(\.L\w+)")


def compile_to_asm(build, source, out):
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    for e in entries:
        if e["file"].endswith("/kernels/" + source):
            args = shlex.split(e["command"])
            if os.path.basename(args[0]) == "ccache":
                args = args[1:]
            i = args.index("-o")
            args[i + 1] = out
            args[args.index("-c")] = "-S"
            subprocess.run(args, cwd=e["directory"], check=True)
            return
    sys.exit(f"arm64-mca: {source} is not in {build}/compile_commands.json")


def functions(asm_path):
    """{demangled name: [lines]} of every function in the assembly."""
    with open(asm_path) as f:
        lines = f.read().splitlines()
    names = [l[:-1] for l in lines if re.match(r"^_Z[\w.]+:$", l)]
    demangled = subprocess.run(["c++filt"], input="\n".join(names), text=True,
                               capture_output=True, check=True).stdout.splitlines()
    out, current = {}, None
    for line in lines:
        if re.match(r"^_Z[\w.]+:$", line):
            current = demangled[names.index(line[:-1])]
            out[current] = []
        elif current is not None:
            out[current].append(line)
            if line.strip().startswith(".size"):
                current = None
    return out


def innermost_loop(body, marker):
    """The instructions of the smallest loop (label .. backward branch) holding `marker`."""
    labels = {}
    for i, line in enumerate(body):
        m = re.match(r"^(\.L\w+):", line)
        if m:
            labels[m.group(1)] = i
    best = None
    for i, line in enumerate(body):
        m = BRANCH.match(line)
        if not m or m.group(2) not in labels or labels[m.group(2)] >= i:
            continue
        span = body[labels[m.group(2)]:i + 1]
        instructions = [l.strip() for l in span
                        if l.startswith("\t") and not l.strip().startswith(".")]
        if any(ins.split()[0] == marker for ins in instructions):
            if best is None or len(instructions) < len(best):
                best = instructions
    return best


def mca_cycles(llvm_mca, cpu, mattr, instructions):
    """Cycles per iteration of the loop in llvm-mca's simulation."""
    iterations = 200
    run = subprocess.run([llvm_mca, "-mtriple=aarch64", f"-mcpu={cpu}", f"-mattr={mattr}",
                          f"-iterations={iterations}"], input="\n".join(instructions) + "\n",
                         text=True, capture_output=True)
    if run.returncode != 0:
        sys.exit(f"arm64-mca: llvm-mca failed for {cpu}: {run.stderr.strip()}")
    total = int(re.search(r"Total Cycles:\s+(\d+)", run.stdout).group(1))
    return total / iterations


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build-arm64")
    parser.add_argument("--llvm-mca", default="llvm-mca-19")
    args = parser.parse_args()
    sources = sorted({k.source for k in KERNELS})
    print("| kernel | set | work per loop iteration | " +
          " | ".join(f"{cpu}: cycles, work/cycle" for cpu, _, _ in CPUS) + " |")
    print("|---|---|---|" + "---|" * len(CPUS))
    with tempfile.TemporaryDirectory() as tmp:
        asm = {}
        for source in sources:
            path = os.path.join(tmp, source + ".s")
            compile_to_asm(args.build, source, path)
            asm[source] = functions(path)
        for k in KERNELS:
            matches = [body for name, body in asm[k.source].items() if k.function.search(name)]
            if not matches:
                sys.exit(f"arm64-mca: no function matching {k.function.pattern} in {k.source}")
            loop = innermost_loop(matches[0], k.marker)
            if loop is None:
                sys.exit(f"arm64-mca: no loop with {k.marker} in {k.function.pattern}")
            macs = sum(MACS[ins.split()[0]] for ins in loop if ins.split()[0] in k.macs_from)
            cells = []
            for cpu, mattr, runs in CPUS:
                if k.set not in runs:
                    cells.append("(no " + k.set + ")")
                    continue
                cycles = mca_cycles(args.llvm_mca, cpu, mattr, loop)
                cells.append(f"{cycles:.1f}, {macs / cycles:.0f}")
            print(f"| {k.name} | {k.set} | {len(loop)} instructions, {macs} {k.unit} | " +
                  " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
