"""ctypes declarations of the C API in ``bonsai/bonsai.h``.

Only layouts and signatures live here; :mod:`bonsai_lm._library` finds and loads
the shared library and applies :func:`declare` to it.

The option and parameter structs carry a ``struct_size``: the library copies
that many bytes over its own defaults, so this module may describe fewer
fields than a newer library knows. Structs the library *writes* (the defaults
returned by value, the generation result) get spare bytes at their end, so a
newer library with longer structs cannot write past them.
"""

from __future__ import annotations

import ctypes
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)

# Bytes appended to structs that the library fills in (see the module doc).
_SPARE_BYTES = 512

# bonsai_stop_reason
STOP_LENGTH = 0
STOP_TOKEN = 1
STOP_STRING = 2
STOP_CANCELLED = 3
STOP_CONTEXT_FULL = 4

# The library's own names of the stop reasons (bonsai::to_string, also the
# `stop_reason` of `bonsai run --json`).
STOP_REASON_NAMES = {
    STOP_LENGTH: "length",
    STOP_TOKEN: "stop token",
    STOP_STRING: "stop string",
    STOP_CANCELLED: "cancelled",
    STOP_CONTEXT_FULL: "context full",
}


class EngineOptions(Structure):
    """``bonsai_engine_options``."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("backend", c_char_p),
        ("n_threads", c_int32),
        ("n_ctx", c_int32),
        ("n_batch", c_int32),
        ("plugin_options", c_char_p),
        ("rope_scaling", c_char_p),
        ("rope_scale", c_float),
        ("rope_freq_base", c_float),
        ("yarn_orig_ctx", c_int32),
    ]


class ChatMessage(Structure):
    """``bonsai_chat_message``."""

    _fields_ = [("role", c_char_p), ("content", c_char_p)]


class GenerateParams(Structure):
    """``bonsai_generate_params``."""

    _fields_ = [
        ("struct_size", c_uint32),
        ("prompt", c_char_p),
        ("prompt_tokens", POINTER(c_int32)),
        ("n_prompt_tokens", c_size_t),
        ("chat", c_int32),
        ("n_predict", c_int32),
        ("temperature", c_float),
        ("top_k", c_int32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repeat_penalty", c_float),
        ("seed", c_uint64),
        ("has_seed", c_int32),
        ("stop_strings", POINTER(c_char_p)),
        ("n_stop_strings", c_size_t),
        ("messages", POINTER(ChatMessage)),
        ("n_messages", c_size_t),
        ("system_prompt", c_char_p),
        ("enable_thinking", c_int32),
        ("logprobs", c_int32),
        ("json_reply", c_int32),
        ("json_schema", c_char_p),
        ("draft_session", c_void_p),
        ("draft_ngram", c_int32),
        ("draft_max", c_int32),
        ("draft_min", c_int32),
        ("draft_p_min", c_float),
        ("draft_mtp", c_int32),
    ]


class GenerateResult(Structure):
    """``bonsai_generate_result`` followed by spare bytes (see the module doc)."""

    _fields_ = [
        ("text", c_void_p),  # char *, read with ctypes.string_at
        ("tokens", POINTER(c_int32)),
        ("n_tokens", c_size_t),
        ("stop_reason", c_int),
        ("load_ms", c_double),
        ("prompt_tokens", c_int32),
        ("prompt_ms", c_double),
        ("prompt_tps", c_double),
        ("gen_tokens", c_int32),
        ("gen_ms", c_double),
        ("gen_tps", c_double),
        ("_spare", c_char * _SPARE_BYTES),
    ]


def _with_spare(base: type[Structure]) -> type[Structure]:
    """A struct laid out as `base` with spare bytes after it (for by-value returns)."""
    return type(base.__name__ + "Return", (Structure,),
                {"_fields_": [("value", base), ("_spare", c_char * _SPARE_BYTES)]})


EngineOptionsReturn = _with_spare(EngineOptions)
GenerateParamsReturn = _with_spare(GenerateParams)

# int (*bonsai_text_fn)(void *user_data, const char *piece, size_t length)
TextFn = CFUNCTYPE(c_int, c_void_p, POINTER(c_char), c_size_t)

# name: (restype, argtypes)
_SIGNATURES = {
    "bonsai_engine_options_default": (EngineOptionsReturn, []),
    "bonsai_engine_open": (c_void_p, [c_char_p, POINTER(EngineOptions)]),
    "bonsai_engine_close": (None, [c_void_p]),
    "bonsai_engine_backend_name": (c_char_p, [c_void_p]),
    "bonsai_engine_mtp_layers": (c_int32, [c_void_p]),
    "bonsai_session_create": (c_void_p, [c_void_p]),
    "bonsai_session_destroy": (None, [c_void_p]),
    "bonsai_session_cancel": (None, [c_void_p]),
    "bonsai_session_reset": (None, [c_void_p]),
    "bonsai_generate_params_default": (GenerateParamsReturn, []),
    "bonsai_generate": (c_int, [c_void_p, POINTER(GenerateParams), TextFn, c_void_p,
                                POINTER(GenerateResult)]),
    "bonsai_generate_result_free": (None, [POINTER(GenerateResult)]),
    "bonsai_tokenize": (c_int32, [c_void_p, c_char_p, POINTER(c_int32), c_int32]),
    "bonsai_session_logprobs": (c_int32, [c_void_p, POINTER(c_float), c_size_t]),
    "bonsai_session_draft_counts": (c_int, [c_void_p, POINTER(c_int32), POINTER(c_int32)]),
    "bonsai_detokenize": (c_int32, [c_void_p, POINTER(c_int32), c_size_t, c_void_p, c_size_t]),
    "bonsai_set_log_level": (c_int, [c_char_p]),
    "bonsai_last_error": (c_char_p, []),
}


def declare(lib: ctypes.CDLL) -> list[str]:
    """Sets restype/argtypes of every C API function on `lib`.

    Returns the names the library lacks (an empty list for a usable library).
    """
    missing = []
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            function = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        function.restype = restype
        function.argtypes = argtypes
    return missing
