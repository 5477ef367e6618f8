"""Parsing within bounds: YAML whose aliases would expand it past any real configuration (a "billion
laughs"), that refers to itself, or that nests deeper than any real file, is refused with its line
before anything walks it; so is JSON nested too deep for the parser.

`yaml.safe_load` prevents code execution, not expansion: nine levels of nine aliases are 400 bytes
that every later walk (line maps, configuration ids, pages) would expand to 387 million nodes.
"""

from __future__ import annotations

import json

import yaml

MAX_NODES = 100_000  # nodes of a YAML document with every alias expanded
MAX_NESTING = 100  # levels of lists and mappings


class TooComplex(ValueError):
    """A document refused for its shape, with the line (1-based) where the problem shows, if known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message, self.line = message, line


def compose_yaml(text: str) -> yaml.Node | None:
    """The YAML document's node graph, checked: at most MAX_NODES with aliases expanded, at most
    MAX_NESTING deep, and no alias inside what it names."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
    except RecursionError:
        raise TooComplex(f"nested deeper than {MAX_NESTING} levels") from None
    finally:
        loader.dispose()
    if node is not None:
        check_nodes(node)
    return node


def construct_yaml(node: yaml.Node | None) -> object:
    """The Python values of a checked node graph, as yaml.safe_load makes them."""
    if node is None:
        return None
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml(text: str) -> object:
    """yaml.safe_load, within the bounds of compose_yaml."""
    return construct_yaml(compose_yaml(text))


def check_nodes(root: yaml.Node) -> None:
    """Expanded size, depth and self-reference of a composed YAML graph, without expanding it."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_NODES:
                raise TooComplex(f"its aliases expand it to more than {MAX_NODES:,} values; "
                                 "no configuration is that large", node.start_mark.line + 1)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise TooComplex("an alias refers to the value that holds it (a loop)", node.start_mark.line + 1)
        if depth > MAX_NESTING:
            raise TooComplex(f"nested deeper than {MAX_NESTING} levels", node.start_mark.line + 1)
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in reversed(children) if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_json(text: str) -> object:
    """json.loads, with nesting too deep for the parser refused rather than crashing."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooComplex("nested too deep to read") from None
