"""The :class:`Bonsai` class: a model opened through libbonsai_host's C API."""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Mapping, Sequence
from ctypes import byref, c_int32
from dataclasses import replace
from typing import Any, Optional, Union

from . import _capi, _library, _openai, _params
from ._closing import ClosesOnExit
from ._engine import Engine, last_error
from ._stream import CompletionStream, run_in_worker
from .errors import BonsaiError

Message = Mapping[str, Any]
PathLike = Union[str, "os.PathLike[str]"]

# The library's sampling defaults (SamplingParams in bonsai/engine.hpp).
DEFAULT_TEMPERATURE = 0.8
DEFAULT_TOP_P = 0.95
DEFAULT_TOP_K = 40
DEFAULT_MIN_P = 0.05


def _plugin_options(options: Union[None, str, Mapping[str, Any]]) -> Optional[bytes]:
    """The plugin options as "key=value;..." text, from a string or a mapping."""
    if options is None:
        return None
    if isinstance(options, Mapping):
        parts = []
        for key, value in options.items():
            text = f"{key}={value}"
            if ";" in text or "=" in str(key):
                raise ValueError(f"plugin_options entry {text!r} cannot hold ';' (or '=' in "
                                 f"the key)")
            parts.append(text)
        options = ";".join(parts)
    if not isinstance(options, str):
        raise TypeError(f"plugin_options must be a string or a dict, not "
                        f"{type(options).__name__}")
    return _params.c_string("plugin_options", options)


