"""create_completion against data the package did not make: the float64 reference's greedy
tokens and logits (tests/data/tiny-q1.ref.*), and the bonsai program's output."""

from __future__ import annotations

import json
import math
import struct
import subprocess

import pytest

from conftest import CLI_ENGINE_FLAGS, DATA_DIR, MODEL, open_model

VOCAB = 2048


def test_greedy_continuation_is_the_reference(llm, greedy_reference):
    reply = llm.create_completion(greedy_reference["prompt"], max_tokens=24, temperature=0,
                                  logprobs=True)
    assert reply["object"] == "text_completion"
    assert reply["id"].startswith("cmpl-")
    assert isinstance(reply["created"], int)
    assert reply["model"] == str(MODEL)
    (choice,) = reply["choices"]
    assert choice["index"] == 0
    # The reference ids, one token at a time (their text), then as one text.
    expected_tokens = [llm.detokenize([t]) for t in greedy_reference["greedy"]]
    assert choice["logprobs"]["tokens"] == expected_tokens
    assert choice["text"] == llm.detokenize(greedy_reference["greedy"])
    assert choice["finish_reason"] == "length"
    assert choice["stop_reason"] == "length"
    assert reply["usage"] == {"prompt_tokens": 8, "completion_tokens": 24, "total_tokens": 32}


def test_text_prompt_matches_the_bonsai_program(llm, bonsai_program):
    out = subprocess.run(
        [bonsai_program, "run", "-m", str(MODEL), "-p", "The quick brown fox", "-n", "20",
         "--temp", "0", "--no-chat", "--json", *CLI_ENGINE_FLAGS],
        check=True, capture_output=True, text=True, timeout=60).stdout
    expected = json.loads(out)
    reply = llm.create_completion("The quick brown fox", max_tokens=20, temperature=0)
    assert reply["choices"][0]["text"] == expected["text"]
    assert reply["choices"][0]["finish_reason"] == expected["finish_reason"]
    assert reply["usage"]["prompt_tokens"] == expected["prompt_tokens"]
    assert reply["usage"]["completion_tokens"] == len(expected["tokens"])


def reference_logits(position: int) -> list[float]:
    """The float64 reference's logits after prompt token `position` (0-based)."""
    raw = (DATA_DIR / "tiny-q1.ref.logits.f32").read_bytes()
    return list(struct.unpack_from(f"<{VOCAB}f", raw, position * VOCAB * 4))


@pytest.mark.parametrize("length", [1, 8, 31, 48])
def test_logprob_is_the_reference_log_softmax(llm, length):
    prompt = json.loads((DATA_DIR / "tiny-q1.prompt.json").read_text())["tokens"][:length]
    logits = reference_logits(length - 1)
    top = max(logits)
    log_sum = top + math.log(sum(math.exp(x - top) for x in logits))
    best = logits.index(top)
    reply = llm.create_completion(prompt, max_tokens=1, temperature=0, logprobs=True)
    logprobs = reply["choices"][0]["logprobs"]
    assert logprobs["tokens"] == [llm.detokenize([best])]
    assert logprobs["token_logprobs"][0] == pytest.approx(top - log_sum, abs=1e-3)


def test_completion_logprobs_shape(llm, greedy_reference):
    reply = llm.create_completion(greedy_reference["prompt"], max_tokens=12, temperature=0,
                                  logprobs=0)
    logprobs = reply["choices"][0]["logprobs"]
    assert set(logprobs) == {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
    n = reply["usage"]["completion_tokens"]
    assert len(logprobs["tokens"]) == len(logprobs["token_logprobs"]) == n
    assert len(logprobs["text_offset"]) == n
    assert logprobs["top_logprobs"] is None  # the C API has no alternatives
    assert all(isinstance(v, float) and v <= 0.0 for v in logprobs["token_logprobs"])
    assert logprobs["text_offset"][0] == 0
    assert logprobs["text_offset"] == sorted(logprobs["text_offset"])
    assert reply["choices"][0]["logprobs"] is not None
    plain = llm.create_completion(greedy_reference["prompt"], max_tokens=12, temperature=0)
    assert plain["choices"][0]["logprobs"] is None
    assert plain["choices"][0]["text"] == reply["choices"][0]["text"]


def test_stop_string_ends_the_text_before_it(llm, greedy_reference):
    whole = llm.detokenize(greedy_reference["greedy"])
    # A stop string from the middle of the reference text, its first occurrence.
    stop = next(whole[i:i + 4] for i in range(6, len(whole) - 4)
                if whole[i:i + 4].isascii() and whole[i:i + 4].strip())
    expected = whole[:whole.index(stop)]
    reply = llm.create_completion(greedy_reference["prompt"], max_tokens=24, temperature=0,
                                  stop=["never appears \u2603", stop])
    choice = reply["choices"][0]
    assert choice["text"] == expected
    assert choice["finish_reason"] == "stop"
    assert choice["stop_reason"] == "stop string"
    streamed = "".join(c["choices"][0]["text"] for c in llm.create_completion(
        greedy_reference["prompt"], max_tokens=24, temperature=0, stop=stop, stream=True))
    assert streamed == expected


def test_max_tokens_past_the_context_ends_at_the_context(greedy_reference):
    with open_model(n_ctx=32) as small:
        reply = small.create_completion(greedy_reference["prompt"], max_tokens=1000,
                                        temperature=0)
        choice = reply["choices"][0]
        assert choice["finish_reason"] == "length"
        assert choice["stop_reason"] == "context full"
        # The whole context is used: what was generated continues the reference.
        assert 32 - 8 <= reply["usage"]["completion_tokens"] <= 32 - 8 + 1
        assert choice["text"].startswith(small.detokenize(greedy_reference["greedy"]))
        # Without a limit: the same.
        unlimited = small.create_completion(greedy_reference["prompt"], max_tokens=None,
                                            temperature=0)
        assert unlimited["choices"][0]["text"] == choice["text"]
        assert unlimited["choices"][0]["stop_reason"] == "context full"


def test_prompt_longer_than_the_context_is_an_error():
    import bonsai_lm
    with open_model(n_ctx=16) as small:
        with pytest.raises(bonsai_lm.BonsaiError, match="context window of 16 tokens"):
            small.create_completion(list(range(40)), max_tokens=4)


def test_seeded_sampling_repeats(llm, greedy_reference):
    kwargs = dict(max_tokens=16, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=1234)
    first = llm.create_completion(greedy_reference["prompt"], **kwargs)
    again = llm.create_completion(greedy_reference["prompt"], **kwargs)
    assert first["choices"][0]["text"] == again["choices"][0]["text"]


def test_call_is_create_completion(llm, greedy_reference):
    reply = llm(greedy_reference["prompt"], max_tokens=24, temperature=0)
    assert reply["choices"][0]["text"] == llm.detokenize(greedy_reference["greedy"])
