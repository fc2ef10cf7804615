"""Generating in a worker thread: streams, and waits that Ctrl-C can interrupt.

Every generation runs in a worker thread on the session of the thread that
asked for it. The worker calls ``bonsai_generate`` (the GIL released while it
computes) and puts every piece of text on a queue.

- A stream's iterator turns the pieces into OpenAI chunks as they arrive.
  Closing it early (``close()``, leaving a ``with`` block, or dropping it)
  cancels the generation and waits for the worker, so the session is free
  again when ``close()`` returns.
- A call without streaming waits for the outcome in Python, where Ctrl-C
  reaches it (:func:`run_in_worker`).
"""

from __future__ import annotations

import atexit
import ctypes
import queue
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Optional

from . import _openai
from ._closing import ClosesOnExit
from ._engine import Engine
from ._generate import CancelGuard, Outcome, generate
from ._params import Request
from ._reasoning import ReasoningSplit

# Streams still open, cancelled at exit so that no worker thread is inside
# the library while the interpreter shuts down.
_open_streams: "weakref.WeakSet[CompletionStream]" = weakref.WeakSet()
_open_workers: "weakref.WeakSet[CancelGuard]" = weakref.WeakSet()


@atexit.register
def _close_open_streams() -> None:
    for stream in list(_open_streams):
        stream.close()
    for guard in list(_open_workers):
        guard.cancel()


def _work(lib: ctypes.CDLL, engine: Engine, session: Any, request: Request,
          guard: CancelGuard, out: "queue.Queue[tuple[str, Any]]", stream: bool,
          draft: Optional[tuple[Engine, Any]]) -> None:
    """The worker thread's body. It holds no reference to the stream object, so a
    stream dropped by its reader is collected (and so cancelled)."""
    def on_text(text: str) -> bool:
        out.put(("text", text))
        return True

    try:
        out.put(("done", generate(lib, session, request, on_text if stream else None, guard,
                                  draft[1] if draft is not None else None)))
    except BaseException as error:  # noqa: B036 - raised in the reader's thread
        out.put(("error", error))
    finally:
        engine.release_session(session)
        if draft is not None:
            draft[0].release_session(draft[1])


def start_worker(engine: Engine, request: Request, guard: CancelGuard,
                 out: "queue.Queue[tuple[str, Any]]", stream: bool,
                 draft_engine: Optional[Engine] = None) -> threading.Thread:
    """Starts generating in a worker thread, on the calling thread's session (and
    its session of `draft_engine`, the draft model, when given).

    Text pieces (when `stream`) and then ("done", Outcome) or ("error",
    exception) arrive on `out`.
    """
    session = engine.acquire_session()
    draft: Optional[tuple[Engine, Any]] = None
    try:
        if draft_engine is not None:
            draft = (draft_engine, draft_engine.acquire_session())
        thread = threading.Thread(target=_work, name="bonsai-generate", daemon=True,
                                  args=(engine.lib, engine, session, request, guard, out,
                                        stream, draft))
        thread.start()
    except BaseException:
        engine.release_session(session)
        if draft is not None:
            draft_engine.release_session(draft[1])
        raise
    return thread


def run_in_worker(engine: Engine, request: Request,
                  draft_engine: Optional[Engine] = None) -> Outcome:
    """Generates in a worker thread and waits for the outcome.

    The caller waits in Python rather than inside the library, so Ctrl-C (a
    KeyboardInterrupt, raised in the main thread) interrupts the wait at once:
    the generation is then cancelled and waited for before the exception goes
    on. (A signal that arrived while the library calls back into Python would
    be lost inside the ctypes callback.)
    """
    guard = CancelGuard()
    out: "queue.Queue[tuple[str, Any]]" = queue.Queue()
    thread = start_worker(engine, request, guard, out, stream=False, draft_engine=draft_engine)
    _open_workers.add(guard)
    try:
        kind, value = out.get()
    except BaseException:
        guard.cancel()
        thread.join()
        raise
    finally:
        _open_workers.discard(guard)
    thread.join()
    if kind == "error":
        raise value
    return value


class CompletionStream(Iterator[dict[str, Any]], ClosesOnExit):
    """An iterator of OpenAI-shaped chunks of one completion or chat completion.

    The generation starts on the first ``next()``. A chat stream's first chunk
    carries ``delta.role == "assistant"``; the last one carries the
    ``finish_reason``, the ``usage`` and (when asked for) the ``logprobs`` of
    the whole reply. Use it in a ``with`` block, or call :meth:`close`, to stop
    a generation you no longer read.
    """

    def __init__(self, engine: Engine, request: Request, header: _openai.Header,
                 token_bytes: _openai.TokenBytes, owner: object = None,
                 draft_engine: Optional[Engine] = None) -> None:
        self._owner = owner  # the Bonsai object: not closed by the collector while streaming
        self._engine = engine
        self._draft_engine = draft_engine
        self._request = request
        self._header = header
        self._token_bytes = token_bytes
        self._queue: "queue.Queue[tuple[str, Any]]" = queue.Queue()
        self._guard = CancelGuard()
        self._thread: Optional[threading.Thread] = None
        self._role_sent = not header.chat
        # A chat reply's think block goes out as reasoning_content.
        self._split: Optional[ReasoningSplit] = ReasoningSplit() if header.chat else None
        self._final: Optional[dict[str, Any]] = None  # after the split's last piece
        self._finished = False
        _open_streams.add(self)

    def _start(self) -> None:
        # The reader thread's own session (its KV cache), used by the worker.
        self._thread = start_worker(self._engine, self._request, self._guard, self._queue,
                                    stream=True, draft_engine=self._draft_engine)

    def __iter__(self) -> "CompletionStream":
        return self

    def __next__(self) -> dict[str, Any]:
        if self._finished:
            raise StopIteration
        if self._thread is None:
            try:
                self._start()
            except BaseException:
                self._finished = True
                raise
        if not self._role_sent:
            self._role_sent = True
            return _openai.chunk(self._header, "", first=True)
        if self._final is not None:
            final, self._final = self._final, None
            self._finished = True
            return final
        while True:
            kind, value = self._queue.get()
            if kind != "text":
                break
            if self._split is None:
                return _openai.chunk(self._header, value)
            reasoning, content = self._split.feed(value)
            if reasoning or content:  # else a tag is held back: read on
                return _openai.chunk(self._header, content or None, reasoning=reasoning)
        self._join()
        if kind == "error":
            self._finished = True
            raise value
        final = _openai.final_chunk(self._header, value, self._token_bytes)
        reasoning, content = self._split.finish() if self._split is not None else ("", "")
        if not (reasoning or content):
            self._finished = True
            return final
        self._final = final  # what the split held back goes first
        return _openai.chunk(self._header, content or None, reasoning=reasoning)

    def _join(self) -> None:
        # (A collector run inside the worker itself may drop the stream.)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        _open_streams.discard(self)

    def close(self) -> None:
        """Stops the generation if it still runs, and waits for it to end."""
        if self._finished:
            return
        self._finished = True
        self._guard.cancel()
        self._join()

