#!/usr/bin/env python3
"""Checks that server/src's rooms depend only downward (docs/server.md,
"Inside the server"): every `#include "room/..."` in a file of one room
names a room below it, or its own. The APIs in api/ are side by side: one
API's folder may not include another's.

usage: server_layers.py [SERVER_SRC]   (default: the tree beside this file)
Exit 0 when every include points down, 1 with one line per upward include.
"""
import pathlib
import re
import sys

# Top to bottom; a room may include itself and the rooms after it.
ORDER = ["", "api", "reply", "schedule", "request", "http", "base"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(relative: pathlib.PurePosixPath) -> str:
    return relative.parts[0] if len(relative.parts) > 1 else ""


def check(src: pathlib.Path) -> list:
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".hpp", ".cpp"):
            continue
        rel = pathlib.PurePosixPath(path.relative_to(src).as_posix())
        room = room_of(rel)
        for target in INCLUDE.findall(path.read_text()):
            target_path = pathlib.PurePosixPath(target)
            if not (src / target).exists():
                continue  # a header of another library (bonsai/..., a generated one)
            target_room = room_of(target_path)
            if ORDER.index(target_room) < ORDER.index(room):
                problems.append(f"{rel}: includes {target}, which is in a room above ({target_room or 'top'})")
            elif room == "api" and target_room == "api" and rel.parts[1] != target_path.parts[1]:
                problems.append(f"{rel}: includes {target}, another API's file")
    return problems


def main() -> int:
    here = pathlib.Path(__file__).resolve().parent
    src = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent.parent / "server" / "src"
    if not src.is_dir():
        print(f"server_layers: no folder {src}", file=sys.stderr)
        return 2
    problems = check(src)
    for p in problems:
        print(p)
    print(f"server_layers: {'ok' if not problems else str(len(problems)) + ' upward includes'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
