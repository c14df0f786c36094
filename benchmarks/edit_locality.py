"""Edit locality: how many chunks a nightly run re-embeds after small edits, per chunker.

    python benchmarks/edit_locality.py --input docs.parquet [--edited 0.10] [--removed 0.01]
        [--added 0.01] [--seed 0] [--limit N] [--chunkers PREFIX,...] [--out FILE.md]

Makes a second version of the input (a Parquet file or folder of the job's input schema), seeded
and deterministic: ``--edited`` of the documents (10%) get one edit each, in a paragraph of the
middle of the document (between 20% and 80% of its length when it has one there), drawn evenly
among three kinds: a new paragraph of three sentences inserted after a paragraph, a paragraph
grown by one sentence, a paragraph deleted. A paragraph is prose between blank lines that starts
with a letter (not a heading, list, table, code, an indented block or an rST literal block's
introduction) for Markdown, text and reST, and a ``<p>`` element without tags inside for HTML.
``--removed`` of the documents (1%) are gone and ``--added`` (1%) new ones come in (the content
of a drawn document under a new id). Every inserted sentence holds a marker word of its own.

Each chunker chunks both versions directly (no Beam), with the job's default configuration:
the router built from it as the job builds it (``StructureAwareChunker`` for Markdown, text, reST
and HTML, ``cl100k_base``, ``max_tokens`` 512), and the text splitters of the reference API on
every document, 512 tokens, no overlap: ``RecursiveCharacterTextSplitter`` (``length="tokens"``)
and ``TokenTextSplitter``. (The reference API has no ``MarkdownHeaderTextSplitter``.)
``StructureAwareChunker`` is measured a second time with ``cuts: greedy``, side by side in the
same run. A document that is not edited is chunked once: chunking is deterministic.

Columns, each summed over the corpus:

- *full*: the second version's chunks (what a full re-embed embeds);
- *by chunk_id*: its chunks whose ``chunk_id`` (document, index, text) the first version does not
  have, what a store keyed on ``chunk_id`` embeds;
- *by chunk_key*: its chunks whose ``chunk_key`` (document, embedding text, occurrence) the first
  version does not have, what a store keyed on ``chunk_key`` embeds;
- *changed*: the chunks an edit must change given the first version's chunks: for an inserted
  paragraph or sentence, the second version's chunks whose span overlaps the inserted text; for
  a deleted paragraph, the first version's chunks whose span overlaps it and that hold other
  non-whitespace text too (a chunk that was the paragraph alone goes with no replacement); every
  chunk of an added document. A chunk without offsets (HTML through ``StructureAwareChunker``,
  whose text is a rendering) holds an inserted text when its ``embedding_text`` holds the
  text's marker word; a deleted paragraph then counts as one chunk;
- *key / changed*: *by chunk_key* over *changed* (1.0: only what the edits touched; the goal is
  at most 1.1);
- *per edit, median / p95*: per edited document (one paragraph each), its chunks whose
  ``chunk_key`` changed;
- *seconds*: CPU seconds to chunk the first version (the whole corpus, this process).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import header, read_documents, shown, write_markdown  # noqa: E402

MAX_TOKENS = 512
TOKENIZER = "tiktoken:cl100k_base"
KINDS = ("insert", "grow", "delete")
_WORDS = re.findall(
    r"\S+",
    "the parser reads nested lists and tables before it counts tokens so every chunk keeps its "
    "heading path while the index stores vectors for each section of the guide and a reader "
    "finds the answer in one place without scrolling through release notes or old examples",
)
# Paragraphs of Markdown, text and reST: runs of lines between blank lines.
_BLOCK = re.compile(r"[^\n]+(?:\n[^\n]*\S[^\n]*)*")
_FENCE = re.compile(r"^(```|~~~)", re.M)
_ADORNMENT = re.compile(r"^[=\-~^\"'`#*+_.:]{3,}\s*$", re.M)
_LIST_START = re.compile(r"^(\d+[.)]|[-*+|>#]|\.\.)\s")
_HTML_P = re.compile(r"<p(?:\s[^<>]*)?>([^<]*)</p>", re.I)


@dataclass(frozen=True)
class Edit:
    """One paragraph edit: ``kind``; for ``insert`` and ``grow`` the inserted text's interval in
    the second version and its marker word; for ``delete`` the deleted paragraph's interval in
    the first version and its text."""

    kind: str
    span: tuple[int, int]
    marker: str
    deleted: str = ""


def _sentence(rng: random.Random, marker: str) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(10, 16))]
    return f"Note {marker}: " + " ".join(words) + "."


def _paragraphs(content: str, content_format: str) -> list[tuple[int, int, int]]:
    """``(start, end, next_start)`` of the editable paragraphs: prose, not inside a code fence."""
    if content_format == "html":
        return [
            (m.start(), m.end(), m.end())
            for m in _HTML_P.finditer(content)
            if len(m.group(1).strip()) >= 40 and "&" not in m.group(1)
        ]
    found = []
    fenced = False
    blocks = list(_BLOCK.finditer(content))
    for k, m in enumerate(blocks):
        block = m.group()
        if len(_FENCE.findall(block)) % 2:
            fenced = not fenced
            continue
        if fenced or len(block) < 40 or not block[0].isalpha() or _LIST_START.match(block):
            continue
        if _ADORNMENT.search(block) or block.rstrip().endswith("::") or "\n " in block or "\n\t" in block:
            continue
        next_start = blocks[k + 1].start() if k + 1 < len(blocks) else len(content)
        found.append((m.start(), m.end(), next_start))
    return found


def edit_document(content: str, content_format: str, rng: random.Random, kind: str, marker: str):
    """The edited content and its :class:`Edit`, or ``None`` when the document has no paragraph."""
    paragraphs = _paragraphs(content, content_format)
    if not paragraphs:
        return None
    middle = [p for p in paragraphs if 0.2 * len(content) <= p[0] <= 0.8 * len(content)] or paragraphs
    start, end, next_start = rng.choice(middle)
    html = content_format == "html"
    if kind == "insert":
        text = " ".join(_sentence(rng, f"{marker}{k}" if k else marker) for k in range(3))
        inserted = f"\n<p>{text}</p>" if html else f"\n\n{text}"
        at = end
        lead = len("\n<p>") if html else 2
        return content[:at] + inserted + content[at:], Edit(kind, (at + lead, at + lead + len(text)), marker)
    if kind == "grow":
        text = _sentence(rng, marker)
        at = end - len("</p>") if html else end
        return content[:at] + " " + text + content[at:], Edit(kind, (at + 1, at + 1 + len(text)), marker)
    deleted = content[start:end]
    return content[:start] + content[next_start:], Edit(kind, (start, end), marker, deleted)


@dataclass
class Versions:
    """The two versions: ``(id, content, content_format)`` rows, the edits by id, the added ids."""

    first: list[tuple[str, str, str]]
    second: list[tuple[str, str, str]]
    edits: dict[str, Edit]
    added: set[str]
    removed: set[str]


def make_versions(rows: list[tuple[str, str, str]], edited: float, removed: float, added: float, seed: int) -> Versions:
    """The second version of ``rows``: edited, with documents removed and added (seeded)."""
    rng = random.Random(seed)
    n = len(rows)
    order = list(range(n))
    rng.shuffle(order)
    n_removed = round(removed * n)
    gone = set(order[:n_removed])
    edits: dict[str, Edit] = {}
    contents = {}
    want = max(1, round(edited * n)) if edited > 0 else 0
    for i in order[n_removed:]:
        if len(edits) >= want:
            break
        doc_id, content, content_format = rows[i]
        if content_format not in ("markdown", "text", "rst", "html"):
            continue
        kind = KINDS[len(edits) % len(KINDS)]
        made = edit_document(content, content_format, rng, kind, f"edit{len(edits):05d}")
        if made is not None:
            contents[i], edits[doc_id] = made
    second = [(d, contents.get(i, c), f) for i, (d, c, f) in enumerate(rows) if i not in gone]
    new_ids = set()
    for k in range(round(added * n)):
        _, content, content_format = rows[rng.randrange(n)]
        new_ids.add(f"added-{k:05d}")
        second.append((f"added-{k:05d}", content, content_format))
    return Versions(rows, second, edits, new_ids, {rows[i][0] for i in gone})


@dataclass
class Keys:
    """What the figures need of one document's chunks: ids, keys, offsets, embedding texts."""

    ids: list[str]
    keys: list[str]
    spans: list[tuple[int, int] | None]
    texts: list[str]


