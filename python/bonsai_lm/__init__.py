"""Python bindings of bonsai, the runtime for 1-bit Bonsai (Qwen3) models.

A thin ctypes layer over libbonsai_host's C API (``bonsai/bonsai.h``): nothing
is compiled when the package is installed. The API follows the habits of
llama-cpp-python and returns OpenAI-shaped dicts::

    from bonsai_lm import Bonsai

    with Bonsai("Bonsai-1.7B.gguf") as llm:
        reply = llm.create_chat_completion(
            [{"role": "user", "content": "Hello"}], max_tokens=64)
        print(reply["choices"][0]["message"]["content"])

The shared library is found on first use: ``$BONSAI_LIBRARY``, else the copy
bundled in the package (see :func:`library_path`). docs/python.md has the
whole guide.
"""

from ._library import library_path
from ._stream import CompletionStream
from ._version import __version__
from .errors import BonsaiError, LibraryNotFoundError
from .model import Bonsai, set_log_level

__all__ = [
    "Bonsai",
    "BonsaiError",
    "CompletionStream",
    "LibraryNotFoundError",
    "__version__",
    "library_path",
    "set_log_level",
]
