"""The engine handle and its sessions, shared safely between threads.

The C API allows an engine to be used from several threads at once, and a
session from one thread at a time. Here every thread gets its own session on
first use (kept in a :class:`threading.local`, so a thread's next request
reuses the prompt prefix already in its KV cache) and the engine is shared.
A thread whose session is still busy (a stream it opened is still running)
gets a spare session for the time of one request.

``ctypes`` releases the GIL during every C call, so threads generate in
parallel; the text callback takes the GIL back for each piece of text.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

from .errors import BonsaiError


def last_error(lib: ctypes.CDLL, fallback: str = "unknown error") -> str:
    """``bonsai_last_error()`` of the calling thread, as text."""
    message = lib.bonsai_last_error()
    text = message.decode("utf-8", "replace") if message else ""
    return text or fallback


class Session:
    """One ``bonsai_session`` handle; destroyed when released or garbage-collected."""

    def __init__(self, lib: ctypes.CDLL, handle: int, spare: bool) -> None:
        self.lib = lib
        self.handle: Optional[int] = handle
        self.spare = spare  # made for one request only
        self.busy = False  # guarded by the engine's lock
        self.destroy_on_release = False

    def destroy(self) -> None:
        handle, self.handle = self.handle, None
        if handle:
            self.lib.bonsai_session_destroy(handle)

    def __del__(self) -> None:
        try:
            self.destroy()
        except Exception:  # interpreter shutdown: nothing left to report to
            pass


class Engine:
    """A ``bonsai_engine`` handle, its per-thread sessions, and an orderly close."""

    def __init__(self, lib: ctypes.CDLL, handle: int) -> None:
        self.lib = lib
        self._handle: Optional[int] = handle
        self._cond = threading.Condition()
        self._users = 0  # calls using the handle right now
        self._closed = False
        self._local = threading.local()
        self._sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()
        backend = lib.bonsai_engine_backend_name(handle)
        self.backend_name = backend.decode("utf-8", "replace") if backend else ""

    @property
    def closed(self) -> bool:
        return self._closed

    def _closed_error(self) -> BonsaiError:
        return BonsaiError("the model is closed (Bonsai.close() was called)")

    @contextmanager
    def use(self) -> Iterator[int]:
        """The engine handle, kept open for the duration of the block."""
        with self._cond:
            if self._closed or self._handle is None:
                raise self._closed_error()
            self._users += 1
        try:
            yield self._handle
        finally:
            with self._cond:
                self._users -= 1
                self._cond.notify_all()

    def acquire_session(self) -> Session:
        """This thread's session, or a spare one when it is busy; release it after use."""
        with self._cond:
            if self._closed:
                raise self._closed_error()
            own: Optional[Session] = getattr(self._local, "session", None)
            if own is not None and own.handle and not own.busy:
                own.busy = True
                return own
        # A new session uploads the weights: done without holding the lock.
        with self.use() as engine:
            handle = self.lib.bonsai_session_create(engine)
            if not handle:
                raise BonsaiError(last_error(self.lib, "bonsai_session_create failed"))
        session = Session(self.lib, handle, spare=own is not None and bool(own.handle))
        with self._cond:
            if self._closed:
                session.destroy()
                raise self._closed_error()
            session.busy = True
            self._sessions.add(session)
            if not session.spare:
                self._local.session = session
        return session

    def release_session(self, session: Session) -> None:
        """Gives back a session from :meth:`acquire_session`."""
        with self._cond:
            session.busy = False
            destroy = session.spare or session.destroy_on_release or self._closed
        if destroy:
            session.destroy()

    def close(self) -> None:
        """Closes the engine; sessions still generating are destroyed when they finish."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            while self._users:
                self._cond.wait()
            idle = []
            for session in list(self._sessions):
                if session.busy:
                    session.destroy_on_release = True
                else:
                    idle.append(session)
            handle, self._handle = self._handle, None
        for session in idle:
            session.destroy()
        # Sessions keep the model loaded: closing the engine first is allowed.
        if handle:
            self.lib.bonsai_engine_close(handle)
