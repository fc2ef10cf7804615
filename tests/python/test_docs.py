"""docs/python.md: its examples are the files in python/examples, copied exactly, and they run
as printed from the repository root (the errors example printing what the guide shows)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import DATA_DIR

ROOT = DATA_DIR.parents[1]
GUIDE = ROOT / "docs" / "python.md"
MARKER = re.compile(r"^<!-- (file|output): (\S+) -->$")


def marked_blocks() -> list[tuple[str, str, str]]:
    """(kind, path, block text) of every fenced block below a marker line."""
    lines = GUIDE.read_text(encoding="utf-8").split("\n")
    found = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        assert lines[i + 1].startswith("```"), f"{GUIDE}:{i + 1}: no code block below"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].rstrip() == "```")
        found.append((marker.group(1), marker.group(2),
                      "".join(x + "\n" for x in lines[i + 2:end])))
    return found


BLOCKS = marked_blocks()
EXAMPLES = sorted((ROOT / "python" / "examples").glob("*.py"))


def run_example(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_every_example_is_in_the_guide():
    shown = {path for kind, path, _ in BLOCKS if kind == "file"}
    assert shown == {str(p.relative_to(ROOT)) for p in EXAMPLES}


@pytest.mark.parametrize("kind, path, text", [b for b in BLOCKS if b[0] == "file"],
                         ids=[b[1] for b in BLOCKS if b[0] == "file"])
def test_guide_block_is_the_file(kind, path, text):
    assert text == (ROOT / path).read_text(encoding="utf-8")


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_as_printed(path):
    result = run_example(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()


@pytest.mark.parametrize("kind, path, text", [b for b in BLOCKS if b[0] == "output"],
                         ids=[b[1] for b in BLOCKS if b[0] == "output"])
def test_example_prints_what_the_guide_shows(kind, path, text):
    result = run_example(ROOT / path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == text
