"""CSS selectors of HTML elements a user wants left out (``html_exclude_selectors``).

:class:`ExcludeSelectors` checks and compiles the selectors; the HTML normalizer leaves out the
elements they match with the site navigation (``html_elements._navigation``). An element is
matched from itself and its ancestors only, so the windowed path, which tests an element when
its start tag is read, gives the same answer as the whole tree: type (``div``), class
(``.ad``), id (``#banner``) and attribute (``[role=complementary]``, ``[data-x^=y]``)
selectors, compounded (``div.note#x``) and combined with the descendant (``aside .links``) and
child (``body > header``) combinators; a comma separates alternatives. Pseudo-classes and
pseudo-elements, sibling combinators (``+``, ``~``) and namespaces are refused, since they
depend on what the windowed path has not read or freed. Selector syntax: the cssselect package
(W3C Selectors Level 3), tag and attribute names matched in lower case, as libxml2's HTML parser
gives them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from lxml import etree

__all__ = ["ExcludeSelectors"]

#: At most this many selectors, each at most this many characters (a configuration is read by a person).
MAX_SELECTORS = 100
MAX_SELECTOR_CHARS = 500


class ExcludeSelectors:
    """CSS selectors whose elements (with their content, not their tail) are left out.

    Args:
        selectors: CSS selector strings (see the module docstring for the syntax accepted).

    Raises:
        ValueError: ``selectors`` is not a list of non-empty strings, holds more than
            :data:`MAX_SELECTORS`, or a selector is longer than :data:`MAX_SELECTOR_CHARS`, cannot
            be parsed, or uses what is refused (the message names it, on one line).
    """

    __slots__ = ("_chains", "selectors")

    def __init__(self, selectors: Sequence[str]) -> None:
        if isinstance(selectors, (str, bytes)) or not isinstance(selectors, Sequence):
            raise ValueError(f"html_exclude_selectors must be a list of CSS selectors, got {_shown(selectors)}")
        if len(selectors) > MAX_SELECTORS:
            raise ValueError(f"html_exclude_selectors holds {len(selectors)} selectors, at most {MAX_SELECTORS}")
        chains: list[tuple[tuple[Any, str], ...]] = []
        for selector in selectors:
            chains.extend(_compiled(selector))
        self.selectors: tuple[str, ...] = tuple(selectors)
        self._chains = tuple(chains)

    def __reduce__(self) -> tuple[Any, ...]:
        # Compiled XPath objects do not pickle: a worker compiles the selectors again.
        return (ExcludeSelectors, (list(self.selectors),))

    def __bool__(self) -> bool:
        return bool(self._chains)

    def matches(self, element) -> bool:
        """Whether ``element`` is matched by a selector, from itself and its ancestors."""
        return any(_chain_matches(element, chain, len(chain) - 1) for chain in self._chains)


def _shown(value: object) -> str:
    return " ".join(repr(value).split())[:120]


def _compiled(selector: object) -> Iterable[tuple[tuple[Any, str], ...]]:
    """The chains of one selector string: per alternative, (test, combinator to the left) pairs."""
    if not isinstance(selector, str) or not selector.strip():
        raise ValueError(f"html_exclude_selectors: each selector must be a non-empty string, got {_shown(selector)}")
    if len(selector) > MAX_SELECTOR_CHARS:
        raise ValueError(f"html_exclude_selectors: a selector is longer than {MAX_SELECTOR_CHARS} characters")
    import cssselect

    try:
        parsed = cssselect.parse(selector)
    except cssselect.SelectorError as err:
        raise ValueError(
            f"html_exclude_selectors: {_shown(selector)} is not a CSS selector: {_shown(str(err))}"
        ) from None
    translator = cssselect.HTMLTranslator()
    chains = []
    for alternative in parsed:
        if alternative.pseudo_element is not None:
            raise _refused(selector, f"the pseudo-element ::{alternative.pseudo_element}")
        steps: list[tuple[Any, str]] = []
        node, combinator = alternative.parsed_tree, ""
        while isinstance(node, cssselect.parser.CombinedSelector):
            if node.combinator not in (" ", ">"):
                raise _refused(selector, f"the combinator {node.combinator!r}")
            steps.append((_test(translator, node.subselector, selector), node.combinator))
            node = node.selector
        steps.append((_test(translator, node, selector), combinator))
        steps.reverse()  # leftmost first; each step's combinator joins it to the step before
        chains.append(tuple(steps))
    return chains


def _test(translator, compound, selector: str):
    """A compiled XPath test of one element against a compound selector (no combinator)."""
    import cssselect

    node = compound
    while True:
        if isinstance(node, cssselect.parser.Element):
            if node.namespace is not None:
                raise _refused(selector, "a namespace")
            break
        if isinstance(node, cssselect.parser.Attrib):
            if node.namespace is not None:
                raise _refused(selector, "a namespace")
        elif not isinstance(node, (cssselect.parser.Class, cssselect.parser.Hash)):
            raise _refused(selector, f"a pseudo-class ({_shown(node.canonical())})")
        node = node.selector
    try:
        expression = translator.xpath(compound)
    except cssselect.SelectorError as err:
        raise ValueError(f"html_exclude_selectors: {_shown(selector)} is refused: {_shown(str(err))}") from None
    return etree.XPath(f"boolean(self::{expression})")


def _refused(selector: str, what: str) -> ValueError:
    return ValueError(
        f"html_exclude_selectors: {_shown(selector)} uses {what}; only type, class, id and attribute selectors"
        " joined by descendant (' ') and child ('>') combinators are accepted"
    )


def _chain_matches(element, chain: tuple[tuple[Any, str], ...], index: int) -> bool:
    """Whether ``element`` matches ``chain[index]`` and its ancestors the steps before (right to left)."""
    test, combinator = chain[index]
    if not test(element):
        return False
    if index == 0:
        return True
    if combinator == ">":
        parent = element.getparent()
        return parent is not None and _chain_matches(parent, chain, index - 1)
    return any(_chain_matches(ancestor, chain, index - 1) for ancestor in element.iterancestors())
