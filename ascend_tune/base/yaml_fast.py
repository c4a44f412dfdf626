"""libyaml's C composer for the YAML ascend-tune reads, where it gives the same answer.

Used only for text without ``&`` or ``*`` (so no anchors and no aliases: nothing to expand,
nothing recursive; a ``&`` inside a quoted string merely takes the Python path), with the
same scalar resolvers as the Python loader (``yamlio._Loader``: core schema, no timestamps,
no base 60) and the same line marks. Nesting is checked on the composed tree, in document
order, so the first node too deep is the one the Python loader would refuse. Any error the C
parser raises sends the text through the Python loader, whose messages the tests pin.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

AVAILABLE = bool(getattr(yaml, "__with_libyaml__", False))
_ANCHOR_OR_ALIAS = re.compile(r"[&*]")


def usable(text: str) -> bool:
    return AVAILABLE and _ANCHOR_OR_ALIAS.search(text) is None


def loader_class(resolvers: dict[Any, list[tuple[str, Any]]]) -> type | None:
    """A C-parsing safe loader resolving plain scalars by ``resolvers`` (None without
    libyaml)."""
    if not AVAILABLE:
        return None
    from yaml._yaml import CParser

    class CLoader(CParser, yaml.constructor.SafeConstructor,  # type: ignore[misc]
                  yaml.resolver.Resolver):
        yaml_implicit_resolvers = resolvers

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    return CLoader


def first_too_deep(node: Any, max_depth: int) -> Any | None:
    """The first node, in document order, nested deeper than ``max_depth`` (the root is at
    depth 1), or None."""
    if max_depth < 1:
        return node
    collections = (yaml.MappingNode, yaml.SequenceNode)
    stack = [(node, 1)]  # collections only: a scalar is as deep as its parent's children
    while stack:
        current, depth = stack.pop()
        if not isinstance(current, collections):
            continue
        children = ([n for pair in current.value for n in pair]
                    if isinstance(current, yaml.MappingNode) else current.value)
        if children and depth + 1 > max_depth:
            return children[0]
        stack += [(child, depth + 1) for child in reversed(children)
                  if isinstance(child, collections)]
    return None
