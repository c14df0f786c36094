"""What both HTML paths know of elements: their kinds, the parser, and the page-wide rules.

The element kinds (``_KINDS``: how :mod:`~transforms.structure.normalizers.html_blocks` reads
each tag), libxml2's parser and options and the source as it is given them (``_prepared``), and
the page-wide rules both the whole tree's path (``html``) and the windowed path
(``html_stream``) apply: navigation left out (``_remove_navigation``, ``_is_navigation``),
whether an ``h1`` counts (``_holds_h1``) and the ``<title>`` (``_title``).
"""

from __future__ import annotations

import re
import threading

from lxml import etree

from transforms.structure.normalizers.html_exclude import ExcludeSelectors

# Element kinds.
_INLINE, _SKIP, _BREAK, _CONTAINER, _HEADING, _CODE, _LIST, _TABLE, _QUOTE, _RULE, _LINK = range(11)

_KINDS: dict[str, int] = {
    # (``button`` and ``select``: a control's label, e.g. a code block's "copy", is not content.)
    **dict.fromkeys(("head", "script", "style", "noscript", "template", "svg", "button", "select"), _SKIP),
    "br": _BREAK,
    **dict.fromkeys(
        (
            "html",
            "body",
            "div",
            "p",
            "section",
            "article",
            "main",
            "header",
            "footer",
            "nav",
            "aside",
            "address",
            "figure",
            "figcaption",
            "details",
            "summary",
            "fieldset",
            "legend",
            "form",
            "center",
            "hgroup",
            "dialog",
            "dl",
            "dt",
            "dd",
            "li",
            "caption",
            "thead",
            "tbody",
            "tfoot",
            "tr",
            "td",
            "th",
            "frameset",
            "noframes",
            "search",
        ),
        _CONTAINER,
    ),
    **{f"h{n}": _HEADING for n in range(1, 7)},
    **dict.fromkeys(("pre", "listing", "xmp", "plaintext"), _CODE),
    **dict.fromkeys(("ul", "ol", "menu", "dir"), _LIST),
    "table": _TABLE,
    "blockquote": _QUOTE,
    "hr": _RULE,
    "a": _LINK,
}
_SKIP_TAGS = tuple(tag for tag, kind in _KINDS.items() if kind == _SKIP)
#: Deeper elements are flattened to text (Python's recursion limit; libxml2 nests up to 2047).
_MAX_DEPTH = 200
_END_TAGS = re.compile(r"</(?:body|html)\s*>", re.IGNORECASE)
_PARSERS = threading.local()  # an lxml parser must not be shared between threads


#: libxml2's options on both paths (the whole tree's parser and the push parser).
_PARSER_OPTIONS = dict(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True, no_network=True)


def _parser() -> etree.HTMLParser:
    parser = getattr(_PARSERS, "parser", None)
    if parser is None:
        parser = _PARSERS.parser = etree.HTMLParser(**_PARSER_OPTIONS)
    return parser


def _prepared(source: str) -> str:
    """``source`` as libxml2 is given it, on both paths: ``\\r\\n`` and a lone ``\\r`` become
    ``\\n``, NUL becomes U+FFFD, and ``</body>``/``</html>`` end tags are removed."""
    return _END_TAGS.sub("", source.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd"))


def _collapse(text: str) -> str:
    """``text`` with every run of whitespace (``str.isspace``) made one space, and stripped."""
    return " ".join(text.split())


# What lxml refuses in a string it is given, though it takes it from a page it parses: C0 controls
# but tab, line feed and carriage return, U+FFFE and U+FFFF (NUL is U+FFFD before parsing).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _joined_tail(before: str | None, tail: str) -> str:
    """``before + tail``: the text before a left-out navigation element joined with its tail, as
    lxml will take it (a character it refuses becomes a space when it is whitespace, a form feed
    for one, which the rendering collapses anyway, else U+FFFD)."""
    merged = (before or "") + tail
    if _NOT_XML.search(merged) is not None:
        merged = _NOT_XML.sub(lambda m: " " if m.group().isspace() else "\ufffd", merged)
    return merged


def _remove_navigation(root, exclude: ExcludeSelectors | None = None) -> int:
    """Remove the navigation elements under ``root`` (not ``root`` itself), and those ``exclude``
    matches, keeping their tails (the text after an element is not part of it); the number removed."""
    dropped = 0
    for element in _navigation(root, exclude):
        parent = element.getparent()
        if parent is None or element is root:
            continue
        tail = element.tail
        if tail:
            previous = element.getprevious()
            if previous is not None:
                previous.tail = _joined_tail(previous.tail, tail)
            else:
                parent.text = _joined_tail(parent.text, tail)
        parent.remove(element)
        dropped += 1
    return dropped


#: Site navigation and page chrome, not the page's content: ``nav``; the ARIA landmark roles
#: ``navigation``, ``banner`` (the site's header), ``contentinfo`` (its footer) and ``search``;
#: the navigation blocks of the documentation generators that make most HTML docs (Sphinx's
#: sidebar and "related" bars, DocBook's navheader/navfooter, Bootstrap's nav, navbar and
#: breadcrumb), as classes in any ASCII letter case (as a browser matches them in quirks mode); DocBook's navigation tables (``summary="Navigation header"`` /
#: ``"Navigation footer"``); and a ``header``, ``footer`` or ``aside``, or an element of class or
#: id ``footer`` (Sphinx's page footer ...), that belongs to the page rather than to a part of it (no ``article``, ``aside``, ``main``, ``nav`` or ``section``
#: ancestor and no ancestor of role ``main`` or ``article``: the HTML-ARIA mapping of ``banner``
#: and ``contentinfo``; an ``aside`` so placed is a sidebar).
_NAVIGATION_CLASSES = frozenset(
    {"sphinxsidebar", "related", "navheader", "navfooter", "nav", "navbar", "breadcrumb", "breadcrumbs"}
)
_NAVIGATION_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})
_PAGE_PARTS = frozenset({"header", "footer", "aside"})
_SCOPES = ("article", "aside", "main", "nav", "section")
_SCOPE_ROLES = frozenset({"main", "article"})
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# What XPath's normalize-space() collapses: XML whitespace, not all that str.split() splits on.
_XML_SPACE = re.compile(r"[ \t\r\n]+")


