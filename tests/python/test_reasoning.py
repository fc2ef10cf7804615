"""A chat reply's think block goes in reasoning_content, as bonsai serve puts it."""

from __future__ import annotations

import json

from conftest import user

from bonsai_lm._reasoning import ReasoningSplit, split_reply


def test_a_whole_reply_splits_at_its_think_block():
    assert split_reply("<think>\nplan\n</think>\n\nanswer") == ("plan\n", "answer")
    assert split_reply("  \n<think>a</think>b") == ("a", "b")
    # No block: all content, its leading spaces kept; <think> later is text.
    assert split_reply("  answer <think>x</think>") == ("", "  answer <think>x</think>")
    # A block never closed (the reply ran out of tokens) is all reasoning.
    assert split_reply("<think>\nstill thinking") == ("still thinking", "")
    assert split_reply("") == ("", "")


def test_tags_cut_across_pieces_are_held_until_whole():
    split = ReasoningSplit()
    pieces = ["<th", "ink>\nst", "ep one</th", "in", "k>\n", "\nthe ", "answer"]
    out = [split.feed(p) for p in pieces] + [split.finish()]
    assert out[0] == ("", "")  # "<th" may begin <think>
    assert out[2] == ("ep one", "")  # "</th" held back
    assert "".join(r for r, _ in out) == "step one"
    assert "".join(c for _, c in out) == "the answer"
    # A reply that only looked like it might open a block.
    split = ReasoningSplit()
    assert split.feed("<th") == ("", "")
    assert split.feed("e end") == ("", "<the end")


def test_a_json_reply_after_reasoning_is_the_content(llm):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
              "additionalProperties": False}
    reasoned = 0
    for seed in range(1, 9):
        args = dict(max_tokens=60, temperature=1.0, seed=seed,
                    response_format={"type": "json_schema",
                                     "json_schema": {"name": "a", "schema": schema}})
        whole = llm.create_chat_completion(user("Well?"), **args)["choices"][0]["message"]
        assert isinstance(json.loads(whole["content"])["n"], int)
        reasoned += "reasoning_content" in whole
        chunks = list(llm.create_chat_completion(user("Well?"), stream=True, **args))
        deltas = [c["choices"][0]["delta"] for c in chunks]
        assert "".join(d.get("content") or "" for d in deltas) == whole["content"]
        assert "".join(d.get("reasoning_content", "") for d in deltas) == \
            whole.get("reasoning_content", "")
        # Reasoning chunks come before any content chunk.
        kinds = ["r" if "reasoning_content" in d else "c" for d in deltas
                 if "reasoning_content" in d or d.get("content")]
        assert kinds == sorted(kinds, reverse=True)
    assert reasoned > 0, "no seed wrote a think block: the split was not exercised"
