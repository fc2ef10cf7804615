"""A chat reply, a streamed reply, a completion with a stop string, and tokens.

    python quickstart.py [MODEL.gguf]     (default: the repository's tiny test model,
                                           whose random weights write gibberish)
"""
import sys

from bonsai_lm import Bonsai

model = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tiny-q1.gguf"

with Bonsai(model, n_ctx=2048) as llm:
    reply = llm.create_chat_completion(
        [{"role": "system", "content": "You answer in one short sentence."},
         {"role": "user", "content": "What is a bonsai?"}],
        max_tokens=32, temperature=0)
    print(reply["choices"][0]["message"]["content"])
    print(reply["choices"][0]["finish_reason"], reply["usage"])

    # Streaming: the text as the model writes it.
    for chunk in llm.create_chat_completion(
            [{"role": "user", "content": "Tell me a story."}], max_tokens=32, stream=True):
        print(chunk["choices"][0]["delta"].get("content", ""), end="", flush=True)
    print()

    # A plain completion that ends at a newline, and token ids both ways.
    out = llm.create_completion("The quick brown fox", max_tokens=16, stop=["\n"])
    print(repr(out["choices"][0]["text"]), out["choices"][0]["finish_reason"])
    ids = llm.tokenize("Hello world")
    print(ids, repr(llm.detokenize(ids)))
