"""Errors: Python exceptions with clear messages, never a crash."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import bonsai_lm
from conftest import MODEL, open_model, user


def test_a_missing_model_file_names_it():
    with pytest.raises(bonsai_lm.BonsaiError, match="no-such-model.gguf"):
        bonsai_lm.Bonsai("/nonexistent/no-such-model.gguf", backend="cpu")


def test_a_file_that_is_not_a_model(tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"this is not a GGUF file at all" * 10)
    with pytest.raises(bonsai_lm.BonsaiError, match="bogus.gguf"):
        bonsai_lm.Bonsai(bogus, backend="cpu")


def test_an_unknown_backend_names_it():
    with pytest.raises(bonsai_lm.BonsaiError, match="nosuchbackend"):
        bonsai_lm.Bonsai(MODEL, backend="nosuchbackend")


@pytest.mark.parametrize("options, error, match", [
    ({"n_ctx": -1}, ValueError, "n_ctx"),
    ({"n_threads": "4"}, TypeError, "n_threads"),
    ({"n_batch": 0}, ValueError, "n_batch"),
    ({"rope_scaling": "cubic"}, ValueError, "rope_scaling"),
    ({"plugin_options": 3}, TypeError, "plugin_options"),
])
def test_bad_engine_options(options, error, match):
    with pytest.raises(error, match=match):
        bonsai_lm.Bonsai(MODEL, backend="cpu", **options)


def test_a_bad_plugin_option_is_the_plugins_message():
    # The plugin reads its options when a session's context is made: on first use.
    with bonsai_lm.Bonsai(MODEL, backend="cpu", plugin_options="kernels=fastest-please") as model:
        for _ in range(2):
            with pytest.raises(bonsai_lm.BonsaiError, match="unknown kernel set 'fastest-please'"):
                model.create_completion("Hello", max_tokens=2)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"max_tokens": -1}, ValueError, "max_tokens must be at least 1"),
    ({"max_tokens": 0}, ValueError, "max_tokens"),
    ({"max_tokens": 2.5}, TypeError, "max_tokens"),
    ({"temperature": 2.5}, ValueError, "temperature must be between 0 and 2"),
    ({"temperature": -0.1}, ValueError, "temperature"),
    ({"temperature": float("nan")}, ValueError, "temperature"),
    ({"temperature": "hot"}, TypeError, "temperature"),
    ({"top_p": 1.5}, ValueError, "top_p"),
    ({"top_k": -3}, ValueError, "top_k"),
    ({"min_p": -0.5}, ValueError, "min_p"),
    ({"repeat_penalty": 0}, ValueError, "repeat_penalty"),
    ({"seed": 2**64}, ValueError, "seed"),
    ({"stop": ""}, ValueError, "empty"),
    ({"stop": ["ok", 3]}, TypeError, r"stop\[1\]"),
    ({"stream": "yes"}, TypeError, "stream"),
    ({"presence_penalty": 0.5}, ValueError, "presence_penalty is not supported"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}]}, ValueError,
     "tools are not supported yet by the Python package"),
    ({"tool_choice": "auto"}, ValueError, "not supported yet"),
    ({"response_format": {"type": "yaml"}}, ValueError, "'text', 'json_object' or 'json_schema'"),
    ({"response_format": {"type": "json_schema"}}, ValueError, "holding 'schema'"),
    ({"response_format": "json"}, TypeError, "response_format must be a dict"),
    ({"logprobs": 1}, TypeError, "logprobs"),
    ({"top_logprobs": 3}, ValueError, "top_logprobs is not supported"),
])
def test_bad_chat_parameters(llm, kwargs, error, match):
    with pytest.raises(error, match=match):
        llm.create_chat_completion(user("Hello"), **kwargs)


@pytest.mark.parametrize("messages, error, match", [
    ([], ValueError, "messages is empty"),
    ("Hello", TypeError, "messages must be a list"),
    ([{"role": "robot", "content": "beep"}], ValueError, r"messages\[0\]\['role'\]"),
    ([{"content": "no role"}], ValueError, "role"),
    ([{"role": "tool", "content": "42", "tool_call_id": "x"}], ValueError,
     "tool calls are not supported yet"),
    ([{"role": "user", "content": "hi", "colour": "red"}], ValueError, "unknown key 'colour'"),
    ([{"role": "user", "content": 42}], TypeError, "content"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], ValueError,
     "text only"),
    ([{"role": "user", "content": "nul \0 inside"}], ValueError, "NUL"),
    (["just a string"], TypeError, r"messages\[0\] must be a dict"),
])
def test_bad_messages(llm, messages, error, match):
    with pytest.raises(error, match=match):
        llm.create_chat_completion(messages)


@pytest.mark.parametrize("prompt, kwargs, error, match", [
    ("", {}, ValueError, "prompt is empty"),
    ([], {}, ValueError, "empty list"),
    ([1, -2], {}, ValueError, r"prompt\[1\]"),
    (3.5, {}, TypeError, "prompt"),
    ("x", {"logprobs": 5}, ValueError, "top_logprobs"),
    ("x", {"frequency_penalty": 1.0}, ValueError, "frequency_penalty is not supported"),
])
def test_bad_completion_parameters(llm, prompt, kwargs, error, match):
    with pytest.raises(error, match=match):
        llm.create_completion(prompt, **kwargs)


def test_a_token_outside_the_vocabulary_is_the_librarys_error(llm):
    with pytest.raises(bonsai_lm.BonsaiError, match="99999"):
        llm.create_completion([1, 2, 99999], max_tokens=2)
    with pytest.raises(bonsai_lm.BonsaiError):
        llm.detokenize([99999])
    # The model still works.
    assert llm.create_completion([1, 2, 3], max_tokens=2, temperature=0)["choices"]


def test_an_error_in_a_stream_is_raised_by_next(llm):
    stream = llm.create_completion([1, 2, 99999], max_tokens=2, stream=True)
    with pytest.raises(bonsai_lm.BonsaiError, match="99999"):
        list(stream)


def test_closed_model():
    model = open_model()
    assert model.tokenize("a  b")
    model.close()
    model.close()  # twice: nothing
    with pytest.raises(bonsai_lm.BonsaiError, match="closed"):
        model.create_chat_completion(user("Hello"), max_tokens=2)
    with pytest.raises(bonsai_lm.BonsaiError, match="closed"):
        model.tokenize("Hello")
    with open_model() as other:
        stream = other.create_completion("Hello", max_tokens=4, stream=True)
    with pytest.raises(bonsai_lm.BonsaiError, match="closed"):
        next(stream)


def test_close_while_a_stream_runs():
    model = open_model()
    stream = model.create_completion("Count:", max_tokens=64, temperature=0, stream=True)
    first = next(stream)
    model.close()  # the running generation finishes; its session goes afterwards
    rest = list(stream)
    assert first["choices"][0]["finish_reason"] is None
    assert rest[-1]["choices"][0]["finish_reason"] == "length"


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environment, timeout=60)


def test_bonsai_library_that_does_not_exist():
    result = run_python(
        "import bonsai_lm\n"
        "try:\n"
        "    bonsai_lm.Bonsai('x.gguf')\n"
        "except ImportError as e:\n"
        "    assert isinstance(e, bonsai_lm.LibraryNotFoundError), type(e)\n"
        "    print(e)\n",
        BONSAI_LIBRARY="/nowhere/libbonsai_host.so")
    assert result.returncode == 0, result.stderr
    assert "$BONSAI_LIBRARY is '/nowhere/libbonsai_host.so', but that is no such file" in \
        result.stdout


def test_bonsai_library_that_is_not_a_library(tmp_path):
    fake = tmp_path / "libbonsai_host.so"
    fake.write_text("not an ELF file")
    result = run_python("import bonsai_lm\nbonsai_lm.library_path()\n", BONSAI_LIBRARY=str(fake))
    assert result.returncode != 0
    assert "LibraryNotFoundError" in result.stderr
    assert "could not be loaded" in result.stderr


def test_importing_loads_nothing():
    result = run_python("import bonsai_lm, sys\nprint(bonsai_lm.__version__)\n",
                        BONSAI_LIBRARY="/nowhere/libbonsai_host.so")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == bonsai_lm.__version__


def test_a_stream_keeps_its_model_open():
    chunks = list(open_model().create_completion("Hello", max_tokens=3, temperature=0,
                                                 stream=True))
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_ctrl_c_stops_a_generation():
    """SIGINT during a long generation: KeyboardInterrupt from the call, soon, and the model
    goes on working."""
    result = run_python(
        "import os, signal, threading, time, bonsai_lm\n"
        f"llm = bonsai_lm.Bonsai({str(MODEL)!r}, backend='cpu', n_ctx=4096)\n"
        "threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "start = time.monotonic()\n"
        "try:\n"
        "    llm.create_completion('Count:', max_tokens=None, temperature=0)\n"
        "    print('not interrupted')\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted after', round(time.monotonic() - start, 1), 's')\n"
        "reply = llm.create_completion('Count:', max_tokens=3, temperature=0)\n"
        "print(reply['choices'][0]['finish_reason'])\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0].startswith("interrupted after"), result.stdout
    assert float(lines[0].split()[2]) < 10
    assert lines[1] == "length"
