"""stream=True: chunks as they come, the same text as the whole reply, and early closing."""

from __future__ import annotations

import gc
import time

import pytest

from conftest import user


def test_chat_stream_is_the_whole_reply(llm):
    whole = llm.create_chat_completion(user("Tell me a story"), max_tokens=20, temperature=0)
    chunks = list(llm.create_chat_completion(user("Tell me a story"), max_tokens=20,
                                             temperature=0, stream=True))
    assert len(chunks) >= 3
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all("role" not in c["choices"][0]["delta"] for c in chunks[1:])
    finished = [c for c in chunks if c["choices"][0]["finish_reason"] is not None]
    assert finished == [chunks[-1]]
    last = chunks[-1]["choices"][0]
    assert last["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert last["delta"] == {}
    assert chunks[-1]["usage"] == whole["usage"]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]


def test_completion_stream_is_the_whole_text(llm, greedy_reference):
    chunks = list(llm.create_completion(greedy_reference["prompt"], max_tokens=24,
                                        temperature=0, stream=True))
    assert all(c["object"] == "text_completion" for c in chunks)
    assert "".join(c["choices"][0]["text"] for c in chunks) == \
        llm.detokenize(greedy_reference["greedy"])
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])


def test_stream_logprobs_come_with_the_last_chunk(llm):
    whole = llm.create_chat_completion(user("Hi"), max_tokens=6, temperature=0, logprobs=True)
    chunks = list(llm.create_chat_completion(user("Hi"), max_tokens=6, temperature=0,
                                             logprobs=True, stream=True))
    assert all(c["choices"][0]["logprobs"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"][0]["logprobs"] == whole["choices"][0]["logprobs"]


def long_stream(llm):
    """A generation that would run to the end of the 512-token context."""
    return llm.create_completion("Count to one thousand:", max_tokens=None, temperature=0,
                                 stream=True)


def test_closing_a_stream_early_cancels_it(llm, greedy_reference):
    expected = llm.create_completion(greedy_reference["prompt"], max_tokens=24, temperature=0)
    stream = long_stream(llm)
    for _ in range(4):
        next(stream)
    start = time.monotonic()
    stream.close()
    assert time.monotonic() - start < 5.0  # the rest of the context would take longer
    with pytest.raises(StopIteration):
        next(stream)
    stream.close()  # again: nothing to do
    # The thread's session is free again, and no cancel is left over for its next call.
    again = llm.create_completion(greedy_reference["prompt"], max_tokens=24, temperature=0)
    assert again["choices"][0]["text"] == expected["choices"][0]["text"]
    assert again["choices"][0]["finish_reason"] == "length"


def test_leaving_a_with_block_cancels_the_stream(llm):
    with long_stream(llm) as stream:
        first = next(stream)
        assert first["choices"][0]["finish_reason"] is None
    with pytest.raises(StopIteration):
        next(stream)


def test_dropping_a_stream_cancels_it(llm):
    stream = long_stream(llm)
    next(stream)
    next(stream)
    del stream
    gc.collect()
    reply = llm.create_chat_completion(user("Hello"), max_tokens=4, temperature=0)
    assert reply["choices"][0]["finish_reason"] == "length"


def test_a_stream_not_read_does_not_run(llm):
    stream = long_stream(llm)
    stream.close()
    assert list(stream) == []


def test_two_streams_of_one_thread_at_once(llm):
    a = llm.create_chat_completion(user("One"), max_tokens=8, temperature=0, stream=True)
    b = llm.create_chat_completion(user("Two"), max_tokens=8, temperature=0, stream=True)
    text_a = "".join(c["choices"][0]["delta"].get("content", "") for c in a)
    text_b = "".join(c["choices"][0]["delta"].get("content", "") for c in b)
    assert text_a == llm.create_chat_completion(
        user("One"), max_tokens=8, temperature=0)["choices"][0]["message"]["content"]
    assert text_b == llm.create_chat_completion(
        user("Two"), max_tokens=8, temperature=0)["choices"][0]["message"]["content"]


def test_interleaved_streams(llm):
    """Two streams read alternately: each has its own session (one is a spare)."""
    a = llm.create_completion("Alpha", max_tokens=10, temperature=0, stream=True)
    b = llm.create_completion("Beta", max_tokens=10, temperature=0, stream=True)
    parts: dict[str, list[str]] = {"a": [], "b": []}
    done = set()
    while len(done) < 2:
        for name, stream in (("a", a), ("b", b)):
            if name in done:
                continue
            try:
                parts[name].append(next(stream)["choices"][0]["text"])
            except StopIteration:
                done.add(name)
    assert "".join(parts["a"]) == llm.create_completion(
        "Alpha", max_tokens=10, temperature=0)["choices"][0]["text"]
    assert "".join(parts["b"]) == llm.create_completion(
        "Beta", max_tokens=10, temperature=0)["choices"][0]["text"]