def _is_navigation(element, exclude: ExcludeSelectors | None = None) -> bool:
    """Whether ``element`` is navigation (see :data:`_NAVIGATION_CLASSES`) or matched by
    ``exclude``; decided from its tag, its attributes and its ancestors only (the windowed path
    asks when the start tag is read)."""
    tag = element.tag
    if tag == "nav" or element.get("role") in _NAVIGATION_ROLES:
        return True
    names = element.get("class")
    classes = _XML_SPACE.split(names.translate(_ASCII_LOWER)) if names else ()  # (DocBook's jade writes NAVHEADER)
    if not _NAVIGATION_CLASSES.isdisjoint(classes):
        return True
    page_part = tag in _PAGE_PARTS or element.get("id") == "footer" or "footer" in classes
    if page_part and _unscoped(element):
        return True
    if tag == "table" and (element.get("summary") or "").startswith("Navigation"):
        return True
    return exclude is not None and exclude.matches(element)


def _unscoped(element) -> bool:
    """Whether no ancestor of ``element`` is a sectioning element or has role ``main``/``article``."""
    for ancestor in element.iterancestors():
        if ancestor.tag in _SCOPES or ancestor.get("role") in _SCOPE_ROLES:
            return False
    return True


def _navigation(root, exclude: ExcludeSelectors | None = None) -> list:
    """The elements under ``root`` (itself included) that are navigation (:func:`_is_navigation`),
    in document order; nested ones too.

    For the rules without ``exclude``, the same elements in the same order as the XPath
    expression ``tests/transforms/structure/normalizers/test_html.py`` compares it with; one walk
    over the elements costs about a third of such an expression's evaluation (lxml 6).
    """
    return [element for element in root.iter(etree.Element) if _is_navigation(element, exclude)]


def _holds_h1(element) -> bool:
    """Whether ``element`` is or holds an ``h1`` that is not inside a skipped element (``svg``,
    ``template``, ``noscript``, ``head`` ...: ``_SKIP_TAGS``): whether the ``<title>`` is left out.

    Both paths ask it of the tree as parsed, navigation removed (the whole tree's :func:`_parse`;
    the windowed path removes it from each child first), before reading (which strips the skipped
    elements under an element it flattens past :data:`_MAX_DEPTH`, see ``_deep_text``), so that
    both give the same answer at any depth. ``element`` must not be inside a skipped element
    (on the windowed path its ancestors are frames: containers, lists, tables). Time linear in
    the elements: the first ``h1`` (libxml2's walk, as before) and its ancestors; only when that
    one is hidden, a walk that meets each ``h1`` and skipped element at most twice.
    """
    if element.tag == "h1":
        return True
    first = next(element.iter("h1"), None) if len(element) else None
    if first is None:
        return False
    if next(first.iterancestors(*_SKIP_TAGS), None) is None:
        return True
    hidden = set()  # the h1 and skipped elements inside a skipped element met so far
    for found in element.iter("h1", *_SKIP_TAGS):
        if found in hidden:
            continue
        if found.tag == "h1":
            return True
        hidden.update(found.iter("h1", *_SKIP_TAGS))
    return False


def _title(root) -> str:
    head = root.find("head")
    title = head.find("title") if head is not None else None
    return _collapse("".join(title.itertext())) if title is not None else ""
