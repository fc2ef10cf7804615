"""The think block of a chat reply, split from its answer as ``bonsai serve`` does.

A reply that opens with ``<think> ... </think>`` (Qwen3 and Bonsai with
thinking on) gives ``reasoning_content`` (the block, without its tags) and
``content`` (the rest). Blank lines around the block are dropped; a tag cut
across streamed pieces is held back until it is whole; a block never closed
is all reasoning; ``<think>`` later in a reply is ordinary text.
"""

from __future__ import annotations

_OPEN = "<think>"
_CLOSE = "</think>"
_SPACE = " \t\r\n"


def _partial_tag_at_end(text: str, tag: str) -> int:
    """How many characters at the end of `text` could begin `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class ReasoningSplit:
    """Feeds pieces of a reply; each call returns the (reasoning, content) it releases."""

    def __init__(self) -> None:
        self._state = "start"
        self._held = ""
        self._skip_space = False

    def feed(self, text: str) -> tuple[str, str]:
        self._held += text
        return self._run(at_end=False)

    def finish(self) -> tuple[str, str]:
        return self._run(at_end=True)

    def _run(self, at_end: bool) -> tuple[str, str]:
        reasoning, content = "", ""
        while True:
            if self._skip_space:
                self._held = self._held.lstrip(_SPACE)
                if not self._held:
                    return reasoning, content
                self._skip_space = False
            if self._state == "start":
                rest = self._held.lstrip(_SPACE)
                if rest.startswith(_OPEN):
                    self._held = rest[len(_OPEN):]
                    self._state = "reasoning"
                    self._skip_space = True
                    continue
                if not at_end and _OPEN.startswith(rest):
                    return reasoning, content  # blank, or the start of <think>: wait
                self._state = "content"
                continue
            if self._state == "reasoning":
                close = self._held.find(_CLOSE)
                if close >= 0:
                    reasoning += self._held[:close]
                    self._held = self._held[close + len(_CLOSE):]
                    self._state = "content"
                    self._skip_space = True
                    continue
                keep = 0 if at_end else _partial_tag_at_end(self._held, _CLOSE)
                reasoning += self._held[:len(self._held) - keep]
                self._held = self._held[len(self._held) - keep:]
                return reasoning, content
            content += self._held
            self._held = ""
            return reasoning, content


def split_reply(text: str) -> tuple[str, str]:
    """(reasoning, content) of a whole reply."""
    split = ReasoningSplit()
    r1, c1 = split.feed(text)
    r2, c2 = split.finish()
    return r1 + r2, c1 + c2
