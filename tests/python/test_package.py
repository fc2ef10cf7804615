"""The package itself: where its library comes from, its version, tokens."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import bonsai_lm
from conftest import DATA_DIR


def test_the_installed_package_uses_its_bundled_library():
    if os.environ.get("BONSAI_EXPECT_BUNDLED") != "1":
        pytest.skip("not testing an installed package (set BONSAI_EXPECT_BUNDLED=1)")
    package = Path(bonsai_lm.__file__).resolve().parent
    assert "site-packages" in package.parts
    assert bonsai_lm.library_path() == package / "_libs" / "libbonsai_host.so"
    assert (package / "_libs" / "bonsai" / "plugins" / "libbonsai_cpu.so").is_file()


def test_version_is_the_projects():
    expected = os.environ.get("BONSAI_EXPECT_VERSION")
    if not expected:
        pytest.skip("the project's version is not known here (set BONSAI_EXPECT_VERSION)")
    assert bonsai_lm.__version__ == expected


def test_backend_and_repr(llm):
    assert llm.backend == "cpu"
    assert "backend='cpu'" in repr(llm)


# Hugging Face's ids for texts whose tokens all lie in the tiny model's vocabulary (its first
# 2,000 ids are Qwen3's).
HF_CASES = [case for case in json.loads((DATA_DIR / "tokenizer" / "hf-cases.json").read_text())
            if all(i < 2000 for i in case["ids"])]


@pytest.mark.parametrize("case", HF_CASES, ids=[c["text"] for c in HF_CASES])
def test_tokenize_gives_hugging_faces_ids(llm, case):
    assert llm.tokenize(case["text"]) == case["ids"]
    assert llm.detokenize(case["ids"]) == case["text"]


@pytest.mark.parametrize("text", ["Hello world, bonsai!", "naïve café — 日本", "  two  spaces ",
                                  "<|im_start|>user\nhi<|im_end|>"])
def test_tokenize_detokenize_round_trip(llm, text):
    ids = llm.tokenize(text)
    assert ids and all(isinstance(i, int) and 0 <= i < 2048 for i in ids)
    assert llm.detokenize(ids) == text
    assert llm.tokenize(text.encode("utf-8")) == ids


def test_control_token_text_becomes_the_control_token(llm):
    assert llm.tokenize("<|im_end|>") == [2002]  # eos / im_end of the tiny model


def test_empty_text(llm):
    assert llm.tokenize("") == []
    assert llm.detokenize([]) == ""


def test_set_log_level():
    bonsai_lm.set_log_level("error")
    bonsai_lm.set_log_level("warn")
    with pytest.raises(ValueError, match="trace, debug, info, warn, error or off"):
        bonsai_lm.set_log_level("loud")
