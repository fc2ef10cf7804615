"""The exceptions the package raises.

Failures reported by libbonsai_host arrive as :class:`BonsaiError` with the
library's own message (``bonsai_last_error()``). Parameters that Python can
check before calling the library raise :class:`ValueError` or
:class:`TypeError` instead.
"""

from __future__ import annotations


class BonsaiError(RuntimeError):
    """A failure reported by libbonsai_host, with its message.

    The message is the library's ``bonsai_last_error()`` text, which names the
    file, plugin or value at fault (for example ``generate: the prompt of 9000
    tokens does not fit the context window of 4096 tokens``).
    """


class LibraryNotFoundError(BonsaiError, ImportError):
    """libbonsai_host.so could not be found or loaded.

    The message lists every place that was searched and why each was
    rejected. It is an :class:`ImportError` too, as a missing native library
    usually is in Python.
    """