class Bonsai(ClosesOnExit):
    """A Bonsai (Qwen3) GGUF model, ready to generate.

    One object may be used from several threads at once: each thread gets its
    own session (KV cache) and generates in parallel with the others, the GIL
    released while the library computes.

    Args:
        model_path: the GGUF file.
        backend: "auto" (CUDA if usable, else CPU), "cpu", "cuda", a plugin
            ``.so`` path, or a comma list tried in order.
        n_ctx: context window of every session; 0 = the model's training
            context; None = the library's default (4096, clamped to the model's).
        n_threads: CPU worker threads of the plugin; None or 0 = its choice.
        n_batch: most prompt tokens evaluated in one step; None = the library's
            default.
        plugin_options: plugin options, "key=value;..." or a dict, e.g.
            ``{"kernels": "reference"}`` for the CPU plugin's exact kernels.
        rope_scaling, rope_scale, rope_freq_base, yarn_orig_ctx: RoPE
            overrides as llama.cpp's flags (None keeps the file's).
        draft_model, draft_ngram, draft_max, draft_min, draft_p_min, draft_mtp:
            speculative decoding (docs/speculative.md): a draft model of the
            same vocabulary (opened with the same options), or with
            `draft_mtp` the model's own multi-token-prediction layer (qwen35),
            and/or prompt lookup of the last `draft_ngram` tokens propose
            tokens that the model verifies in one step; the replies are the
            model's own.
    """

    def __init__(self, model_path: PathLike, backend: str = "auto", *,
                 n_ctx: Optional[int] = None, n_threads: Optional[int] = None,
                 n_batch: Optional[int] = None,
                 plugin_options: Union[None, str, Mapping[str, Any]] = None,
                 rope_scaling: Optional[str] = None, rope_scale: Optional[float] = None,
                 rope_freq_base: Optional[float] = None,
                 yarn_orig_ctx: Optional[int] = None,
                 draft_model: Optional[PathLike] = None, draft_ngram: int = 0,
                 draft_max: int = 16, draft_min: int = 1, draft_p_min: float = 0.75,
                 draft_mtp: bool = False) -> None:
        self._engine: Optional[Engine] = None
        self._draft_engine: Optional[Engine] = None
        self._draft = _params.draft(draft_ngram, draft_max, draft_min, draft_p_min, draft_mtp)
        if draft_mtp and draft_model is not None:
            raise ValueError("draft_model and draft_mtp exclude each other; choose one")
        self._vocab_bytes: dict[int, bytes] = {}
        self._vocab_lock = threading.Lock()
        self.model_path = os.fspath(model_path)
        if not isinstance(backend, str):
            raise TypeError(f"backend must be a string, not {type(backend).__name__}")
        # Kept alive for the bonsai_engine_open call.
        path = os.fsencode(self.model_path)
        backend_c = _params.c_string("backend", backend)
        plugin_c = _plugin_options(plugin_options)
        scaling_c = None
        if rope_scaling is not None:
            if rope_scaling not in ("none", "linear", "yarn"):
                raise ValueError(f"rope_scaling must be 'none', 'linear' or 'yarn', not "
                                 f"{rope_scaling!r}")
            scaling_c = rope_scaling.encode()

        lib = _library.load()
        options = lib.bonsai_engine_options_default().value
        options.struct_size = ctypes.sizeof(_capi.EngineOptions)
        options.backend = backend_c
        if n_ctx is not None:
            options.n_ctx = _params.integer("n_ctx", n_ctx, 0)
        if n_threads is not None:
            options.n_threads = _params.integer("n_threads", n_threads, 0)
        if n_batch is not None:
            options.n_batch = _params.integer("n_batch", n_batch, 1)
        options.plugin_options = plugin_c
        options.rope_scaling = scaling_c
        if rope_scale is not None:
            options.rope_scale = _params.number("rope_scale", rope_scale, 1.0, 1e6)
        if rope_freq_base is not None:
            options.rope_freq_base = _params.number("rope_freq_base", rope_freq_base, 1e-6, 1e12)
        if yarn_orig_ctx is not None:
            options.yarn_orig_ctx = _params.integer("yarn_orig_ctx", yarn_orig_ctx, 1)
        handle = lib.bonsai_engine_open(path, byref(options))
        if not handle:
            raise BonsaiError(last_error(lib, f"could not open {self.model_path}"))
        self._engine = Engine(lib, handle)
        if draft_mtp and lib.bonsai_engine_mtp_layers(handle) < 1:
            self._engine.close()
            raise BonsaiError(f"{self.model_path}: draft_mtp needs a model with an MTP layer "
                              "(a qwen35 file whose nextn_predict_layers is at least 1)")
        if draft_model is not None:
            draft_path = os.fspath(draft_model)
            draft_handle = lib.bonsai_engine_open(os.fsencode(draft_path), byref(options))
            if not draft_handle:
                message = last_error(lib, f"could not open {draft_path}")
                self._engine.close()
                raise BonsaiError(f"the draft model: {message}")
            self._draft_engine = Engine(lib, draft_handle)

    # ---- lifetime -------------------------------------------------------

    def close(self) -> None:
        """Releases the model. Generations still running finish first; later calls raise
        :class:`BonsaiError`. Calling it again does nothing."""
        if self._engine is not None:
            self._engine.close()
        if self._draft_engine is not None:
            self._draft_engine.close()


    def _live_engine(self) -> Engine:
        if self._engine is None or self._engine.closed:
            raise BonsaiError("the model is closed (Bonsai.close() was called)")
        return self._engine

    @property
    def backend(self) -> str:
        """The backend the library chose ("cpu", "cuda", ...)."""
        return self._live_engine().backend_name

    def __repr__(self) -> str:
        state = "closed" if self._engine is None or self._engine.closed else \
            f"backend={self._engine.backend_name!r}"
        return f"Bonsai({self.model_path!r}, {state})"

    # ---- tokens ---------------------------------------------------------

    def tokenize(self, text: Union[str, bytes]) -> list[int]:
        """The token ids of `text`; control-token text such as ``<|im_start|>`` becomes
        its control token, as in a completion prompt."""
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, not {type(text).__name__}")
        encoded = _params.c_string("text", text)
        engine = self._live_engine()
        with engine.use() as handle:
            lib = engine.lib
            n = lib.bonsai_tokenize(handle, encoded, None, 0)
            if n < 0:
                raise BonsaiError(last_error(lib, "bonsai_tokenize failed"))
            ids = (c_int32 * max(n, 1))()
            if n and lib.bonsai_tokenize(handle, encoded, ids, n) != n:
                raise BonsaiError(last_error(lib, "bonsai_tokenize changed its answer"))
        return list(ids[:n])

    def _detokenize_bytes(self, tokens: Sequence[int]) -> bytes:
        ids_list = [_params.integer(f"tokens[{i}]", t, 0) for i, t in enumerate(tokens)]
        engine = self._live_engine()
        ids = (c_int32 * max(len(ids_list), 1))(*ids_list)
        with engine.use() as handle:
            lib = engine.lib
            n = lib.bonsai_detokenize(handle, ids, len(ids_list), None, 0)
            if n < 0:
                raise BonsaiError(last_error(lib, "bonsai_detokenize failed"))
            out = ctypes.create_string_buffer(n + 1)
            if lib.bonsai_detokenize(handle, ids, len(ids_list), out, n + 1) != n:
                raise BonsaiError(last_error(lib, "bonsai_detokenize changed its answer"))
        return out.raw[:n]

    def detokenize(self, tokens: Sequence[int]) -> str:
        """The text of `tokens`. Bytes that do not form whole UTF-8 characters (a list cut
        inside a character) become U+FFFD."""
        return self._detokenize_bytes(tokens).decode("utf-8", "replace")

    def _token_bytes(self, token: int) -> bytes:
        """The bytes of one token (cached: logprobs ask for every generated token)."""
        with self._vocab_lock:
            cached = self._vocab_bytes.get(token)
        if cached is None:
            cached = self._detokenize_bytes([token])
            with self._vocab_lock:
                self._vocab_bytes[token] = cached
        return cached

    # ---- generation -----------------------------------------------------

    def _run(self, request: _params.Request, header: _openai.Header,
             stream: bool) -> Union[dict[str, Any], CompletionStream]:
        engine = self._live_engine()
        draft_engine = self._draft_engine
        request = replace(request, draft=self._draft)
        if stream:
            return CompletionStream(engine, request, header, self._token_bytes, owner=self,
                                    draft_engine=draft_engine)
        outcome = run_in_worker(engine, request, draft_engine)
        return _openai.response(header, outcome, self._token_bytes)

    def create_completion(
        self, prompt: Union[str, Sequence[int]], max_tokens: Optional[int] = 16,
        temperature: float = DEFAULT_TEMPERATURE, top_p: float = DEFAULT_TOP_P,
        min_p: float = DEFAULT_MIN_P, stop: Union[None, str, Sequence[str]] = None,
        stream: bool = False, seed: Optional[int] = None, repeat_penalty: float = 1.0,
        top_k: int = DEFAULT_TOP_K, logprobs: Union[None, bool, int] = None,
        presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
        response_format: Optional[Mapping[str, Any]] = None,
    ) -> Union[dict[str, Any], CompletionStream]:
        """Continues `prompt` (text, or a list of token ids) as is.

        Returns a ``text_completion`` dict, or with ``stream=True`` a
        :class:`CompletionStream` of chunks. ``max_tokens=None`` runs to a stop
        token or the end of the context; a limit past the context's end stops
        there (finish_reason "length"). ``temperature=0`` is greedy.
        ``logprobs=True`` (or 0) gives each generated token's log probability.
        ``response_format`` asks for JSON, as in :meth:`create_chat_completion`.
        """
        checked = _params.completion_prompt(prompt)
        json_reply, json_schema = _params.response_format(response_format)
        request = _params.Request(
            prompt_tokens=checked if isinstance(checked, list) else None,
            messages=None, enable_thinking=True,
            max_tokens=_params.max_tokens(max_tokens),
            sampling=_params.sampling(temperature, top_p, top_k, min_p, repeat_penalty, seed,
                                      presence_penalty, frequency_penalty),
            stop=_params.stop_strings(stop),
            logprobs=_params.completion_logprobs(logprobs),
            json_reply=json_reply, json_schema=json_schema,
        )
        if isinstance(checked, str):
            # Tokenized here so that the usage counts the whole prompt.
            request = _replace_prompt(request, self.tokenize(checked))
        return self._run(request, _openai.Header(chat=False, model=self.model_path),
                         _bool("stream", stream))

    __call__ = create_completion

    def create_chat_completion(
        self, messages: Sequence[Message], max_tokens: Optional[int] = None,
        temperature: float = DEFAULT_TEMPERATURE, top_p: float = DEFAULT_TOP_P,
        top_k: int = DEFAULT_TOP_K, min_p: float = DEFAULT_MIN_P,
        stop: Union[None, str, Sequence[str]] = None, stream: bool = False,
        seed: Optional[int] = None, repeat_penalty: float = 1.0,
        logprobs: Optional[bool] = False, top_logprobs: Optional[int] = None,
        tools: Optional[Sequence[Any]] = None, tool_choice: Any = None,
        response_format: Optional[Mapping[str, Any]] = None, enable_thinking: bool = True,
        presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
    ) -> Union[dict[str, Any], CompletionStream]:
        """Answers a conversation, formatted with the model's chat template.

        `messages` are ``{"role": "system" | "developer" | "user" |
        "assistant", "content": str}`` dicts (content may be a list of
        ``{"type": "text", "text": ...}`` parts). Returns a ``chat.completion``
        dict, or with ``stream=True`` a :class:`CompletionStream` of
        ``chat.completion.chunk`` dicts. ``enable_thinking=False`` pre-fills an
        empty ``<think></think>`` block so Qwen3 answers directly.
        ``response_format`` ``{"type": "json_object"}`` or ``{"type":
        "json_schema", "json_schema": {"schema": ...}}`` makes the reply JSON
        by constrained decoding (docs/structured-output.md); a schema outside
        the supported subset raises :class:`BonsaiError` naming the keyword.
        `tools` and `tool_choice` are not supported yet and raise
        :class:`ValueError`.
        """
        _params.refuse_unsupported(tools, tool_choice)
        json_reply, json_schema = _params.response_format(response_format)
        request = _params.Request(
            prompt_tokens=None, messages=_params.chat_messages(messages),
            enable_thinking=_bool("enable_thinking", enable_thinking),
            max_tokens=_params.max_tokens(max_tokens),
            sampling=_params.sampling(temperature, top_p, top_k, min_p, repeat_penalty, seed,
                                      presence_penalty, frequency_penalty),
            stop=_params.stop_strings(stop),
            logprobs=_params.chat_logprobs(logprobs, top_logprobs),
            json_reply=json_reply, json_schema=json_schema,
        )
        return self._run(request, _openai.Header(chat=True, model=self.model_path),
                         _bool("stream", stream))


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__}")
    return value


def _replace_prompt(request: _params.Request, tokens: list[int]) -> _params.Request:
    if not tokens:
        raise ValueError("prompt has no tokens")
    return replace(request, prompt_tokens=tokens)


def set_log_level(level: str) -> None:
    """The least severe level libbonsai_host logs to stderr, for the whole process:
    "trace", "debug", "info", "warn" (the default), "error" or "off"."""
    lib = _library.load()
    if lib.bonsai_set_log_level(_params.c_string("level", level)) != 0:
        raise ValueError(last_error(lib, f"unknown log level {level!r}"))
