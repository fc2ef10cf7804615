"""Speculative decoding from Python (docs/speculative.md): a draft model, a qwen35 model's
own MTP layer or prompt lookup proposes tokens, the model verifies them, and the greedy reply
is still the float64 reference's, whether the draft always agrees (the model itself), mostly
disagrees (other weights, same vocabulary) or is prompt lookup."""

from __future__ import annotations

import json

import pytest

import bonsai_lm
from conftest import DATA_DIR, ENGINE, open_model


@pytest.mark.parametrize("draft", [
    {"draft_model": DATA_DIR / "tiny-q1.gguf", "draft_p_min": 0.0},
    {"draft_model": DATA_DIR / "tiny-q2.gguf", "draft_p_min": 0.0, "draft_max": 4},
    {"draft_ngram": 1},
], ids=["agrees", "disagrees", "lookup"])
def test_greedy_reply_is_the_reference_with_any_draft(draft, greedy_reference):
    with open_model(**draft) as model:
        reply = model.create_completion(greedy_reference["prompt"], max_tokens=24,
                                        temperature=0)
        assert reply["choices"][0]["text"] == model.detokenize(greedy_reference["greedy"])
        # Streamed, the same text arrives.
        streamed = "".join(chunk["choices"][0]["text"] for chunk in model.create_completion(
            greedy_reference["prompt"], max_tokens=24, temperature=0, stream=True))
        assert streamed == reply["choices"][0]["text"]


def test_logprobs_and_json_replies_draft_and_stay_the_plain_ones(greedy_reference):
    # The model itself drafts (every unconstrained proposal is the model's
    # choice): log probabilities come from each token's own row, and a JSON
    # reply keeps the proposals its grammar would have chosen.
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
                                                "why": {"type": "string"}},
              "required": ["answer", "why"], "additionalProperties": False}
    json_format = {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
    with open_model() as plain, open_model(draft_model=DATA_DIR / "tiny-q1.gguf",
                                           draft_p_min=0.0, draft_max=4) as drafted:
        asked = dict(max_tokens=24, temperature=0, logprobs=True)
        want = plain.create_completion(greedy_reference["prompt"], **asked)
        got = drafted.create_completion(greedy_reference["prompt"], **asked)
        assert got["choices"][0]["text"] == plain.detokenize(greedy_reference["greedy"])
        assert got["timings"]["draft_n"] > 0
        assert got["timings"]["draft_n_accepted"] == got["timings"]["draft_n"]
        assert got["choices"][0]["logprobs"]["token_logprobs"] == pytest.approx(
            want["choices"][0]["logprobs"]["token_logprobs"], abs=1e-5)

        asked = dict(max_tokens=40, temperature=0, response_format=json_format)
        want = plain.create_chat_completion([{"role": "user", "content": "Well?"}], **asked)
        got = drafted.create_chat_completion([{"role": "user", "content": "Well?"}], **asked)
        assert got["choices"][0]["message"] == want["choices"][0]["message"]
        assert got["timings"]["draft_n"] > 0
        assert "draft_n" not in want["timings"]


@pytest.mark.parametrize("bad, error", [
    ({"draft_ngram": -1}, ValueError),
    ({"draft_max": 0}, ValueError),
    ({"draft_min": 5, "draft_max": 4}, ValueError),
    ({"draft_p_min": 1.5}, ValueError),
    ({"draft_max": "4"}, TypeError),
])
def test_bad_draft_settings_are_refused(bad, error):
    with pytest.raises(error):
        open_model(**bad)


def test_a_missing_draft_model_names_the_draft():
    with pytest.raises(bonsai_lm.BonsaiError, match="the draft model"):
        open_model(draft_model=DATA_DIR / "no-such-draft.gguf")


def test_the_mtp_layer_drafts_and_the_reply_is_the_reference():
    # A qwen35 model's own multi-token-prediction layer proposes (draft_mtp):
    # the greedy reply is still the float64 reference's.
    reference = json.loads((DATA_DIR / "tiny-q35-q1.ref.greedy.json").read_text())
    with bonsai_lm.Bonsai(DATA_DIR / "tiny-q35-q1.gguf", **{**ENGINE, "draft_mtp": True,
                                                           "draft_p_min": 0.0}) as model:
        reply = model.create_completion(reference["prompt"], max_tokens=24, temperature=0)
        assert reply["choices"][0]["text"] == model.detokenize(reference["greedy"])
        assert reply["timings"]["draft_n"] > 0


def test_the_mtp_draft_needs_an_mtp_layer_and_no_draft_model():
    with pytest.raises(bonsai_lm.BonsaiError, match="draft_mtp needs a model with an MTP layer"):
        open_model(draft_mtp=True)  # tiny-q1 is qwen3
    with pytest.raises(ValueError, match="exclude each other"):
        open_model(draft_mtp=True, draft_model=DATA_DIR / "tiny-q1.gguf")
    with pytest.raises(TypeError):
        open_model(draft_mtp=1)
