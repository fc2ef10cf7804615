"""One model used from several threads at once: each thread has its own session and gets the
reply it would get alone."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from conftest import user

PROMPTS = ["The first thread asks", "The second thread asks something else"]


def greedy_chat(llm, prompt: str) -> str:
    reply = llm.create_chat_completion(user(prompt), max_tokens=24, temperature=0)
    return reply["choices"][0]["message"]["content"]


def test_two_threads_at_once_get_their_replies_alone(llm):
    alone = [greedy_chat(llm, p) for p in PROMPTS]
    assert alone[0] != alone[1]
    barrier = threading.Barrier(len(PROMPTS))
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(2):  # the second call reuses the thread's session
                results[i] = greedy_chat(llm, PROMPTS[i])
                assert results[i] == alone[i]
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(PROMPTS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert [results[i] for i in range(len(PROMPTS))] == alone


def test_streams_and_calls_from_a_pool(llm):
    alone = greedy_chat(llm, PROMPTS[0])

    def streamed() -> str:
        return "".join(c["choices"][0]["delta"].get("content", "") for c in
                       llm.create_chat_completion(user(PROMPTS[0]), max_tokens=24,
                                                  temperature=0, stream=True))

    def job(i: int) -> str:
        return streamed() if i % 2 else greedy_chat(llm, PROMPTS[0])

    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(job, i) for i in range(8)]
        assert [f.result(timeout=120) for f in futures] == [alone] * 8


def test_tokenize_from_many_threads(llm):
    text = "1234567890 12 345"
    expected = llm.tokenize(text)
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(lambda _: llm.tokenize(text), range(32))) == [expected] * 32


def test_a_cancel_that_arrives_late_does_not_stop_the_next_call(llm, greedy_reference):
    """What CompletionStream.close() relies on: a cancel sent while the session is idle is
    consumed by a call that fails its checks, and the next generation runs whole."""
    from bonsai_lm import _capi, _generate, _params

    engine = llm._engine
    request = _params.Request(
        prompt_tokens=greedy_reference["prompt"], messages=None, enable_thinking=True,
        max_tokens=24, sampling=_params.sampling(0.0, 1.0, 0, 0.0, 1.0, None, 0.0, 0.0),
        stop=[], logprobs=False)
    session = engine.acquire_session()
    try:
        # Left alone, a cancel sent while nothing runs stops the next call...
        engine.lib.bonsai_session_cancel(session.handle)
        cancelled = _generate.generate(engine.lib, session, request)
        # ...consumed, it does not.
        engine.lib.bonsai_session_cancel(session.handle)
        _generate._consume_leftover_cancel(engine.lib, session)
        outcome = _generate.generate(engine.lib, session, request)
    finally:
        engine.release_session(session)
    assert cancelled.stop_reason == _capi.STOP_CANCELLED
    assert outcome.stop_reason == _capi.STOP_LENGTH
    assert outcome.tokens == greedy_reference["greedy"]
