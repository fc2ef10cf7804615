"""Finding and loading libbonsai_host.so.

Search order:

1. ``$BONSAI_LIBRARY``: the path of a ``libbonsai_host.so`` (a build tree's
   ``build/lib/libbonsai_host.so``, an install's ``PREFIX/lib/...``). When it
   is set, it is the only candidate: a wrong value is an error, not a reason
   to pick another copy silently.
2. The copy bundled in this package, ``bonsai_lm/_libs/libbonsai_host.so``, with
   the plugins in ``bonsai_lm/_libs/bonsai/plugins/``: the host looks for plugins
   in ``<folder of libbonsai_host.so>/bonsai/plugins`` (after
   ``$BONSAI_PLUGIN_PATH``), so that layout needs no environment variable.

The library is loaded once per process, on first use (importing the package
loads nothing).
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

from . import _capi
from .errors import LibraryNotFoundError

LIBRARY_ENV = "BONSAI_LIBRARY"
LIBRARY_NAME = "libbonsai_host.so"

_lock = threading.Lock()
_loaded: tuple[ctypes.CDLL, Path] | None = None


def bundled_library_path() -> Path:
    """Where the package keeps its own copy of libbonsai_host.so."""
    return Path(__file__).resolve().parent / "_libs" / LIBRARY_NAME


def _try_load(path: Path) -> ctypes.CDLL:
    """Loads `path` and declares the C API on it; raises OSError with the reason."""
    lib = ctypes.CDLL(os.fspath(path))
    missing = _capi.declare(lib)
    if missing:
        raise OSError(f"it lacks {', '.join(missing)} (a libbonsai_host older than this "
                      f"package?)")
    return lib


def _find_and_load() -> tuple[ctypes.CDLL, Path]:
    tried: list[str] = []
    env = os.environ.get(LIBRARY_ENV, "")
    if env:
        path = Path(env)
        if not path.is_file():
            reason = "no such file" if not path.exists() else "not a file"
            raise LibraryNotFoundError(
                f"${LIBRARY_ENV} is {env!r}, but that is {reason}; set it to the path of "
                f"{LIBRARY_NAME} (e.g. build/lib/{LIBRARY_NAME}) or unset it to use the copy "
                f"bundled with the package")
        try:
            return _try_load(path), path
        except OSError as error:
            raise LibraryNotFoundError(
                f"${LIBRARY_ENV}={env!r} could not be loaded: {error}") from error
    tried.append(f"${LIBRARY_ENV} (not set)")

    bundled = bundled_library_path()
    if bundled.is_file():
        try:
            return _try_load(bundled), bundled
        except OSError as error:
            tried.append(f"{bundled} (could not be loaded: {error})")
    else:
        tried.append(f"{bundled} (not there: this copy of the package was not built with "
                     f"the libraries)")
    raise LibraryNotFoundError(
        f"{LIBRARY_NAME} not found; searched: {'; '.join(tried)}. Install the package from a "
        f"bonsai build tree (pip install --no-build-isolation --no-index ./python, with "
        f"BONSAI_BUILD_DIR=/absolute/path when the tree is not ./build) or from its wheel, or "
        f"set ${LIBRARY_ENV} to the path of {LIBRARY_NAME} (docs/python.md)")


def load() -> ctypes.CDLL:
    """The loaded library (loading it on the first call).

    Raises :class:`~bonsai_lm.errors.LibraryNotFoundError` naming every place
    searched when no usable library is found.
    """
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _find_and_load()
        return _loaded[0]


def library_path() -> Path:
    """The path of the libbonsai_host.so in use (loading it if needed)."""
    load()
    assert _loaded is not None
    return _loaded[1]
