"""One model, questions answered by two threads at once (each has its own session).

    python threads.py [MODEL.gguf]
"""
import sys
from concurrent.futures import ThreadPoolExecutor

from bonsai_lm import Bonsai

model = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tiny-q1.gguf"
llm = Bonsai(model, n_ctx=1024)


def answer(question: str) -> str:
    reply = llm.create_chat_completion([{"role": "user", "content": question}],
                                       max_tokens=24, temperature=0)
    return reply["choices"][0]["message"]["content"]


questions = ["Why is the sky blue?", "What is 1-bit quantization?"]
with ThreadPoolExecutor(max_workers=2) as pool:
    for question, text in zip(questions, pool.map(answer, questions)):
        print(f"{question} -> {text!r}")
llm.close()
