"""What goes wrong, as Python exceptions.

    python errors.py [MODEL.gguf]
"""
import sys

import bonsai_lm

model = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tiny-q1.gguf"

try:
    bonsai_lm.Bonsai("missing.gguf")
except bonsai_lm.BonsaiError as error:  # what the library said
    print("BonsaiError:", error)

with bonsai_lm.Bonsai(model, n_ctx=64) as llm:
    hello = [{"role": "user", "content": "Hi"}]
    for bad in ({"max_tokens": -1}, {"temperature": 5},
                {"tools": [{"type": "function", "function": {"name": "f"}}]}):
        try:
            llm.create_chat_completion(hello, **bad)
        except ValueError as error:  # checked before the library sees it
            print("ValueError:", error)
    try:
        llm.create_completion("word " * 100, max_tokens=8)
    except bonsai_lm.BonsaiError as error:
        print("BonsaiError:", error)
