#!/usr/bin/env python3
"""Digest of ncu's source page (SASS with warp-stall samples) for one kernel.

Usage: ncu -i REPORT --page source --csv --print-source sass > sass.csv
       scripts/ncu-hotspots.py sass.csv [TOP]

Prints the instructions that took the most stall samples, each with its
largest stall reasons, and the samples summed by reason over the kernel: which
instructions a persistent kernel's warps wait at, and why. Column names differ
between ncu versions, so the sample columns are found by their titles.
"""
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: ncu-hotspots.py SASS_CSV [TOP]")
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with open(sys.argv[1], newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own notes are not CSV
    rows = list(csv.reader(lines))
    # A "Kernel Name" row, then the table under its "Address" header row.
    start = next((i for i, row in enumerate(rows) if row and row[0] == "Address"), None)
    if start is None:
        sys.exit("ncu-hotspots: no 'Address' header row in " + sys.argv[1])
    header = rows[start]
    body = []
    for row in rows[start + 1:]:
        if row and row[0] == "Kernel Name":
            break
        body.append(row)
    total_col = next((i for i, h in enumerate(header) if "Stall Sampling (All" in h), None)
    if total_col is None:
        sys.exit("ncu-hotspots: no 'Warp Stall Sampling (All Samples)' column; columns: " +
                 ", ".join(header))
    source_col = next((i for i, h in enumerate(header) if h == "Source"), 1)
    address_col = next((i for i, h in enumerate(header) if h == "Address"), 0)
    reason_cols = [i for i, h in enumerate(header)
                   if h.startswith("stall_") and "Not Issued" not in h]
    totals = {}
    scored = []
    for row in body:
        if len(row) != len(header):
            continue
        samples = number(row[total_col]) or 0.0
        reasons = []
        for i in reason_cols:
            v = number(row[i]) or 0.0
            if v > 0:
                reasons.append((v, header[i]))
                totals[header[i]] = totals.get(header[i], 0.0) + v
        scored.append((samples, row[address_col], row[source_col].strip(), reasons))
    all_samples = sum(s for s, *_ in scored) or 1.0
    print(f"{len(scored)} instructions, {all_samples:.0f} stall samples")
    print("by reason:")
    for name, v in sorted(totals.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {100 * v / all_samples:5.1f} %  {name}")
    print(f"top {top} instructions:")
    for samples, address, source, reasons in sorted(scored, key=lambda s: -s[0])[:top]:
        why = ", ".join(f"{h} {v:.0f}" for v, h in sorted(reasons, reverse=True)[:3])
        print(f"  {100 * samples / all_samples:5.1f} %  {address:>8}  {source[:60]:<60}  {why}")


if __name__ == "__main__":
    main()