def _keys(chunks, keep_texts: bool) -> Keys:
    return Keys(
        [c.chunk_id for c in chunks],
        [c.chunk_key for c in chunks],
        [(c.start_offset, c.end_offset) if c.start_offset is not None else None for c in chunks],
        [c.embedding_text for c in chunks] if keep_texts else [],
    )


def _overlaps(span: tuple[int, int] | None, a: int, b: int) -> bool:
    return span is not None and span[0] < b and a < span[1]


def changed_chunks(edit: Edit, first: Keys, second: Keys, first_content: str) -> int:
    """Chunks ``edit`` must change given the first version's chunks (see the module docstring)."""
    a, b = edit.span
    if edit.kind != "delete":
        return sum(
            1
            for span, text in zip(second.spans, second.texts)
            if (_overlaps(span, a, b) if span is not None else edit.marker in text)
        )
    if any(span is None for span in first.spans):
        return 1
    must = 0
    for span in first.spans:
        if _overlaps(span, a, b):
            s, e = span  # type: ignore[misc]
            if first_content[s:a].strip() or first_content[b:e].strip():
                must += 1
    return must


def _chunk(chunker, rows: Iterable[tuple[str, str, str]], keep: Callable[[str], bool]) -> tuple[dict[str, Keys], float]:
    """Each document's :class:`Keys` (embedding texts for those ``keep`` names) and the CPU seconds."""
    from transforms.chunkers import ChunkingError
    from transforms.documents import Document

    identity = chunker.identity
    out: dict[str, Keys] = {}
    started = time.process_time()
    for doc_id, content, content_format in rows:
        document = Document(id=doc_id, content=content, content_format=content_format)
        try:
            chunks = chunker.chunk(document, tokenizer_identity=identity)
        except ChunkingError:
            chunks = []
        out[doc_id] = _keys(chunks, keep(doc_id))
    return out, time.process_time() - started


