"""YAML that a person sent (a scenario, an exercise), read within bounds: one loader for all of it.

A YAML alias stands for the node its anchor names, so a few hundred bytes of nested anchors ("a
billion laughs") stand for hundreds of millions of values the moment anything walks them: an error
message that prints the value, a label, a JSON copy. PyYAML composes recursively, so thousands of
nested brackets end in a ``RecursionError``. Here the document is composed node by node with a
budget, before any Python object is built:

- at most ``MAX_CHARS`` characters;
- at most ``MAX_DEPTH`` levels of nested lists and mappings;
- at most ``MAX_ALIASES`` aliases, none inside its own anchor;
- at most ``MAX_VALUES`` values, counting what each alias stands for.

Anything beyond is a ``YamlError`` with the line, as is any other YAML mistake. ``excerpt`` shows a
bad value in a few dozen characters, whatever its size.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MAX_CHARS = 200_000
MAX_DEPTH = 32
MAX_ALIASES = 100
MAX_VALUES = 50_000


class YamlError(ValueError):
    """Not YAML, or YAML beyond the bounds; ``line`` is 1-based, or None when it cannot be told."""

    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(message if line is None else f"line {line}: {message}")


@dataclass(frozen=True, slots=True)
class Document:
    data: Any  # the Python value: dicts, lists, strings, numbers...
    node: yaml.Node | None  # its root node, for the line of each part (None for an empty document)


def line_of(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


_short = reprlib.Repr()
_short.maxstring = 40
_short.maxother = 40
_short.maxlong = 40
_short.maxlist = _short.maxtuple = _short.maxset = 5
_short.maxdict = 4
_short.maxlevel = 3


def excerpt(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut short: an error message never carries more than a glimpse of a bad value."""
    return clip(_short.repr(value), limit)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Refused(yaml.MarkedYAMLError):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, composing within the budget."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0
        self._aliases = 0
        self._sizes: dict[int, int] = {}  # id(node) -> values it stands for, once composed

    def compose_node(self, parent: yaml.Node | None, index: Any) -> Any:
        event = self.peek_event()
        mark: Any = event.start_mark
        node: Any
        if isinstance(event, yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _Refused(problem=f"more than {MAX_ALIASES} aliases (*name)", problem_mark=mark)
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:
                raise _Refused(
                    problem=f"the alias *{event.anchor} is inside its own anchor", problem_mark=mark
                )
            return node
        nested = isinstance(event, yaml.CollectionStartEvent)
        if nested:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _Refused(
                    problem=f"the YAML is nested more than {MAX_DEPTH} levels deep", problem_mark=mark
                )
        try:
            node = super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes[id(child)] for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._sizes[id(key)] + self._sizes[id(value)] for key, value in node.value)
        if size > MAX_VALUES:
            cause = "with its aliases expanded, " if self._aliases else ""
            raise _Refused(
                problem=f"{cause}the YAML holds more than {MAX_VALUES} values", problem_mark=node.start_mark
            )
        self._sizes[id(node)] = size
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as error:
            # A value Python refuses to build: an integer of thousands of digits, a 13th month.
            kind = node.tag.rsplit(":", 1)[-1]
            raise _Refused(
                problem=f"cannot read this {kind}: {clip(str(error), 100)}", problem_mark=node.start_mark
            ) from None


def load(text: str) -> Document:
    """Parse one YAML document within the bounds; ``YamlError`` naming the line for anything else."""
    if len(text) > MAX_CHARS:
        raise YamlError(None, f"the file is larger than {MAX_CHARS} characters")
    try:
        loader = _BoundedLoader(text)  # the reader refuses control characters here already
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = int(mark.line) + 1 if mark is not None else None
        problem = error.problem if isinstance(error, _Refused) else f"not valid YAML: {error.problem}"
        raise YamlError(line, str(problem)) from None
    except yaml.YAMLError as error:  # e.g. a control character the reader refuses
        raise YamlError(None, f"not valid YAML: {clip(str(error), 200)}") from None
    except RecursionError:  # the depth bound should make this impossible; never a crash if not
        raise YamlError(None, "the YAML is nested too deeply") from None
    return Document(data=data, node=node)


def read(path: Path) -> str:
    """A file's text, refusing one larger than the bound before reading it all."""
    try:
        with path.open(encoding="utf-8") as file:
            text = file.read(MAX_CHARS + 1)
    except UnicodeDecodeError:
        raise YamlError(None, "the file is not UTF-8 text") from None
    if len(text) > MAX_CHARS:
        raise YamlError(None, f"the file is larger than {MAX_CHARS} characters")
    return text
