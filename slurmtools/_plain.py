"""A base for small record classes on the hook path, where `dataclasses` would cost ~10 ms of import
(it pulls in `inspect`, `ast` and more) before every job: equality and repr from the instance's fields. And the
configuration model's machinery (``settings.py`` holds its tables): a ``Table`` is built from its validated dict, one
attribute per key, its sub-tables and named tables (``[nodes.NAME]``) typed by the class annotations, which are read as
strings, never evaluated (the prolog builds the model at every job start: docs/performance.md)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing for the type checker only (docs/performance.md)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, ClassVar


class Plain:
    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq=True

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


#: Every table class by name (the annotations name them).
_CLASSES: dict[str, type[Table]] = {}
#: Per class: attribute -> (TOML key, kind, table class or None); kind: "value", "table" or "named".
_FIELDS: dict[type[Table], dict[str, tuple[str, str, type[Table] | None]]] = {}


def _fields(cls: type[Table]) -> dict[str, tuple[str, str, type[Table] | None]]:
    found = _FIELDS.get(cls)
    if found is not None:
        return found
    keys = {attr: key for key, attr in cls._attrs.items()}
    notes = {a: str(n) for k in reversed(cls.__mro__[:-1]) for a, n in k.__annotations__.items() if a[0] != "_"}
    _FIELDS[cls] = found = {
        attr: (keys.get(attr, attr), "table", _CLASSES[note]) if note in _CLASSES
        else (keys.get(attr, attr), "named", _CLASSES[note[10:-1]]) if note.startswith("dict[str, ")
        and note[10:-1] in _CLASSES else (keys.get(attr, attr), "value", None) for attr, note in notes.items()}
    return found


class Table(Plain):
    """One table of the configuration, built from its validated dict (every key present: the defaults
    fill what the operator left out). A key the class lacks, or an attribute the dict lacks, is an error
    (the model and defaults.toml disagree)."""

    #: TOML key -> attribute, where the attribute's name differs (a name a method of Config has).
    _attrs: ClassVar[dict[str, str]] = {}

    def __init__(self, values: Mapping[str, Any]) -> None:
        fields = _fields(type(self))
        if len(values) != len(fields) or any(key not in values for key, _, _ in fields.values()):
            known = {key for key, _, _ in fields.values()}
            extra, missing = sorted(set(values) - known), sorted(known - set(values))
            raise ValueError(f"{type(self).__name__}: " + (f"unknown key {extra[0]!r}" if extra
                                                           else f"missing key {missing[0]!r}"))
        for attr, (key, kind, table) in fields.items():
            value = values[key]
            if table is not None:
                if kind == "table":
                    value = table(value)
                else:   # named: each entry complete, over its defaults table (the sibling of the same class)
                    base = next(values[k] for k, kd, t in fields.values() if kd == "table" and t is table)
                    value = {str(name): table({k: v[:] if isinstance(v, list) else v  # lists: their own
                                               for k, v in {**base, **entry}.items()}) for name, entry in value.items()}
            self.__dict__[attr] = value     # lists as given: the validated dict is the model's own

    def to_dict(self) -> dict[str, Any]:
        """The table as plain TOML data (keys as in defaults.toml)."""
        return {key: plain(getattr(self, attr)) for attr, (key, _, _) in _fields(type(self)).items()}

    def replace(self, **changes: object) -> Any:
        """A copy with CHANGES (attribute names) over it; unchecked, for tests and derived tables."""
        values = self.to_dict()
        for attr, value in changes.items():
            values[_fields(type(self))[attr][0]] = plain(value)
        return type(self)(values)

    @classmethod
    def attribute(cls, key: str) -> str:
        """The attribute that holds TOML key KEY (KeyError if the table has none)."""
        for attr, (k, _, _) in _fields(cls).items():
            if k == key:
                return attr
        raise KeyError(key)

    def __init_subclass__(cls) -> None:
        _CLASSES[cls.__name__] = cls


def list_items(cls: type[Table]) -> dict[str, type]:
    """CLS's list keys (TOML names) and the type of their items: ``list[str]`` -> str."""
    types: dict[str, type] = {"list[str]": str, "list[int]": int, "list[dict[str, Any]]": dict}
    fields = _fields(cls)
    return {fields[attr][0]: types[str(note)] for klass in reversed(cls.__mro__[:-1])
            for attr, note in klass.__annotations__.items() if str(note) in types}


def tables(cls: type[Table]) -> dict[str, tuple[str, type[Table]]]:
    """CLS's sub-tables by TOML key: ("table" or "named", their class)."""
    return {key: (kind, table) for key, kind, table in _fields(cls).values() if table is not None}


def plain(value: object) -> Any:
    """VALUE with every table in it turned into plain data (a copy: changing it changes no configuration)."""
    if isinstance(value, Table):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