class _Routed:
    """A router or a single chunker, as one thing that chunks a document."""

    def __init__(self, name: str, chunk, identity: str) -> None:
        self.name, self._chunk, self.identity = name, chunk, identity

    def chunk(self, document, *, tokenizer_identity: str):
        return self._chunk(document, tokenizer_identity=tokenizer_identity)


def chunkers() -> list[_Routed]:
    """The chunkers measured: the job's default router, its structure chunker with greedy cuts
    (when the packer offers them), and the reference API's text splitters."""
    from pipelines.config import load_config, resolve_config
    from transforms.chunkers import RecursiveCharacterTextSplitter, TokenTextSplitter
    from transforms.chunkers.registry import build_router
    from transforms.tokenizers import load_tokenizer

    spec = resolve_config(load_config(None), tokenizer=TOKENIZER, max_tokens=MAX_TOKENS, source="default")
    tokenizer = load_tokenizer(spec["tokenizer"])
    identity = tokenizer.identity
    router = build_router(spec, tokenizer=tokenizer)
    structure = router.chunkers[spec["default"]]
    measured = [_Routed(type(structure).__name__, structure.chunk, identity)]
    if "cuts" in structure.to_dict():
        greedy = type(structure).from_dict({**structure.to_dict(), "cuts": "greedy"}, tokenizer=tokenizer)
        measured.append(_Routed(f"{type(structure).__name__}, greedy cuts", greedy.chunk, identity))
    for name, splitter in (
        (
            "RecursiveCharacterTextSplitter (tokens)",
            RecursiveCharacterTextSplitter(
                tokenizer=tokenizer, length="tokens", chunk_size=MAX_TOKENS, chunk_overlap=0
            ),
        ),
        ("TokenTextSplitter", TokenTextSplitter(tokenizer=tokenizer, chunk_size=MAX_TOKENS, chunk_overlap=0)),
    ):
        measured.append(_Routed(name, splitter.chunk, identity))
    return measured


