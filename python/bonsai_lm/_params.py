"""Checking what callers pass, before anything reaches the C API.

Every function here raises :class:`TypeError` for a value of the wrong type
and :class:`ValueError` for one out of range, with a message naming the
parameter. The ranges are those of ``bonsai serve`` (docs/server.md), so a
request behaves the same through either door.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

# What the server accepts; the C API itself takes any finite value.
TEMPERATURE_RANGE = (0.0, 2.0)
REPEAT_PENALTY_RANGE = (0.01, 10.0)
INT32_MAX = 2**31 - 1

ChatRoles = ("system", "developer", "user", "assistant")


@dataclass(frozen=True)
class Sampling:
    """Token selection, as ``bonsai_generate_params`` takes it."""

    temperature: float
    top_k: int
    top_p: float
    min_p: float
    repeat_penalty: float
    seed: Optional[int]  # as an unsigned 64-bit value; None: random


@dataclass(frozen=True)
class Draft:
    """Speculative decoding settings (docs/speculative.md), checked."""

    ngram: int = 0  # > 0: prompt lookup of the last `ngram` tokens
    max: int = 16  # most tokens proposed per step
    min: int = 1  # fewer proposals: a plain step
    p_min: float = 0.75  # the draft model (or MTP layer) stops below this probability
    mtp: bool = False  # propose with the model's own MTP layer (qwen35)


def draft(ngram: Any, max_tokens: Any, min_tokens: Any, p_min: Any, mtp: Any = False) -> Draft:
    """Checked draft settings."""
    if not isinstance(mtp, bool):
        raise TypeError(f"draft_mtp must be a bool, not {type(mtp).__name__}")
    checked = Draft(ngram=integer("draft_ngram", ngram, 0),
                    max=integer("draft_max", max_tokens, 1),
                    min=integer("draft_min", min_tokens, 1),
                    p_min=number("draft_p_min", p_min, 0.0, 1.0), mtp=mtp)
    if checked.min > checked.max:
        raise ValueError(f"draft_min ({checked.min}) must not exceed draft_max ({checked.max})")
    return checked


@dataclass(frozen=True)
class Request:
    """One checked generation request.

    Exactly one of `prompt_tokens` (a completion; text prompts are tokenized
    first) and `messages` (a chat) is set.
    """

    prompt_tokens: Optional[list[int]]
    messages: Optional[list[tuple[str, str]]]
    enable_thinking: bool
    max_tokens: Optional[int]  # None: until a stop or the end of the context
    sampling: Sampling
    stop: list[str]
    logprobs: bool
    # response_format: the reply is JSON (json_reply), valid under json_schema
    # (JSON text; None: any object).
    json_reply: bool = False
    json_schema: Optional[str] = None
    draft: Draft = Draft()  # what the Bonsai object was opened with


def _type_name(value: Any) -> str:
    return type(value).__name__


def c_string(name: str, value: str) -> bytes:
    """`value` as NUL-free UTF-8 for the C API."""
    if "\0" in value:
        raise ValueError(f"{name} contains a NUL character, which the C API cannot pass")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"{name} is not valid Unicode text: {error}") from None


def integer(name: str, value: Any, minimum: int, maximum: int = INT32_MAX) -> int:
    """An int in [minimum, maximum] (bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {_type_name(value)}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def number(name: str, value: Any, minimum: float, maximum: float) -> float:
    """A finite float in [minimum, maximum] (bool is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {_type_name(value)}")
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum:g} and {maximum:g}, got {value}")
    return float(value)


def max_tokens(value: Any) -> Optional[int]:
    """None (no limit) or a count >= 1."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value < 1:
        raise ValueError(f"max_tokens must be at least 1, got {value} (None: no limit, the "
                         f"reply ends at a stop token or the end of the context)")
    return integer("max_tokens", value, 1, INT32_MAX)


def sampling(temperature: Any, top_p: Any, top_k: Any, min_p: Any, repeat_penalty: Any,
             seed: Any, presence_penalty: Any, frequency_penalty: Any) -> Sampling:
    """Checks the sampling parameters; penalties the C API lacks must be 0."""
    for name, value in (("presence_penalty", presence_penalty),
                        ("frequency_penalty", frequency_penalty)):
        if number(name, value, -2.0, 2.0) != 0.0:
            raise ValueError(f"{name} is not supported yet (the C API has no such parameter); "
                             f"use repeat_penalty, or leave {name} at 0")
    if seed is not None:
        seed = integer("seed", seed, -(2**63), 2**64 - 1) % 2**64
    return Sampling(
        temperature=number("temperature", temperature, *TEMPERATURE_RANGE),
        top_k=integer("top_k", top_k, 0),
        top_p=number("top_p", top_p, 0.0, 1.0),
        min_p=number("min_p", min_p, 0.0, 1.0),
        repeat_penalty=number("repeat_penalty", repeat_penalty, *REPEAT_PENALTY_RANGE),
        seed=seed,
    )


def stop_strings(stop: Any) -> list[str]:
    """None, a string, or a list of non-empty strings."""
    if stop is None:
        return []
    items = [stop] if isinstance(stop, str) else stop
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise TypeError(f"stop must be a string or a list of strings, not {_type_name(stop)}")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"stop[{i}] must be a string, not {_type_name(item)}")
        if not item:
            raise ValueError(f"stop[{i}] is an empty string")
        c_string(f"stop[{i}]", item)
        out.append(item)
    return out


