"""Differential check of the HTML normalizer's windowed reading against its whole-tree reading.

    python benchmarks/differential/html_stream_fuzz.py [--reference CHECKOUT] [--seed N]
        [--generated N] [--mutated N] [--corpus sample/docs.parquet] [--chunks N] [--out FAILS.jsonl]

The reference is ``transforms/structure/normalizers/html.py`` of the checkout ``--reference``
(default: this one, loaded a second time, so its pages under ``STREAM_DOCUMENT_CHARS`` take the
whole-tree path; another checkout compares two versions). Each case runs the reference and this
checkout's normalizer, with the windowed path forced (``STREAM_DOCUMENT_CHARS`` 0, a random
small ``STREAM_WINDOW_CHARS``, ``STREAM_BLOCK_CHARS`` 0 so every top-level list and table is
streamed) and at the default thresholds, and compares ``text``, ``diagnostics``, an exception's
type, reason and message, and every block with all its fields and descendants (streamed children
iterated twice). Cases: every HTML document of the corpus (``content_format == "html"``),
generated pages (nested lists, tables, quotes, pre, headings, navigation, titles, broken and
unclosed tags, comments, scripts, CDATA, entities, huge attributes, deep nesting, ``</body>`` in
the middle, NUL, CR, lone surrogates, code moved out of a table section, tables of thousands of
rows) and corpus pages mutated (ranges cut, repeated, tags inserted). For the first ``--chunks``
cases of each kind the chunks of ``StructureAwareChunker`` (cl100k_base, ``max_tokens`` 128 and
512) with each normalizer are compared too (every field). Prints the counts (``fallbacks``:
pages the windowed path hands to the whole tree, mostly a form feed next to left-out navigation;
``--no-control`` leaves form feeds out, for a reference that raises ``ValueError`` on them). A
mismatch is written to ``--out`` and counted. Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from benchmarks.differential.reference import load_normalizer  # noqa: E402
from transforms.structure.normalizers import html as new  # noqa: E402
from transforms.structure.normalizers import html_stream  # noqa: E402
from transforms.structure.tree import StreamedChildren  # noqa: E402

old = None  # the reference module (--reference)


def deep(doc):
    def one(n):
        first = tuple(one(c) for c in n.children)
        if type(n.children) is StreamedChildren:  # made again on each iteration
            assert first == tuple(one(c) for c in n.children), "children differ between two iterations"
        return (n.kind, n.start, n.end, n.level, n.title, n.language, n.fence, n.header_rows, n.page_no, first)

    return (doc.text, doc.content_format, doc.verbatim, doc.diagnostics, tuple(one(b) for b in doc.blocks))


def run(fn, content):
    try:
        return ("ok", deep(fn(content)))
    except Exception as err:
        return ("err", type(err).__name__, getattr(err, "reason", None), str(err))


# -- generated pages ----------------------------------------------------------------------------

WORDS = [
    "a",
    "word",
    "é😀",
    "x | y",
    " ",
    "\t",
    "&amp;",
    "&lt;b&gt;",
    "&#0;",
    "&nbsp;",
    "\u00a0",
    "\x00",
    "\ud800",
    "\r\n",
    "\r",
    "\n",
    "`",
    "```",
    "````x",
    "#",
    "- ",
    "1. ",
    "|",
    "\\|",
    "<!-- c -->",
    "<![CDATA[x]]>",
    "<?pi x?>",
    "</body>",
    "</html>",
    "</ body >",
    "</BODY\n>",
    "<br>",
    "<br/>",
    "<hr>",
    "<img src=x>",
    "<wbr>",
    "\u2028",
    "\f",
]
INLINE = ["span", "b", "i", "a", "code", "em", "strong", "small", "font", "label", "unknown", "img", "input"]
BLOCK = [
    "div",
    "p",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "details",
    "summary",
    "dl",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "center",
    "form",
    "fieldset",
    "address",
]
CLASSES = [
    "",
    "sphinxsidebar",
    "related",
    "navheader",
    "navfooter",
    "language-python",
    "highlight-c",
    "lang-js",
    "headerlink",
    "x related y",
    "relatedx",
]


def attrs(r):
    out = []
    k = r.random()
    if k < 0.15:
        out.append(f' class="{r.choice(CLASSES)}"')
    elif k < 0.2:
        out.append(' role="navigation"')
    elif k < 0.23:
        out.append(' title="' + "z" * r.choice([10, 1000, 70000]) + '"')
    elif k < 0.26:
        out.append(f' start="{r.choice(["3", "-2", "x", "0", "99999999999"])}"')
    elif k < 0.29:
        out.append(f' colspan="{r.choice(["2", "0", "x", "500"])}"')
    return "".join(out)


def text(r):
    return "".join(r.choice(WORDS) for _ in range(r.randint(0, 3)))


def maybe_close(r, tag):
    return "" if r.random() < 0.12 else f"</{tag}>"


def gen_block(r, depth):
    if depth > 6 or r.random() < 0.2:
        return text(r)
    k = r.random()
    if k < 0.18:
        tag = r.choice(["ul", "ol", "menu"])
        items = []
        for _ in range(r.randint(0, 6)):
            if r.random() < 0.1:
                items.append(text(r))  # stray text inside a list
            elif r.random() < 0.05:
                items.append(gen_block(r, depth + 1))
            else:
                items.append(
                    f"<li{attrs(r)}>"
                    + "".join(gen_block(r, depth + 1) for _ in range(r.randint(0, 3)))
                    + maybe_close(r, "li")
                    + r.choice(["", "\n", " ", "\n  "])
                )
        return f"<{tag}{attrs(r)}>" + "".join(items) + maybe_close(r, tag)
    if k < 0.32:
        return gen_table(r, depth)
    if k < 0.38:
        return (
            "<blockquote>"
            + "".join(gen_block(r, depth + 1) for _ in range(r.randint(0, 3)))
            + maybe_close(r, "blockquote")
        )
    if k < 0.44:
        inner = "".join(
            r.choice(["def f():\n", "    x = 1\n", "\n", "```\n", "a<b>c</b>\n", "<br>", text(r)])
            for _ in range(r.randint(0, 5))
        )
        code = f"<code{attrs(r)}>{inner}</code>" if r.random() < 0.5 else inner
        return f"<pre{attrs(r)}>{code}" + maybe_close(r, "pre")
    if k < 0.52:
        n = r.randint(1, 6)
        link = '<a class="headerlink" href="#x">¶</a>' if r.random() < 0.3 else ""
        return f"<h{n}{attrs(r)}>{text(r)}{link}" + maybe_close(r, f"h{n}")
    if k < 0.58:
        tag = r.choice(["nav", "div", "table", "ul", "span"])
        cls = r.choice([' role="navigation"', ' class="sphinxsidebar"', ' class="related"', ""]) if tag != "nav" else ""
        return (
            f"<{tag}{cls}>"
            + "".join(gen_block(r, depth + 1) for _ in range(r.randint(0, 2)))
            + maybe_close(r, tag)
            + text(r)
        )
    if k < 0.62:
        return r.choice(
            [
                "<hr>",
                "<br>",
                "<script>var a = '<p>x</p>';</script>",
                "<style>p {}</style>",
                "<noscript><p>n</p></noscript>",
                "<template><h1>t</h1></template>",
                "<svg><h1>s</h1></svg>",
                "<!-- <p>c</p> -->",
                "<![CDATA[<p>d</p>]]>",
                "</body>",
                "</html>",
                "<body>",
                "<html>",
                "<head><title>late</title></head>",
                "</p>",
                "</div>",
                "</li>",
                "</table>",
                "</tr>",
                "<p",
                "<",
                "&",
                "<h1>",
                "</h1>",
                "<title>t2</title>",
            ]
        )
    if k < 0.64:
        d = r.choice([5, 190, 199, 200, 201, 202, 260])
        tag = r.choice(["div", "span", "ul", "blockquote", "b"])
        inner = gen_block(r, depth + 1)
        return f"<{tag}>" * d + inner + f"</{tag}>" * r.choice([d, 0, d // 2])
    if k < 0.82:
        tag = r.choice(INLINE)
        return (
            f"<{tag}{attrs(r)}>"
            + "".join(gen_block(r, depth + 1) for _ in range(r.randint(0, 2)))
            + maybe_close(r, tag)
            + text(r)
        )
    tag = r.choice(BLOCK)
    return (
        f"<{tag}{attrs(r)}>"
        + "".join(gen_block(r, depth + 1) for _ in range(r.randint(0, 4)))
        + maybe_close(r, tag)
        + text(r)
    )


def gen_table(r, depth):
    parts = []
    if r.random() < 0.2:
        parts.append(f"<caption>{text(r)}</caption>")
    if r.random() < 0.1:
        parts.append("<colgroup><col></colgroup>")

    def row(cell):
        return (
            "<tr>"
            + "".join(
                f"<{cell if r.random() < 0.9 else 'td'}{attrs(r)}>"
                + (text(r) if r.random() < 0.8 else gen_block(r, depth + 1))
                + maybe_close(r, cell)
                for _ in range(r.randint(0, 4))
            )
            + maybe_close(r, "tr")
            + r.choice(["", "\n", " x "])
        )

    if r.random() < 0.3:
        parts.append("<thead>" + "".join(row("th") for _ in range(r.randint(0, 2))) + maybe_close(r, "thead"))
    body = "".join(row(r.choice(["td", "th"])) for _ in range(r.randint(0, 6)))
    k = r.random()
    if k < 0.3:
        body = "<tbody>" + body + maybe_close(r, "tbody")
    elif k < 0.4:
        body = "<form>" + body + "</form>"
    elif k < 0.45:
        body = "<div>" + body + "</div>"
    parts.append(body)
    if r.random() < 0.2:
        parts.append(
            r.choice(
                [
                    "<p>stray</p>",
                    "stray text",
                    "<nav>n</nav>tail",
                    '<div class="related">r</div>t',
                    "<pre>p</pre>t",
                    "<ul><li>x</li></ul>",
                    "<tfoot><tr><td>f</td></tr></tfoot>",
                    "<tr><td>late</td></tr>",
                    "<thead><pre>p</pre></thead>",
                    "<tbody><div>d</div><pre><code>c</code></pre></tbody>",
                ]
            )
        )
    r.shuffle(parts) if r.random() < 0.1 else None
    return f"<table{attrs(r)}>" + text(r) + "".join(parts) + maybe_close(r, "table")


def gen_page(r):
    body = "".join(gen_block(r, 0) for _ in range(r.randint(1, 8)))
    k = r.random()
    if k < 0.4:
        head = (
            "<head><title>" + text(r) + " Title</title><meta charset='latin-1'></head>"
            if r.random() < 0.8
            else "<head></head>"
        )
        page = f"<!DOCTYPE html><html>{head}<body>{body}</body></html>"
    elif k < 0.5:
        page = "<title>T " + text(r) + "</title>" + body
    else:
        page = body
    if r.random() < 0.1:  # a big one: many items or rows
        n = r.choice([50, 500, 3000, 4500])  # 4500: a table past the writer's _PACK_PARTS
        big = r.choice(
            [
                "<ul>" + "".join(f"<li>{i}" + ("</li>" if i % 3 else "") + "\n" for i in range(n)) + "</ul>",
                "<ol start=5>"
                + "".join(f"<li><p>{i}</p><p>b</p><ul><li>n</li></ul></li>" for i in range(n // 5))
                + "</ol>",
                "<table>" + "".join(f"<tr><td>{i}</td><td>{'|' * (i % 3)}</td></tr>\n" for i in range(n)) + "</table>",
                "<table><thead><tr><th>h</th></tr></thead>"
                + "".join(f"<tr><th>{i}</th></tr>" for i in range(n))
                + "</table>",
                "".join(f"<p>para {i}</p>\n" for i in range(n)),
            ]
        )
        cut = r.randint(0, len(page))
        page = page[:cut] + big + page[cut:]
    return page


def mutate(r, page):
    for _ in range(r.randint(1, 5)):
        k = r.random()
        n = len(page)
        a = r.randint(0, n)
        b = min(n, a + r.randint(0, 2000))
        if k < 0.3:
            page = page[:a] + page[b:]
        elif k < 0.5:
            page = page[:b] + page[a:b] + page[b:]
        elif k < 0.8:
            page = page[:a] + gen_block(r, 3) + page[a:]
        else:
            page = (
                page[:a]
                + r.choice(WORDS + ["<table>", "<ul>", "<li>", "</td>", "<tr>", "<nav>", "</nav>", "<pre>", "<h1>"])
                + page[a:]
            )
    return page


# -- comparing ----------------------------------------------------------------------------------


def chunks_of(normalizer, content, max_tokens, tokenizer):
    from transforms.chunkers import StructureAwareChunker
    from transforms.documents import Document
    from transforms.structure.normalizers import NormalizerRegistry

    chunker = StructureAwareChunker(
        tokenizer=tokenizer, max_tokens=max_tokens, normalizers=NormalizerRegistry({"html": normalizer})
    )
    try:
        chunks = chunker.chunk(
            Document(id="d", content=content, content_format="html"), tokenizer_identity=tokenizer.identity
        )
        return ("ok", [dataclasses.asdict(c) if dataclasses.is_dataclass(c) else repr(c) for c in chunks])
    except Exception as err:
        return ("err", type(err).__name__, str(err))


class Runner:
    def __init__(self, args):
        self.r = random.Random(args.seed)
        self.out = open(args.out, "a") if args.out else None  # noqa: SIM115 - open for the whole run
        self.counts = {}
        self.failures = 0
        self.chunk_cases = args.chunks
        self.tokenizer = None

    def check(self, kind, content, with_chunks):
        counts = self.counts.setdefault(kind, {"cases": 0, "streamed_paths": 0, "chunk_cases": 0, "fallbacks": 0})
        counts["cases"] += 1
        expected = run(old.normalize_html, content)
        runs = []
        for mode in ("tiny", "default"):
            saved = (new.STREAM_DOCUMENT_CHARS, new.STREAM_WINDOW_CHARS, new.STREAM_BLOCK_CHARS)
            if mode == "tiny":
                new.STREAM_DOCUMENT_CHARS = 0
                new.STREAM_WINDOW_CHARS = self.r.choice(
                    [1, 3, 7, 16, 64, 300, 4096]
                    if len(content) < 3000
                    else [64, 300, 4096]
                    if len(content) < 100000
                    else [4096, 30000]
                )
                new.STREAM_BLOCK_CHARS = self.r.choice([0, 0, 50])
                streamed = html_stream._normalize_streamed(content) if content else None
                counts["fallbacks"] += streamed is None
            try:
                got = run(new.normalize_html, content)
            finally:
                new.STREAM_DOCUMENT_CHARS, new.STREAM_WINDOW_CHARS, new.STREAM_BLOCK_CHARS = saved
            counts["streamed_paths"] += mode == "tiny"
            runs.append((mode, got))
            if got != expected:
                self.fail(kind, mode, content, expected, got)
        if with_chunks:
            counts["chunk_cases"] += 1
            self.compare_chunks(kind, content)

    def compare_chunks(self, kind, content):
        from transforms.tokenizers import load_tokenizer

        if self.tokenizer is None:
            self.tokenizer = load_tokenizer("tiktoken:cl100k_base")
        for max_tokens in (128, 512):
            expected = chunks_of(old.normalize_html, content, max_tokens, self.tokenizer)
            saved = (new.STREAM_DOCUMENT_CHARS, new.STREAM_WINDOW_CHARS, new.STREAM_BLOCK_CHARS)
            new.STREAM_DOCUMENT_CHARS, new.STREAM_WINDOW_CHARS, new.STREAM_BLOCK_CHARS = 0, 512, 0
            try:
                got = chunks_of(new.normalize_html, content, max_tokens, self.tokenizer)
            finally:
                new.STREAM_DOCUMENT_CHARS, new.STREAM_WINDOW_CHARS, new.STREAM_BLOCK_CHARS = saved
            if got != expected:
                self.fail(kind, f"chunks-{max_tokens}", content, expected[:2], got[:2])

    def fail(self, kind, mode, content, expected, got):
        self.failures += 1
        print(f"MISMATCH {kind} {mode} ({len(content)} chars)", file=sys.stderr)
        if self.out:
            self.out.write(
                json.dumps(
                    {
                        "kind": kind,
                        "mode": mode,
                        "content": content,
                        "expected": repr(expected)[:5000],
                        "got": repr(got)[:5000],
                    },
                    ensure_ascii=True,
                )
                + "\n"
            )
            self.out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default=REPO, help="the checkout whose normalizer is the reference")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generated", type=int, default=2000)
    parser.add_argument("--mutated", type=int, default=300)
    parser.add_argument(
        "--corpus",
        default=os.path.join(REPO, "sample", "docs.parquet"),
        help="a Parquet file of documents; its documents of the format are cases too ('' for none)",
    )
    parser.add_argument("--chunks", type=int, default=50, help="cases of each kind whose chunks are compared too")
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--no-control",
        action="store_true",
        help="no form feed in generated text (for a reference that raises ValueError next to left-out navigation)",
    )
    args = parser.parse_args(argv)
    global old
    old = load_normalizer(args.reference, "html")
    if args.no_control and "\f" in WORDS:
        WORDS.remove("\f")
    runner = Runner(args)
    pages = []
    if args.corpus and os.path.exists(args.corpus):
        import pyarrow.parquet as pq

        rows = pq.read_table(args.corpus, columns=["content", "content_format"]).to_pylist()
        pages = [row["content"] for row in rows if row["content_format"] == "html"]
    try:
        for i, page in enumerate(pages):
            runner.check("corpus", page, i < args.chunks)
        for i in range(args.generated):
            runner.check("generated", gen_page(runner.r), i < args.chunks)
        for i in range(args.mutated if pages else 0):
            runner.check("mutated", mutate(runner.r, runner.r.choice(pages)), i < args.chunks)
    except Exception:
        traceback.print_exc()
        runner.failures += 1
    print(json.dumps(runner.counts), "failures:", runner.failures)
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
