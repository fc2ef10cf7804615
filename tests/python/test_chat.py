"""create_chat_completion: the reply the bonsai program gives for the same chat, and the
OpenAI shape of the result."""

from __future__ import annotations

import json
import subprocess

import pytest

from bonsai_lm import BonsaiError
from conftest import CLI_ENGINE_FLAGS, MODEL, user


def program_chat(program: str, prompt: str, system: str | None, n: int) -> dict:
    """`bonsai run --chat ... --json` (greedy): what the program answers."""
    args = [program, "run", "-m", str(MODEL), "--chat", "-p", prompt, "-n", str(n), "--temp",
            "0", "--json", *CLI_ENGINE_FLAGS]
    if system is not None:
        args += ["--system", system]
    out = subprocess.run(args, check=True, capture_output=True, text=True, timeout=60).stdout
    return json.loads(out)


@pytest.mark.parametrize("system", [None, "You answer in one short sentence."])
def test_greedy_reply_matches_the_bonsai_program(llm, bonsai_program, system):
    expected = program_chat(bonsai_program, "What is a bonsai?", system, 24)
    messages = ([{"role": "system", "content": system}] if system else []) + \
        user("What is a bonsai?")
    reply = llm.create_chat_completion(messages, max_tokens=24, temperature=0)
    choice = reply["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": expected["text"]}
    assert choice["finish_reason"] == expected["finish_reason"]
    assert choice["stop_reason"] == expected["stop_reason"]
    assert reply["usage"]["prompt_tokens"] == expected["prompt_tokens"]
    assert reply["usage"]["completion_tokens"] == len(expected["tokens"])


def test_openai_shape(llm):
    reply = llm.create_chat_completion(user("Hello"), max_tokens=8, temperature=0)
    assert set(reply) >= {"id", "object", "created", "model", "choices", "usage"}
    assert reply["id"].startswith("chatcmpl-")
    assert reply["object"] == "chat.completion"
    assert isinstance(reply["created"], int) and reply["created"] > 0
    assert reply["model"] == str(MODEL)
    (choice,) = reply["choices"]
    assert choice["index"] == 0
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"]
    assert choice["finish_reason"] in ("stop", "length")
    assert choice["logprobs"] is None
    usage = reply["usage"]
    assert usage["completion_tokens"] == 8 or choice["finish_reason"] == "stop"
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    # Each call counts the whole prompt, whatever the session had cached.
    again = llm.create_chat_completion(user("Hello"), max_tokens=8, temperature=0)
    assert again["usage"] == usage
    assert again["choices"][0]["message"] == choice["message"]
    assert again["id"] != reply["id"]


def test_roles_and_content_forms(llm):
    base = llm.create_chat_completion(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}],
        max_tokens=10, temperature=0)
    # "developer" is OpenAI's newer name of "system"; content may be text parts; a name is
    # accepted (and not shown to the model).
    same = llm.create_chat_completion(
        [{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
         {"role": "user", "name": "ann",
          "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}],
        max_tokens=10, temperature=0)
    assert same["choices"][0]["message"] == base["choices"][0]["message"]
    assert same["usage"] == base["usage"]


def test_multi_turn_history(llm):
    first = llm.create_chat_completion(user("Hello"), max_tokens=6, temperature=0)
    answer = first["choices"][0]["message"]["content"]
    follow = [*user("Hello"), {"role": "assistant", "content": answer}, *user("And then?")]
    second = llm.create_chat_completion(follow, max_tokens=6, temperature=0)
    assert second["usage"]["prompt_tokens"] > first["usage"]["prompt_tokens"]
    assert second["choices"][0]["message"]["content"]


def test_chat_logprobs_shape(llm):
    reply = llm.create_chat_completion(user("Hello"), max_tokens=10, temperature=0,
                                       logprobs=True, top_logprobs=0)
    choice = reply["choices"][0]
    content = choice["logprobs"]["content"]
    assert len(content) == reply["usage"]["completion_tokens"]
    for entry in content:
        assert set(entry) == {"token", "logprob", "bytes", "top_logprobs"}
        assert isinstance(entry["token"], str)
        assert isinstance(entry["logprob"], float) and entry["logprob"] <= 0.0
        assert all(isinstance(b, int) and 0 <= b < 256 for b in entry["bytes"])
        assert entry["top_logprobs"] == []  # the C API gives the chosen token's only
    # The tokens' bytes make up the reply (no stop string cut it).
    whole = bytes(b for entry in content for b in entry["bytes"])
    assert whole.decode("utf-8", "replace") == choice["message"]["content"]
    # Asking for log probabilities changes nothing else.
    plain = llm.create_chat_completion(user("Hello"), max_tokens=10, temperature=0)
    assert plain["choices"][0]["message"] == choice["message"]


def test_response_format_json_schema_constrains_the_reply(llm):
    # tiny-q1 has random weights: left alone it never writes this.
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
                                                "n": {"type": "integer"}},
              "required": ["answer", "n"], "additionalProperties": False}
    for seed in (1, 2, 3):
        reply = llm.create_chat_completion(
            user("Well?"), max_tokens=40, temperature=1.0, seed=seed,
            response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}})
        value = json.loads(reply["choices"][0]["message"]["content"])
        assert list(value) == ["answer", "n"]  # in the schema's order
        assert value["answer"] in ("yes", "no") and isinstance(value["n"], int)
    text = llm.create_completion("Say", max_tokens=20, temperature=1.0, seed=4,
                                 response_format={"type": "json_object"})["choices"][0]["text"]
    assert isinstance(json.loads(text), dict)


def test_response_format_schema_the_library_refuses_names_the_keyword(llm):
    with pytest.raises(BonsaiError, match="the keyword 'not' is not supported"):
        llm.create_chat_completion(user("Hi"), max_tokens=4, response_format={
            "type": "json_schema", "json_schema": {"schema": {"type": "string", "not": {}}}})


def test_response_format_text_is_accepted(llm):
    reply = llm.create_chat_completion(user("Hello"), max_tokens=2, temperature=0,
                                       response_format={"type": "text"})
    assert reply["choices"][0]["message"]["content"]
