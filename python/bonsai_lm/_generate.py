"""One call of ``bonsai_generate`` on a session, from a checked request."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from ctypes import POINTER, byref, c_char_p, c_float, c_int32
from dataclasses import dataclass
from typing import Any, Optional

from . import _capi
from ._engine import Session, last_error
from ._params import Request
from .errors import BonsaiError

# What the library says when prompt + n_predict exceed the context window
# (generate.cpp): the request is then retried without a limit, so the reply
# ends at the context's end (finish_reason "length"), as `bonsai serve` does.
_N_PREDICT_TOO_LONG = ("n_predict", "exceed the context window")


@dataclass
class Outcome:
    """What one generation produced."""

    text: str
    tokens: list[int]
    stop_reason: int  # a _capi.STOP_* value
    prompt_tokens: int  # the whole prompt, cached prefix included
    timings: dict[str, Any]
    logprobs: Optional[list[float]]


class CancelGuard:
    """Cancels a ``bonsai_generate`` call in flight from another thread.

    A ``bonsai_session_cancel()`` that arrives after the call returned would
    stop the session's *next* call, so the guard remembers whether it sent
    one and :func:`generate` then consumes a possible leftover.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session: Optional[Session] = None
        self._sent = False
        self.requested = threading.Event()  # the text callback stops at its next piece

    def _begin(self, session: Session) -> None:
        with self._lock:
            self._session = session
            if self.requested.is_set():
                self._send()

    def _end(self) -> bool:
        with self._lock:
            self._session = None
            sent, self._sent = self._sent, False
            return sent

    def _send(self) -> None:
        session = self._session
        if session is not None and session.handle and not self._sent:
            self._sent = True
            session.lib.bonsai_session_cancel(session.handle)

    def cancel(self) -> None:
        """Asks the running call (or the next one started with this guard) to stop."""
        self.requested.set()
        with self._lock:
            self._send()


def _params(lib: ctypes.CDLL, request: Request, n_predict: int, keep: list[Any],
            draft_session: Optional[Session] = None) -> _capi.GenerateParams:
    """The C parameters of `request`; `keep` holds the buffers they point into."""
    params = lib.bonsai_generate_params_default().value
    params.struct_size = ctypes.sizeof(_capi.GenerateParams)
    if request.prompt_tokens is not None:
        ids = (c_int32 * len(request.prompt_tokens))(*request.prompt_tokens)
        keep.append(ids)
        params.prompt_tokens = ctypes.cast(ids, POINTER(c_int32))
        params.n_prompt_tokens = len(request.prompt_tokens)
    else:
        assert request.messages is not None
        messages = (_capi.ChatMessage * len(request.messages))(
            *[_capi.ChatMessage(role.encode(), content.encode("utf-8"))
              for role, content in request.messages])
        keep.append(messages)
        params.messages = ctypes.cast(messages, POINTER(_capi.ChatMessage))
        params.n_messages = len(request.messages)
        params.enable_thinking = 1 if request.enable_thinking else 0
    params.n_predict = n_predict
    s = request.sampling
    params.temperature = s.temperature
    params.top_k = s.top_k
    params.top_p = s.top_p
    params.min_p = s.min_p
    params.repeat_penalty = s.repeat_penalty
    params.has_seed = 0 if s.seed is None else 1
    params.seed = 0 if s.seed is None else s.seed
    if request.stop:
        stops = (c_char_p * len(request.stop))(*[x.encode("utf-8") for x in request.stop])
        keep.append(stops)
        params.stop_strings = ctypes.cast(stops, POINTER(c_char_p))
        params.n_stop_strings = len(request.stop)
    params.logprobs = 1 if request.logprobs else 0
    if request.json_reply:
        params.json_reply = 1
        if request.json_schema is not None:
            schema = request.json_schema.encode("utf-8")
            keep.append(schema)
            params.json_schema = schema
    d = request.draft
    params.draft_session = draft_session.handle if draft_session is not None else None
    params.draft_ngram = d.ngram
    params.draft_max = d.max
    params.draft_min = d.min
    params.draft_p_min = d.p_min
    params.draft_mtp = 1 if d.mtp else 0
    return params


