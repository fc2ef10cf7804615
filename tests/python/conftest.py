"""Shared fixtures of the bonsai Python package's tests.

ctest runs them as `python.pytest` (python/run_pytest.sh: the package
installed into a venv from the build tree). By hand, from the repository:

    PYTHONPATH=python BONSAI_LIBRARY=$PWD/build/lib/libbonsai_host.so \
        /usr/bin/python3 -m pytest -p no:cacheprovider tests/python

Every test runs the tiny model tests/data/tiny-q1.gguf on the CPU plugin with
its exact scalar kernels ("kernels=reference"), so greedy output is the same
on every machine and can be compared with data the package did not make: the
float64 reference (tiny-q1.ref.*), Hugging Face token ids, and what the
`bonsai` program prints.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest

import bonsai_lm

DATA_DIR = Path(os.environ.get("BONSAI_TEST_DATA_DIR",
                               Path(__file__).resolve().parents[1] / "data"))
MODEL = DATA_DIR / "tiny-q1.gguf"
# The engine options of every test model; the same flags for the bonsai program.
ENGINE = {"backend": "cpu", "plugin_options": {"kernels": "reference"}, "n_ctx": 512}
CLI_ENGINE_FLAGS = ["--backend", "cpu", "--backend-options", "kernels=reference", "-c", "512"]


def open_model(**overrides: Any) -> bonsai_lm.Bonsai:
    return bonsai_lm.Bonsai(MODEL, **{**ENGINE, **overrides})


@pytest.fixture(scope="session")
def llm() -> Iterator[bonsai_lm.Bonsai]:
    """One model shared by the tests that do not close it."""
    with open_model() as model:
        yield model


@pytest.fixture(scope="session")
def greedy_reference() -> dict[str, list[int]]:
    """{"prompt": 8 ids, "greedy": 24 ids}: the float64 reference's greedy run."""
    return json.loads((DATA_DIR / "tiny-q1.ref.greedy.json").read_text())


@pytest.fixture(scope="session")
def bonsai_program() -> str:
    """The `bonsai` program of the build tree ($BONSAI_PROGRAM), or skip."""
    program = os.environ.get("BONSAI_PROGRAM") or shutil.which("bonsai")
    if not program or not os.access(program, os.X_OK):
        pytest.skip("the bonsai program is not built (set BONSAI_PROGRAM to build/bin/bonsai)")
    return program


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]
