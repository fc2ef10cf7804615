"""OpenAI-shaped dicts: completions, chat completions and their stream chunks.

The shapes follow OpenAI's API (and ``bonsai serve``): a chat reply's think
block goes in ``reasoning_content``, the rest in ``content``. Beside OpenAI's fields,
each choice has ``stop_reason``, the library's own reason ("length", "stop
token", "stop string", "cancelled", "context full"), and each response (the
last chunk of a stream) has ``timings``.
"""

from __future__ import annotations

import codecs
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from . import _capi
from ._generate import Outcome
from ._reasoning import split_reply


def finish_reason(stop_reason: int) -> str:
    """OpenAI's finish_reason for the library's stop reason.

    A stop token or stop string is "stop"; the token limit or the end of the
    context is "length". A cancelled generation is "cancelled", which OpenAI
    does not have (``bonsai run --json`` says the same): nothing is hidden.
    """
    if stop_reason in (_capi.STOP_TOKEN, _capi.STOP_STRING):
        return "stop"
    if stop_reason in (_capi.STOP_LENGTH, _capi.STOP_CONTEXT_FULL):
        return "length"
    return "cancelled"


def stop_reason_name(stop_reason: int) -> str:
    return _capi.STOP_REASON_NAMES.get(stop_reason, f"unknown ({stop_reason})")


@dataclass
class Header:
    """The fields every response and chunk of one request share."""

    chat: bool
    model: str
    id: str = ""
    created: int = field(default_factory=lambda: int(time.time()))

    def __post_init__(self) -> None:
        if not self.id:
            self.id = f"{'chatcmpl' if self.chat else 'cmpl'}-{secrets.token_hex(12)}"

    def base(self, object_name: str) -> dict[str, Any]:
        return {"id": self.id, "object": object_name, "created": self.created,
                "model": self.model}


def usage(outcome: Outcome) -> dict[str, int]:
    completion = len(outcome.tokens)
    return {"prompt_tokens": outcome.prompt_tokens, "completion_tokens": completion,
            "total_tokens": outcome.prompt_tokens + completion}


TokenBytes = Callable[[int], bytes]


def chat_logprobs(outcome: Outcome, token_bytes: TokenBytes) -> Optional[dict[str, Any]]:
    """``choices[0].logprobs`` of a chat completion: one entry per generated token.

    ``top_logprobs`` is always empty: the C API gives the log probability of
    the chosen token only.
    """
    if outcome.logprobs is None:
        return None
    content = []
    for token, logprob in zip(outcome.tokens, outcome.logprobs):
        raw = token_bytes(token)
        content.append({"token": raw.decode("utf-8", "replace"), "logprob": logprob,
                        "bytes": list(raw), "top_logprobs": []})
    return {"content": content, "refusal": None}


def completion_logprobs(outcome: Outcome, token_bytes: TokenBytes) -> Optional[dict[str, Any]]:
    """``choices[0].logprobs`` of a (legacy) completion.

    ``text_offset`` counts characters of the generated text before each token
    (a token that ends inside a character counts once the character is whole);
    ``top_logprobs`` is None: the C API has no alternatives.
    """
    if outcome.logprobs is None:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    tokens, offsets, chars = [], [], 0
    for token in outcome.tokens:
        raw = token_bytes(token)
        offsets.append(chars)
        chars += len(decoder.decode(raw))
        tokens.append(raw.decode("utf-8", "replace"))
    return {"tokens": tokens, "token_logprobs": list(outcome.logprobs[:len(tokens)]),
            "top_logprobs": None, "text_offset": offsets}


def response(header: Header, outcome: Outcome, token_bytes: TokenBytes) -> dict[str, Any]:
    """A whole ``chat.completion`` or ``text_completion``."""
    choice: dict[str, Any] = {"index": 0}
    if header.chat:
        reasoning, content = split_reply(outcome.text)
        choice["message"] = {"role": "assistant", "content": content}
        if reasoning:
            choice["message"]["reasoning_content"] = reasoning
        choice["logprobs"] = chat_logprobs(outcome, token_bytes)
    else:
        choice["text"] = outcome.text
        choice["logprobs"] = completion_logprobs(outcome, token_bytes)
    choice["finish_reason"] = finish_reason(outcome.stop_reason)
    choice["stop_reason"] = stop_reason_name(outcome.stop_reason)
    body = header.base("chat.completion" if header.chat else "text_completion")
    body["choices"] = [choice]
    body["usage"] = usage(outcome)
    body["timings"] = outcome.timings
    return body


def chunk(header: Header, text: Optional[str], *, first: bool = False,
          reasoning: str = "") -> dict[str, Any]:
    """A stream chunk with a piece of text, or of a chat reply's reasoning (the first
    chat chunk names the role)."""
    choice: dict[str, Any] = {"index": 0}
    if header.chat:
        delta: dict[str, Any] = {"role": "assistant"} if first else {}
        if reasoning:
            delta["reasoning_content"] = reasoning
        if text is not None:
            delta["content"] = text
        choice["delta"] = delta
    else:
        choice["text"] = text or ""
    choice["logprobs"] = None
    choice["finish_reason"] = None
    body = header.base("chat.completion.chunk" if header.chat else "text_completion")
    body["choices"] = [choice]
    return body


def final_chunk(header: Header, outcome: Outcome, token_bytes: TokenBytes) -> dict[str, Any]:
    """The last chunk: no text, the finish reason, the usage and timings, and the log
    probabilities of the whole reply when they were asked for (the C API gives them once
    the generation is over)."""
    body = chunk(header, None)
    choice = body["choices"][0]
    if header.chat:
        choice["logprobs"] = chat_logprobs(outcome, token_bytes)
    else:
        choice["logprobs"] = completion_logprobs(outcome, token_bytes)
    choice["finish_reason"] = finish_reason(outcome.stop_reason)
    choice["stop_reason"] = stop_reason_name(outcome.stop_reason)
    body["usage"] = usage(outcome)
    body["timings"] = outcome.timings
    return body
