#!/usr/bin/env python3
"""check_docs.py SOURCE_DIR: keeps the guides' code from rotting.

Every fenced code block in the guides must sit right below a marker line:
  <!-- file: PATH -->     the block is exactly the file PATH (relative to SOURCE_DIR)
  <!-- excerpt: PATH -->  the block's lines appear, in order and contiguous, in PATH
The files named are the examples and tests that the sdk test compiles and runs.
Blocks fenced as ```text (directory trees, sample output, commands with
placeholder paths) are illustrations, not code, and need no marker; a text
block that has a marker is checked like any other.
"""
import pathlib
import re
import sys

GUIDES = ["docs/plugin-guide.md", "docs/embedding.md", "docs/architecture.md"]
MARKER = re.compile(r"^<!-- (file|excerpt): (\S+) -->$")
FENCE = re.compile(r"^```(\S*)\s*$")


def blocks(lines):
    """Yields (line number, language, marker line or None, block text)."""
    i = 0
    while i < len(lines):
        start = FENCE.match(lines[i])
        if not start:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        marker = lines[i - 1].strip() if i > 0 else ""
        yield i + 1, start.group(1), marker, "".join(l + "\n" for l in lines[i + 1 : end])
        i = end + 1


def check(root, guide):
    errors = []
    path = root / guide
    if not path.exists():
        return [f"{guide}: missing"]
    lines = path.read_text(encoding="utf-8").split("\n")
    for line, language, marker, text in blocks(lines):
        where = f"{guide}:{line}"
        if language == "text" and not MARKER.match(marker):
            continue
        match = MARKER.match(marker)
        if not match:
            errors.append(f"{where}: ```{language} block without a <!-- file/excerpt: PATH --> line above")
            continue
        kind, name = match.groups()
        source = root / name
        if not source.exists():
            errors.append(f"{where}: {name} does not exist")
            continue
        content = source.read_text(encoding="utf-8")
        if kind == "file" and text != content:
            errors.append(f"{where}: the block differs from {name}; copy the file again")
        if kind == "excerpt" and text not in content:
            errors.append(f"{where}: the block is not a verbatim excerpt of {name}")
    return errors


def main():
    root = pathlib.Path(sys.argv[1])
    errors = [e for guide in GUIDES for e in check(root, guide)]
    for e in errors:
        print("error:", e)
    checked = sum(1 for g in GUIDES if (root / g).exists() for _ in blocks((root / g).read_text().split("\n")))
    print(f"{checked} code blocks in {len(GUIDES)} guides, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