def _message_content(content: Any, where: str) -> str:
    """A message's text: a string, None, or a list of {"type": "text"} parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        c_string(where, content)
        return content
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        text = []
        for i, part in enumerate(content):
            if not (isinstance(part, dict) and part.get("type") == "text"
                    and isinstance(part.get("text"), str)):
                raise ValueError(f"{where}[{i}] is not {{'type': 'text', 'text': ...}}; "
                                 f"bonsai takes text only")
            text.append(part["text"])
        return _message_content("".join(text), where)
    raise TypeError(f"{where} must be a string or a list of text parts, not "
                    f"{_type_name(content)}")


def chat_messages(messages: Any) -> list[tuple[str, str]]:
    """OpenAI-style messages as (role, content) pairs; "developer" becomes "system"."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a list of {{'role': ..., 'content': ...}} dicts, not "
                        f"{_type_name(messages)}")
    if not messages:
        raise ValueError("messages is empty")
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise TypeError(f"{where} must be a dict, not {_type_name(message)}")
        for key in message:
            if key in ("tool_calls", "tool_call_id", "function_call"):
                raise ValueError(f"{where} has '{key}': tool calls are not supported yet")
            if key not in ("role", "content", "name"):
                raise ValueError(f"{where} has an unknown key {key!r} (known: role, content, "
                                 f"name)")
        role = message.get("role")
        if not isinstance(role, str) or role not in ChatRoles:
            raise ValueError(f"{where}['role'] must be one of {', '.join(ChatRoles)}, not "
                             f"{role!r}")
        out.append(("system" if role == "developer" else role,
                    _message_content(message.get("content"), f"{where}['content']")))
    return out


def completion_prompt(prompt: Any) -> Union[str, list[int]]:
    """A prompt string, or a list of token ids (each checked here for type and sign;
    the library checks them against the vocabulary)."""
    if isinstance(prompt, str):
        if not prompt:
            raise ValueError("prompt is empty")
        c_string("prompt", prompt)
        return prompt
    if isinstance(prompt, Sequence) and not isinstance(prompt, (bytes, bytearray)):
        if not prompt:
            raise ValueError("prompt is an empty list of token ids")
        return [integer(f"prompt[{i}]", t, 0) for i, t in enumerate(prompt)]
    raise TypeError(f"prompt must be a string or a list of token ids, not {_type_name(prompt)}")


def refuse_unsupported(tools: Any, tool_choice: Any) -> None:
    """Tools: not supported yet in-process (``bonsai serve`` has them)."""
    if tools is not None:
        raise ValueError("tools are not supported yet by the Python package (bonsai serve "
                         "supports them: docs/server.md, Tools); pass tools=None")
    if tool_choice is not None:
        raise ValueError("tool_choice is not supported yet by the Python package; pass "
                         "tool_choice=None")


def response_format(value: Any) -> tuple[bool, Optional[str]]:
    """OpenAI's response_format as (json_reply, json_schema text): None or {"type": "text"},
    {"type": "json_object"}, or {"type": "json_schema", "json_schema": {"schema": ...}}
    (docs/structured-output.md). The schema itself is checked by the library."""
    if value is None:
        return False, None
    if not isinstance(value, Mapping):
        raise TypeError(f"response_format must be a dict, not {_type_name(value)}")
    kind = value.get("type")
    extra = set(value) - {"type", "json_schema"}
    if extra:
        raise ValueError(f"response_format has unknown key {sorted(extra)[0]!r}")
    if kind == "text":
        return False, None
    if kind == "json_object":
        return True, None
    if kind != "json_schema":
        raise ValueError(f"response_format['type'] must be 'text', 'json_object' or "
                         f"'json_schema', not {kind!r}")
    spec = value.get("json_schema")
    if not isinstance(spec, Mapping) or "schema" not in spec:
        raise ValueError("response_format['json_schema'] must be a dict holding 'schema'")
    unknown = set(spec) - {"name", "description", "schema", "strict"}
    if unknown:
        raise ValueError(f"response_format['json_schema'] has unknown key {sorted(unknown)[0]!r}")
    schema = spec["schema"]
    if not isinstance(schema, (Mapping, bool)):
        raise TypeError(f"response_format['json_schema']['schema'] must be a dict, not "
                        f"{_type_name(schema)}")
    # Key order is kept: the reply writes properties in the schema's order.
    return True, c_string("response_format schema", json.dumps(schema)).decode("utf-8")


def chat_logprobs(logprobs: Any, top_logprobs: Any) -> bool:
    """Chat: logprobs is a bool; top_logprobs cannot be served (the C API gives only the
    chosen token's log probability)."""
    if logprobs is None:
        logprobs = False
    if not isinstance(logprobs, bool):
        raise TypeError(f"logprobs must be True or False, not {_type_name(logprobs)}")
    if top_logprobs is not None and integer("top_logprobs", top_logprobs, 0, 20) != 0:
        raise ValueError("top_logprobs is not supported: the C API gives the log probability "
                         "of the chosen token only")
    return logprobs


def completion_logprobs(logprobs: Any) -> bool:
    """Completions: None/False, True or 0 (the chosen tokens' log probabilities); a count of
    alternatives (> 0) cannot be served."""
    if logprobs is None or logprobs is False:
        return False
    if logprobs is True:
        return True
    if integer("logprobs", logprobs, 0, 20) != 0:
        raise ValueError("logprobs > 0 asks for alternatives (top_logprobs), which are not "
                         "supported: the C API gives the log probability of the chosen token "
                         "only; pass logprobs=True or 0")
    return True
