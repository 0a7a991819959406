"""A name -> object registry that refuses duplicates and suggests the nearest name on a typo."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar, cast, overload

from benchmark.errors import SagoError

T = TypeVar("T")


class Named(Protocol):
    """An entry that carries its own name (a spec): registered by ``add(spec)``, so it is named once."""

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


class Registry(Generic[T]):
    """A dict of named entries, filled by a decorator.

    >>> colours: Registry[int] = Registry("colour")
    >>> _ = colours.add("red", 1)
    >>> colours.get("red")
    1
    >>> colours.get("rde")
    Traceback (most recent call last):
    benchmark.errors.SagoError: unknown colour 'rde'; did you mean 'red'? (known: red)
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    @overload
    def add(self: Registry[N], entry: N, /) -> N: ...
    @overload
    def add(self, name: str, entry: T, /) -> T: ...
    def add(self, *named: object) -> object:
        """Register ``entry`` under ``name``, or a spec under its ``spec.name``; refuses a name twice."""
        name, entry = (cast(Named, named[0]).name, named[0]) if len(named) == 1 else named
        name = str(name)
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = cast(T, entry)
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""
        return lambda entry: self.add(name, entry)

    def get(self, name: str) -> T:
        if name in self._entries:
            return self._entries[name]
        close = difflib.get_close_matches(name, self._entries, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise SagoError(f"unknown {self.kind} {name!r}{hint} (known: {', '.join(sorted(self._entries))})")

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entries(self) -> list[T]:
        """Every entry in the order it was registered (the order tables and files list them in)."""
        return list(self._entries.values())

    @contextmanager
    def added(self, name: str, entry: T) -> Iterator[T]:
        """``entry`` registered for the length of a with-block (a test's toy entry, a one-off plug-in).

        >>> sizes: Registry[int] = Registry("size")
        >>> with sizes.added("big", 3):
        ...     sizes.names()
        ['big']
        >>> sizes.names()
        []
        """
        self.add(name, entry)
        try:
            yield entry
        finally:
            del self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))
