"""A small EDN reader and writer: enough of the format for Jepsen histories.

Keywords become `Keyword`s, strings without the colon that compare equal to plain strings (`:ok`
== "ok", so a map with both `:x` and `"x"` as keys keeps one) and are written back as keywords; symbols strings, vectors and lists
Python lists, sets sorted lists when their items compare (else lists), maps dicts (keys made
hashable), `nil`/`true`/`false` None/True/False, tagged values (`#jepsen.history.Op{...}`) the
value they tag, `#_` discards the next form. Commas are whitespace; `;` starts a comment.

`dumps` writes JSON-like values back: a `Keyword` as `:name`, other strings as strings, lists and
tuples as vectors, dicts as maps, None as `nil`.
"""
from __future__ import annotations

import re
from typing import Any

_DELIMS = set("()[]{}\"; \t\r\n,")
_INT = re.compile(r"[+-]?\d+N?$")
_FLOAT = re.compile(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?M?$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "b": "\b", "f": "\f"}
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r"}


class EdnError(ValueError):
    """Text that is not EDN; says where."""


class Keyword(str):
    """A string `dumps` writes as an EDN keyword (`Keyword("ok")` -> `:ok`)."""


_WRITE_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def dumps(value: Any) -> str:
    """`value` as EDN text (the inverse of `loads` for JSON-like values and Keywords)."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Keyword):
        return ":" + value
    if isinstance(value, str):
        return '"' + "".join(_WRITE_ESCAPES.get(c, c) for c in value) + '"'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, MapKey):
        return "{" + ", ".join(f"{dumps(k)} {dumps(v)}" for k, v in value) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + " ".join(dumps(x) for x in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(k)} {dumps(v)}" for k, v in value.items()) + "}"
    raise EdnError(f"cannot write a {type(value).__name__} as EDN: {value!r}")


def loads(text: str) -> Any:
    """The single EDN form in `text` (EdnError if there is none, more than one, or it is malformed)."""
    value, end = loads_prefix(text)
    reader = _Reader(text)
    reader.pos = end
    reader.skip()
    if not reader.at_end():
        raise EdnError(f"unexpected text after the form at column {reader.pos + 1}: {text[reader.pos:][:20]!r}")
    return value


def loads_prefix(text: str) -> tuple[Any, int]:
    """The first EDN form in `text` and the position just after it, for text that goes on after
    the form (a log line's value, then its error)."""
    reader = _Reader(text)
    reader.skip()
    if reader.at_end():
        raise EdnError("no EDN form (empty text)")
    return reader.form(), reader.pos


class MapKey(tuple):
    """A map used as a map key: its (key, value) pairs, hashable, which `dumps` writes as a map."""


def hashable(v: Any) -> Any:
    """A map key as a dict can hold it: vectors as tuples, maps as MapKeys."""
    if isinstance(v, list):
        return tuple(hashable(x) for x in v)
    if isinstance(v, dict):
        return MapKey((k, hashable(x)) for k, x in v.items())
    return v


class _Reader:
    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c in " \t\r\n,":
                self.pos += 1
            elif c == ";":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end + 1
            else:
                return

    def _need(self) -> str:
        self.skip()
        if self.at_end():
            raise EdnError(f"the text ends inside a form (column {self.pos + 1}): truncated?")
        return self.text[self.pos]

    def form(self) -> Any:
        c = self._need()
        if c in "[(":
            self.pos += 1
            return self._seq("])"[c == "("])
        if c == "{":
            self.pos += 1
            items = self._seq("}")
            if len(items) % 2:
                raise EdnError(f"a map needs an even number of forms, got {len(items)} (before column {self.pos})")
            return {hashable(items[i]): items[i + 1] for i in range(0, len(items), 2)}
        if c == "#":
            return self._dispatch()
        if c == '"':
            return self._string()
        if c == "\\":
            return self._char()
        if c in ")]}":
            raise EdnError(f"unexpected {c!r} at column {self.pos + 1}")
        return self._atom()

    def _seq(self, close: str) -> list[Any]:
        items = []
        while self._need() != close:
            if self.text[self.pos] in ")]}":
                raise EdnError(f"expected {close!r} at column {self.pos + 1}, got {self.text[self.pos]!r}")
            items.append(self.form())
        self.pos += 1
        return items

    def _dispatch(self) -> Any:
        self.pos += 1
        if self.at_end():
            raise EdnError("the text ends after '#'")
        c = self.text[self.pos]
        if c == "{":
            self.pos += 1
            items = self._seq("}")
            try:
                return sorted(items)
            except TypeError:
                return items
        if c == "_":
            self.pos += 1
            self.form()
            return self.form()
        self._token()  # a tag such as jepsen.history.Op or inst: the tagged value stands for itself
        return self.form()

    def _string(self) -> str:
        out, i, text = [], self.pos + 1, self.text
        while i < len(text):
            c = text[i]
            if c == '"':
                self.pos = i + 1
                return "".join(out)
            if c == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                if nxt == "u":
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                    continue
                out.append(_ESCAPES.get(nxt, nxt))
                i += 2
                continue
            out.append(c)
            i += 1
        raise EdnError(f"a string starting at column {self.pos + 1} never ends: truncated?")

    def _char(self) -> str:
        self.pos += 1
        token = self._token()
        return _CHARS.get(token, token[:1])

    def _token(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _DELIMS:
            self.pos += 1
        return self.text[start:self.pos]

    def _atom(self) -> Any:
        start = self.pos
        token = self._token()
        if not token:
            raise EdnError(f"unexpected {self.text[start]!r} at column {start + 1}")
        if token == "nil":
            return None
        if token in ("true", "false"):
            return token == "true"
        if token.startswith(":"):
            return Keyword(token[1:])
        if _INT.match(token):
            return int(token.rstrip("N"))
        if _FLOAT.match(token):
            return float(token.rstrip("M"))
        return token  # a symbol