def measure(chunker: _Routed, versions: Versions) -> dict[str, float]:
    """The row of one chunker (see the module docstring)."""
    edits = versions.edits
    first, seconds = _chunk(chunker, versions.first, lambda d: d in edits)
    first_rows = {d: c for d, c, _ in versions.first}
    changed_rows = [r for r in versions.second if r[0] in edits or r[0] in versions.added]
    second_changed, _ = _chunk(chunker, changed_rows, lambda d: True)
    second = {d: second_changed.get(d) or first[d] for d, _, _ in versions.second}
    old_ids = {i for k in first.values() for i in k.ids}
    old_keys = {i for k in first.values() for i in k.keys}
    full = sum(len(k.keys) for k in second.values())
    by_id = sum(1 for k in second.values() for i in k.ids if i not in old_ids)
    by_key = sum(1 for k in second.values() for i in k.keys if i not in old_keys)
    changed = sum(len(second[d].keys) for d in versions.added)
    per_edit = []
    for doc_id, edit in edits.items():
        changed += changed_chunks(edit, first[doc_id], second[doc_id], first_rows[doc_id])
        per_edit.append(sum(1 for key in second[doc_id].keys if key not in old_keys))
    per_edit.sort()
    return {
        "full": full,
        "by_id": by_id,
        "by_key": by_key,
        "changed": changed,
        "median": statistics.median(per_edit) if per_edit else 0,
        "p95": per_edit[min(len(per_edit) - 1, int(0.95 * len(per_edit)))] if per_edit else 0,
        "max": per_edit[-1] if per_edit else 0,
        "seconds": seconds,
    }


def table(rows: dict[str, dict[str, float]], versions: Versions, source: str) -> str:
    kinds = {k: sum(1 for e in versions.edits.values() if e.kind == k) for k in KINDS}
    lines = [
        *header("tiktoken"),
        f"Input: `{source}`, {len(versions.first):,} documents; second version: "
        f"{len(versions.edits):,} edited ({kinds['insert']} paragraphs inserted, {kinds['grow']} grown by a "
        f"sentence, {kinds['delete']} deleted), {len(versions.removed):,} removed, {len(versions.added):,} added. "
        f"`cl100k_base`, {MAX_TOKENS} tokens.",
        "",
        "| chunker | full | by chunk_id | by chunk_key | changed | key / changed | per edit median | p95 | max "
        "| seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        ratio = r["by_key"] / r["changed"] if r["changed"] else float("nan")
        lines.append(
            f"| {name} | {r['full']:,} | {r['by_id']:,} | {r['by_key']:,} | {r['changed']:,} | {ratio:.2f} "
            f"| {r['median']:g} | {r['p95']:g} | {r['max']:g} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--input", required=True, help="a Parquet file or folder of documents")
    parser.add_argument("--edited", type=float, default=0.10, help="fraction of documents edited (0.10)")
    parser.add_argument("--removed", type=float, default=0.01, help="fraction of documents removed (0.01)")
    parser.add_argument("--added", type=float, default=0.01, help="fraction of documents added (0.01)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the second version (0)")
    parser.add_argument("--limit", type=int, help="only the first N documents")
    parser.add_argument("--chunkers", help="only the rows whose names start with one of these (comma-separated)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    for name in ("edited", "removed", "added"):
        if not 0 <= getattr(args, name) <= 1:
            parser.error(f"--{name} must be between 0 and 1, got {getattr(args, name)}")
    if not Path(args.input).exists():
        parser.error(f"--input {args.input}: no such file or folder")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    table_in = read_documents(args.input, ["id", "content", "content_format"])
    if args.limit is not None:
        table_in = table_in.slice(0, args.limit)
    rows = list(
        zip(
            table_in.column("id").to_pylist(),
            table_in.column("content").to_pylist(),
            [f or "text" for f in table_in.column("content_format").to_pylist()],
        )
    )
    versions = make_versions(rows, args.edited, args.removed, args.added, args.seed)
    wanted = [p.strip() for p in args.chunkers.split(",")] if args.chunkers else None
    results = {}
    for chunker in chunkers():
        if wanted and not any(chunker.name.startswith(p) for p in wanted):
            continue
        results[chunker.name] = measure(chunker, versions)
        print(f"{chunker.name}: done", file=sys.stderr)
    write_markdown(args.out, table(results, versions, shown(args.input)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
