"""Differential harness: run one tree's chunkers over cases, write every chunk field.

Usage (the tree comes from PYTHONPATH / cwd):
    python harness.py CASES.pkl OUT.pkl

CASES.pkl: {"part_chars": int | None, "tile_batch": int | None, "streamed": bool, "cases": [(case_id, content, fmt, tokenizer_spec, chunker, params)]}
OUT.pkl: {case_id: ("ok", chunks, packed, cpu_seconds) | ("err", repr, None, cpu_seconds)}
"""

from __future__ import annotations

import pickle
import sys
import time


def main() -> None:
    cases_path, out_path = sys.argv[1], sys.argv[2]
    with open(cases_path, "rb") as f:
        spec = pickle.load(f)
    from transforms.chunkers import HeadingChunker, StructureAwareChunker, structure
    from transforms.documents import Document
    from transforms.structure import packing
    from transforms.tokenizers import load_tokenizer

    if spec.get("part_chars"):
        packing.limits.PART_CHARS = spec["part_chars"]
    if spec.get("window_chars"):
        from transforms.structure.normalizers import markdown

        markdown.WINDOW_CHARS = spec["window_chars"]
        markdown.STREAM_WINDOW_CHARS = spec["window_chars"]  # (a name main does not read)
    if spec.get("tile_batch"):
        packing.limits.TILE_BATCH = spec["tile_batch"]
    if spec.get("streamed"):
        from transforms.structure.tree import Node, NormalizedDocument, StreamedChildren

        def streamed(node):
            children = node.children
            if children and node.kind in ("list", "list_item", "table", "quote"):
                children = StreamedChildren(map, streamed, tuple(children))
            elif children:
                children = tuple(streamed(c) for c in children)
            return Node(
                node.kind,
                node.start,
                node.end,
                children,
                level=node.level,
                title=node.title,
                language=node.language,
                fence=node.fence,
                header_rows=node.header_rows,
                page_no=node.page_no,
            )

        real_normalize = structure._normalize

        def normalize(registry, document):
            n = real_normalize(registry, document)
            return NormalizedDocument(
                text=n.text,
                blocks=tuple(streamed(b) for b in n.blocks),
                content_format=n.content_format,
                verbatim=n.verbatim,
                diagnostics=n.diagnostics,
            )

        structure._normalize = normalize
    tokenizers = {}
    packed: list = []
    real_piece = structure._piece

    def piece(source, verbatim, chunk):
        packed.append(tuple(sorted(vars(chunk).items())))
        return real_piece(source, verbatim, chunk)

    structure._piece = piece
    out = {}
    for case_id, content, fmt, tok_spec, kind, params in spec["cases"]:
        tok = tokenizers.get(tok_spec)
        if tok is None:
            tok = tokenizers[tok_spec] = load_tokenizer(tok_spec)
        packed.clear()
        t0 = time.process_time()
        try:
            if kind == "heading":
                chunker = HeadingChunker(**params)
            else:
                chunker = StructureAwareChunker(tokenizer=tok, **params)
            doc = Document(id="doc", content=content, content_format=fmt, metadata={"m": 1})
            chunks = chunker.chunk(doc, tokenizer_identity=tok.identity)
            rows = [tuple(sorted((k, repr(v)) for k, v in vars(c).items())) for c in chunks]
            out[case_id] = ("ok", rows, list(packed), time.process_time() - t0)
        except Exception as err:
            out[case_id] = ("err", f"{type(err).__name__}: {err}"[:500], None, time.process_time() - t0)
    with open(out_path, "wb") as f:
        pickle.dump(out, f)


if __name__ == "__main__":
    main()
