"""A base for small record classes on the hook path, where `dataclasses` would cost ~10 ms of import
(it pulls in `inspect`, `ast` and more) before every job: equality and repr from the instance's fields."""

from __future__ import annotations


class Plain:
    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq=True

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"
