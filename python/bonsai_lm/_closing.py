"""The context-manager and finalizer habits shared by objects that hold a
native resource: ``with`` closes them, and so does garbage collection."""

from typing import Any


class ClosesOnExit:
    """Gives a class with a ``close()`` method ``with`` support and a
    finalizer that calls ``close()`` (never raising at interpreter exit)."""

    def close(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
