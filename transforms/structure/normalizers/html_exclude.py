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
#: The most comma-separated alternatives all the selectors together may hold: each is tried on
#: every element of a page.
MAX_ALTERNATIVES = 200


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
        chains: list[tuple[tuple[str | None, Any, str], ...]] = []
        for selector in selectors:
            chains.extend(_compiled(selector))
        if len(chains) > MAX_ALTERNATIVES:
            raise ValueError(
                f"html_exclude_selectors holds {len(chains)} comma-separated alternatives, at most {MAX_ALTERNATIVES}"
            )
        self.selectors: tuple[str, ...] = tuple(selectors)
        self._chains = tuple(chains)

    def __reduce__(self) -> tuple[Any, ...]:
        # Compiled XPath objects do not pickle: a worker compiles the selectors again.
        return (ExcludeSelectors, (list(self.selectors),))

    def __bool__(self) -> bool:
        return bool(self._chains)

    def matches(self, element) -> bool:
        """Whether ``element`` is matched by a selector, from itself and its ancestors.

        Each alternative is matched right to left over the element's ancestor path, every
        (step, ancestor) pair decided once: at most steps x depth tests an alternative, whatever
        the nesting (a backtracking matcher takes time exponential in the page's depth)."""
        path: list | None = None
        for chain in self._chains:
            tag, _, _ = chain[-1]
            if tag is not None and element.tag != tag:  # most elements fail here, cheaply
                continue
            if path is None:
                path = [element, *element.iterancestors()]
            if _chain_matches(path, chain):
                return True
        return False


def _shown(value: object) -> str:
    return " ".join(repr(value).split())[:120]


def _compiled(selector: object) -> Iterable[tuple[tuple[str | None, Any, str], ...]]:
    """The chains of one selector string: per alternative, (element name, test, combinator to the left) steps, leftmost first."""
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
        steps: list[tuple[str | None, Any, str]] = []
        node, combinator = alternative.parsed_tree, ""
        while isinstance(node, cssselect.parser.CombinedSelector):
            if node.combinator not in (" ", ">"):
                raise _refused(selector, f"the combinator {node.combinator!r}")
            steps.append((*_test(translator, node.subselector, selector), node.combinator))
            node = node.selector
        steps.append((*_test(translator, node, selector), combinator))
        steps.reverse()  # leftmost first; each step's combinator joins it to the step before
        chains.append(tuple(steps))
    return chains


def _test(translator, compound, selector: str) -> tuple[str | None, Any]:
    """One compound selector (no combinator) as its element name in lower case (``None`` for
    any) and a compiled XPath test of one element against the whole compound."""
    import cssselect

    node = compound
    while True:
        if isinstance(node, cssselect.parser.Element):
            if node.namespace is not None:
                raise _refused(selector, "a namespace")
            tag = node.element.lower() if node.element else None
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
    return tag, etree.XPath(f"boolean(self::{expression})")


def _refused(selector: str, what: str) -> ValueError:
    return ValueError(
        f"html_exclude_selectors: {_shown(selector)} uses {what}; only type, class, id and attribute selectors"
        " joined by descendant (' ') and child ('>') combinators are accepted"
    )


def _chain_matches(path: list, chain: tuple[tuple[str | None, Any, str], ...]) -> bool:
    """Whether ``path[0]`` matches the chain's last step, and ``path[1:]`` (its ancestors, nearest
    first) the steps before it as their combinators say; each (step, position) decided once."""
    decided: dict[tuple[int, int], bool] = {}
    depth = len(path)

    def matched(index: int, position: int) -> bool:
        key = (index, position)
        found = decided.get(key)
        if found is not None:
            return found
        tag, test, combinator = chain[index]
        element = path[position]
        found = (tag is None or element.tag == tag) and bool(test(element))
        if found and index > 0:
            if combinator == ">":
                found = position + 1 < depth and matched(index - 1, position + 1)
            else:
                found = any(matched(index - 1, above) for above in range(position + 1, depth))
        decided[key] = found
        return found

    return matched(len(chain) - 1, 0)