def _consume_leftover_cancel(lib: ctypes.CDLL, session: Session) -> None:
    """Consumes a cancel that may have arrived after the last call returned.

    A call that fails its checks still consumes a pending cancel when it
    returns (bonsai/engine.hpp, Session::cancel), and one without a prompt
    fails before touching the session.
    """
    params = lib.bonsai_generate_params_default().value
    params.struct_size = ctypes.sizeof(_capi.GenerateParams)
    lib.bonsai_generate(session.handle, byref(params), _capi.TextFn(), None, None)


def _logprobs(lib: ctypes.CDLL, session: Session) -> list[float]:
    n = lib.bonsai_session_logprobs(session.handle, None, 0)
    if n <= 0:
        return []
    values = (c_float * n)()
    lib.bonsai_session_logprobs(session.handle, values, n)
    return list(values)


def generate(lib: ctypes.CDLL, session: Session, request: Request,
             on_text: Optional[Callable[[str], bool]] = None,
             guard: Optional[CancelGuard] = None,
             draft_session: Optional[Session] = None) -> Outcome:
    """Runs `request` on `session`, passing each piece of text to `on_text`;
    `draft_session` (a draft model's) proposes tokens when given.

    `on_text` returns False to stop (stop reason "cancelled"). An exception in
    it (a KeyboardInterrupt too) stops the generation and is raised here.
    """
    raised: list[BaseException] = []

    def on_piece(_user_data: Any, piece: Any, length: int) -> int:
        try:
            if guard is not None and guard.requested.is_set():
                return 0
            if on_text is None:
                return 1
            return 1 if on_text(ctypes.string_at(piece, length).decode("utf-8", "replace")) else 0
        except BaseException as error:  # noqa: B036 - handed to the caller below
            raised.append(error)
            return 0

    callback = _capi.TextFn(on_piece)
    if request.messages is not None:
        # Counted from an empty cache, the usage's prompt_tokens is the whole
        # chat prompt (the C API has no way to count a chat prompt's tokens).
        lib.bonsai_session_reset(session.handle)
    n_predict = -1 if request.max_tokens is None else request.max_tokens
    result = _capi.GenerateResult()
    while True:
        keep: list[Any] = []
        params = _params(lib, request, n_predict, keep, draft_session)
        if guard is not None:
            guard._begin(session)
        try:
            status = lib.bonsai_generate(session.handle, byref(params), callback, None,
                                         byref(result))
        finally:
            cancel_sent = guard._end() if guard is not None else False
        message = last_error(lib, "bonsai_generate failed") if status != 0 else ""
        if status != 0 and n_predict > 0 and all(p in message for p in _N_PREDICT_TOO_LONG):
            n_predict = -1  # to the end of the context
            continue
        break
    try:
        logprobs = _logprobs(lib, session) if status == 0 and request.logprobs else None
        if cancel_sent:
            _consume_leftover_cancel(lib, session)
        if raised:
            raise raised[0]
        if status != 0:
            raise BonsaiError(message)
        text = ctypes.string_at(result.text).decode("utf-8", "replace") if result.text else ""
        tokens = list(result.tokens[:result.n_tokens]) if result.n_tokens else []
        prompt_tokens = (len(request.prompt_tokens) if request.prompt_tokens is not None
                         else result.prompt_tokens)
        timings = {
            "load_ms": result.load_ms,
            "prompt_tokens": result.prompt_tokens,  # evaluated, a cached prefix excluded
            "prompt_ms": result.prompt_ms,
            "prompt_per_second": result.prompt_tps,
            "generated_tokens": result.gen_tokens,  # a stop token included
            "generation_ms": result.gen_ms,
            "generation_per_second": result.gen_tps,
        }
        if draft_session is not None or request.draft.ngram > 0 or request.draft.mtp:
            # llama-server's names: proposals verified, and kept.
            drafted, accepted = c_int32(0), c_int32(0)
            lib.bonsai_session_draft_counts(session.handle, byref(drafted), byref(accepted))
            timings["draft_n"] = drafted.value
            timings["draft_n_accepted"] = accepted.value
        return Outcome(text=text, tokens=tokens, stop_reason=result.stop_reason,
                       prompt_tokens=prompt_tokens, timings=timings, logprobs=logprobs)
    finally:
        lib.bonsai_generate_result_free(byref(result))
