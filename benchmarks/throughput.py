"""Chunking throughput against one plain ``encode_ordinary`` pass, the peers and the whole job.

    python benchmarks/throughput.py [--input ../shared/data/corpus/docs.parquet]
        [--docling-input ../shared/data/corpus/docling.parquet] [--rounds 3] [--max-chars N]
        [--out benchmarks/results/issue-7-throughput.md] [--skip chunkers,job,linear,peers,docling]

Every row of a section is measured in the same run, the rows interleaved over ``--rounds`` rounds
(the machine may be shared, so only ratios measured side by side mean anything); each row keeps
its fastest round. One core, ``cl100k_base``, 512-token chunks, no overlap (the peers' defaults
differ; all get 0 so that they cut the same amount of text). Sections:

* **Text** (the documents of ``--input`` that are not ``docling``): ``encode_ordinary`` (the
  limit, ratio 1.00) and ``encode_ordinary_batch``; each chunker of this project alone and with
  the job's validation (``transforms.validation.validate_chunks``, what ``ChunkDocuments`` runs a chunk at a time:
  the independent recount and the checks); the peers (chonkie ``RecursiveChunker``, LangChain
  ``TokenTextSplitter`` and ``RecursiveCharacterTextSplitter.from_tiktoken_encoder``, semchunk),
  each checked once, outside the timing, for chunks over 512 tokens (recounted with
  ``cl100k_base``), chunks that are not verbatim slices, and non-whitespace characters of the
  documents that no chunk covers ("lost"). A peer that is not installed is left out
  (``pip install -e '.[peers]'``).
* **Docling** (``--docling-input``): the ratio is to one ``encode_ordinary`` pass over each
  document's Markdown export; the rows parse the JSON themselves: this project's
  ``StructureAwareChunker`` and ``DoclingChunker`` (alone, with validation) and docling-core's
  ``HybridChunker`` with its ``OpenAITokenizer``.
* **Job** (the same documents as a Parquet file): the plain single-process loop (pyarrow read,
  route, chunk, validate, pyarrow zstd write: what the job does, without Beam), and the job
  (``pipelines.rechunk``) on the DirectRunner ``in_memory`` and ``multi_processing`` with
  ``--workers`` processes. Each runs as a subprocess (start-up and imports included for all);
  peak memory is the process tree's largest resident set (``benchmarks/measure_job.py``).
* **Linear time**: each chunker (and the tokenizer's own count) on one document of 0.5 MB and of
  5 MB, of real text, of text with no whitespace, and of a single run of letters; each pair in
  its own subprocess, whose peak memory growth (VmHWM) is reported. Target: 10x longer costs at
  most 11x.

The table is printed, and with ``--out`` written as Markdown with a bar chart (PNG, matplotlib)
beside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MAX_TOKENS = 512
PEER_PACKAGES = ("chonkie", "langchain-text-splitters", "semchunk", "docling-core")


# ------------------------------------------------------------------------------------------------
# Input
# ------------------------------------------------------------------------------------------------


def _load(path: str, max_chars: int | None, *, docling: bool) -> list:
    """Documents of ``path``: the ``docling`` ones (``docling=True``) or all others, up to ``max_chars``."""
    import pyarrow.parquet as pq

    from transforms.documents import Document

    if not path or not Path(path).exists():
        return []
    table = pq.read_table(path, columns=["id", "content", "content_format"])
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


def _project_rows(documents, tokenizer, *, docling: bool) -> dict[str, Callable[[], int]]:
    """This project's chunkers, alone and with the job's validation."""
    from transforms.chunkers import (
        CharacterTextSplitter,
        DoclingChunker,
        RecursiveCharacterTextSplitter,
        StructureAwareChunker,
        TokenTextSplitter,
    )
    from transforms.validation import validate_chunks

    identity = tokenizer.identity
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
    rows = {}
    for name, chunker in chunkers.items():
        limits = (
            {"max_overlap_tokens": chunker.max_overlap_tokens, "min_preferred_tokens": chunker.min_preferred_tokens}
            if hasattr(chunker, "min_preferred_tokens")
            else None
        )

        def alone(chunker=chunker) -> int:
            return sum(len(chunker.chunk(d, tokenizer_identity=identity)) for d in documents)

        def validated(chunker=chunker, limits=limits) -> int:
            n = 0
            for d in documents:
                chunks, source = chunker.chunk_with_source(d, tokenizer_identity=identity)
                result = validate_chunks(
                    d,
                    chunks,
                    tokenizer=tokenizer,
                    tokenizer_identity=identity,
                    max_tokens=MAX_TOKENS,
                    source=None if source is d.content else source,
                    structure_limits=limits,
                )
                n += len(result.accepted)
            return n

        rows[name] = alone
        rows[f"{name} + validation"] = validated
    return rows


def _text_peers(encoding) -> dict[str, Callable[[], Callable[[str], list[str]]]]:
    """For each installed peer, a factory of ``split(text) -> chunk texts`` at 512 tokens of
    cl100k_base, no overlap. Each timed run builds a fresh one, so that no cache a peer keeps
    (semchunk memoizes token counts) carries over from the previous round or the check."""
    peers: dict[str, Callable[[], Callable[[str], list[str]]]] = {}
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
    rows, checks = {}, {}
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
        import warnings

        chunker, n = make(), 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for d in documents:
                doc = DoclingDocument.model_validate_json(d.content)
                n += sum(1 for _ in chunker.chunk(dl_doc=doc))
        return n

    over = 0
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
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

    pyarrow reads the Parquet file a row group at a time; every document goes to the chunker the
    default configuration routes it to; the accepted chunks are written as zstd Parquet
    (``CHUNK_SCHEMA``) in record batches, as the job writes them.
    """
    import pyarrow as pa
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
    limits = {
        c.config_hash: {"max_overlap_tokens": c.max_overlap_tokens, "min_preferred_tokens": c.min_preferred_tokens}
        for c in router.chunkers.values()
        if hasattr(c, "min_preferred_tokens")
    }
    os.makedirs(output_dir, exist_ok=True)
    writer = pq.ParquetWriter(os.path.join(output_dir, "chunks.parquet"), CHUNK_SCHEMA, compression="zstd")
    rows: list[dict[str, Any]] = []
    documents = chunks_written = rejected = 0
    parquet = pq.ParquetFile(input_path)
    for batch in parquet.iter_batches(columns=["id", "content", "content_format"]):
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


def _measure_process(argv: list[str], output: str) -> dict[str, Any]:
    """Wall seconds, peak memory of the process tree, and CPU seconds of its processes.

    The CPU figures say, on a busy machine, what the wall time cannot: ``cpu_busiest`` is the
    CPU time of the busiest process (the job's own, or one worker), which bounds the wall time on
    an idle machine from below, ``cpu_total`` is all the work done, and ``cpu_by_process`` is the
    job's own process (the launcher) and then each other process of at least 0.05 s, busiest first.
    """
    sys.path.insert(0, str(REPO / "benchmarks"))
    from measure_job import _high_water_bytes, process_tree

    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak = high = 0
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        tree = process_tree(proc.pid)
        peak = max(peak, sum(rss for rss, _ in tree.values()))
        high = max(high, _high_water_bytes(proc.pid))
        for pid, (_, seconds) in tree.items():
            cpu[pid] = max(cpu.get(pid, 0.0), seconds)
        time.sleep(0.1)
    wall = time.monotonic() - started
    out = proc.stdout.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:4]} exited {proc.returncode}")
    result = {
        "seconds": wall,
        "peak_mib": max(peak, high) / 2**20,
        "cpu_busiest": max(cpu.values(), default=0.0),
        "cpu_total": sum(cpu.values()),
        # the launcher (the job's own process) first, then its workers, busiest first
        "cpu_by_process": [cpu.get(proc.pid, 0.0)]
        + sorted((s for p, s in cpu.items() if p != proc.pid and s >= 0.05), reverse=True),
    }
    report = Path(output) / "report.json"
    if report.exists():
        result["chunks"] = json.loads(report.read_text())["chunks_written"]
    elif out.strip():
        result["chunks"] = json.loads(out.strip().splitlines()[-1])["chunks_written"]
    return result


def _job_rows(input_path: str, rounds: int, workers: int) -> dict[str, dict[str, Any]]:
    python = sys.executable
    runs = {
        "plain single-process loop (pyarrow read, chunk, validate, write)": lambda out: [
            python,
            str(Path(__file__).resolve()),
            "--plain-loop",
            input_path,
            out,
        ],
        "job, DirectRunner in_memory": lambda out: [
            python,
            "-m",
            "pipelines.rechunk",
            "--input",
            input_path,
            "--output",
            out,
            "--progress-seconds",
            "0",
            "--direct_running_mode=in_memory",
        ],
        f"job, DirectRunner multi_processing, {workers} workers": lambda out: [
            python,
            "-m",
            "pipelines.rechunk",
            "--input",
            input_path,
            "--output",
            out,
            "--progress-seconds",
            "0",
            "--direct_running_mode=multi_processing",
            f"--direct_num_workers={workers}",
        ],
    }
    best: dict[str, dict[str, Any]] = {}
    for _ in range(rounds):
        for name, argv in runs.items():
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "out")
                result = _measure_process(argv(out), out)
            previous = best.get(name, {})
            if not previous or result["seconds"] < previous["seconds"]:
                best[name] = {**result}
            best[name]["peak_mib"] = max(result["peak_mib"], previous.get("peak_mib", 0))
            best[name]["cpu_busiest"] = min(result["cpu_busiest"], previous.get("cpu_busiest", float("inf")))
            best[name]["cpu_total"] = min(result["cpu_total"], previous.get("cpu_total", float("inf")))
    return best


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

    sys.path.insert(0, str(REPO / "benchmarks"))
    from measure_job import _high_water_bytes

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
    base = _high_water_bytes(os.getpid())
    best = {"small": float("inf"), "large": float("inf")}
    for _ in range(rounds):
        for name, text in (("small", small), ("large", large)):
            started = time.process_time()  # one thread: CPU time, robust on a shared machine
            run(text)
            best[name] = min(best[name], time.process_time() - started)
    grown = _high_water_bytes(os.getpid()) - base
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


def _versions() -> str:
    names = ["tiktoken", "apache-beam", "pyarrow", "numpy", *PEER_PACKAGES, "matplotlib"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(found)


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{cpu}, {os.cpu_count()} cores (load average at start {load}); Linux {platform.release()}; Python {platform.python_version()}"


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
            "#4c72b0" if not any(p in l for p in ("chonkie", "LangChain", "semchunk", "docling-core")) else "#dd8452"
            for l in labels
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default=str(REPO.parent / "shared/data/corpus/docs.parquet"))
    parser.add_argument("--docling-input", default=str(REPO.parent / "shared/data/corpus/docling.parquet"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--max-chars", type=int, default=None, help="stop loading text documents after this many characters"
    )
    parser.add_argument("--workers", type=int, default=2, help="multi_processing workers of the job row")
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
    args = parser.parse_args(argv)
    if args.plain_loop:
        print(json.dumps(plain_loop(*args.plain_loop)))
        return 0
    if args.linear_probe:
        print(json.dumps(linear_probe(**json.loads(args.linear_probe))))
        return 0
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}

    from transforms.tokenizers import TiktokenTokenizer

    machine = _machine()
    tokenizer = TiktokenTokenizer("cl100k_base")
    encoding = tokenizer.encoding
    _register_offline_encoding(encoding)
    lines = [f"Machine: {machine}.", f"Versions: {_versions()}.", ""]
    bars: list[tuple[str, float]] = []
    job_bars: list[tuple[str, float]] = []

    # -- text ----------------------------------------------------------------------------------
    documents = _load(args.input, args.max_chars, docling=False)
    texts = [d.content for d in documents]
    megabytes = _megabytes(texts)
    if "chunkers" not in skip:
        rows: dict[str, Callable[[], int]] = {
            "encode_ordinary": lambda: sum(len(encoding.encode_ordinary(t)) for t in texts),
            "encode_ordinary_batch": lambda: sum(len(ids) for ids in encoding.encode_ordinary_batch(texts)),
        }
        prefixes = ("encode_ordinary", *(p.strip() for p in args.rows.split(",") if p.strip()))
        wanted = (lambda name: name.startswith(prefixes)) if args.rows.strip() else (lambda name: True)
        rows.update({k: v for k, v in _project_rows(documents, tokenizer, docling=False).items() if wanted(k)})
        checks: dict[str, dict] = {}
        if "peers" not in skip:
            peer_rows, checks = _peer_rows(
                {k: v for k, v in _text_peers(encoding).items() if wanted(k)}, texts, encoding
            )
            rows.update(peer_rows)
        best, outputs = _interleave(rows, args.rounds)
        base = best["encode_ordinary"]
        lines += [
            f"### Text: {args.input}",
            "",
            f"{len(documents)} documents (not docling), {sum(map(len, texts)):,} characters, {megabytes:.1f} MB UTF-8; "
            f"{MAX_TOKENS}-token chunks, no overlap; best of {args.rounds} interleaved rounds, one core.",
            "",
            "| row | seconds | MB/s | ratio to encode_ordinary | output | violations (checked once) |",
            "|---|---:|---:|---:|---:|---|",
        ]
        lines += _ratio_lines(best, outputs, checks, megabytes, base)
        bars += [(name, base / best[name]) for name in best]

    # -- docling -------------------------------------------------------------------------------
    dl_documents = [] if "docling" in skip else _load(args.docling_input, None, docling=True)
    if dl_documents:
        from docling_core.types.doc import DoclingDocument

        markdown = [DoclingDocument.model_validate_json(d.content).export_to_markdown() for d in dl_documents]
        md_megabytes = _megabytes(markdown)
        dl_rows: dict[str, Callable[[], int]] = {
            "encode_ordinary of the Markdown export": lambda: sum(len(encoding.encode_ordinary(t)) for t in markdown),
        }
        dl_rows.update(_project_rows(dl_documents, tokenizer, docling=True))
        dl_checks: dict[str, dict] = {}
        if "peers" not in skip:
            peer, dl_checks = _docling_peer(dl_documents, encoding)
            dl_rows.update(peer)
        dl_best, dl_out = _interleave(dl_rows, args.rounds)
        dl_base = dl_best["encode_ordinary of the Markdown export"]
        lines += [
            "",
            f"### Docling: {args.docling_input}",
            "",
            f"{len(dl_documents)} DoclingDocuments, {_megabytes(d.content for d in dl_documents):.1f} MB of JSON, "
            f"{md_megabytes:.2f} MB of Markdown export (MB/s below are of the export). Rows parse the JSON "
            f"(included in their time); best of {args.rounds} interleaved rounds.",
            "",
            "| row | seconds | MB/s | ratio to encode_ordinary of the export | output | violations |",
            "|---|---:|---:|---:|---:|---|",
        ]
        lines += _ratio_lines(dl_best, dl_out, dl_checks, md_megabytes, dl_base)
        bars += [(f"docling: {name}", dl_base / dl_best[name]) for name in dl_best if not name.startswith("encode")]

    # -- job -----------------------------------------------------------------------------------
    if "job" not in skip:
        with tempfile.TemporaryDirectory() as tmp:
            job_input = args.input
            if args.max_chars is not None:
                import pyarrow.parquet as pq

                ids = {d.id for d in documents}
                table = pq.read_table(args.input)
                table = table.filter(__import__("pyarrow").array([i in ids for i in table.column("id").to_pylist()]))
                job_input = os.path.join(tmp, "input.parquet")
                pq.write_table(table, job_input, row_group_size=64)
            job_mb = _megabytes(
                __import__("pyarrow.parquet")
                .parquet.read_table(job_input, columns=["content"])
                .column("content")
                .to_pylist()
            )
            job = _job_rows(job_input, args.rounds, args.workers)
        loop = next(iter(job.values()))
        lines += [
            "",
            f"### The whole job: {job_input if args.max_chars is None else args.input + ' (the documents above)'}",
            "",
            f"{job_mb:.1f} MB of content; each run a subprocess (interpreter start-up, imports, reading and "
            f"writing included); best of {args.rounds} interleaved rounds; peak memory of the process tree. "
            "CPU: seconds of the busiest process (the job's own or one worker: on an idle machine the wall "
            "time cannot be less) and of all processes together; the last column is the loop's CPU time "
            "over the busiest process's, the speed-up over the loop that an idle machine would allow at most. "
            "CPU per process: the job's own process, then each worker process (of the round with the best wall time).",
            "",
            "| row | seconds | MB/s | ratio to the plain loop | chunks | peak memory (MiB) | CPU s busiest / all "
            "| CPU s per process (launcher, workers) | loop CPU / busiest CPU |",
            "|---|---:|---:|---:|---:|---:|---|---|---:|",
        ]
        for name, result in job.items():
            lines.append(
                f"| {name} | {result['seconds']:.1f} | {job_mb / result['seconds']:.2f} | "
                f"{loop['seconds'] / result['seconds']:.2f} | {result.get('chunks', 0):,} | {result['peak_mib']:.0f} | "
                f"{result['cpu_busiest']:.1f} / {result['cpu_total']:.1f} | "
                f"{', '.join(f'{c:.1f}' for c in result['cpu_by_process'])} | "
                f"{loop['cpu_busiest'] / max(result['cpu_busiest'], 1e-9):.2f} |"
            )
            job_bars.append((name.split(" (")[0], loop["seconds"] / result["seconds"]))

    # -- linear --------------------------------------------------------------------------------
    if "linear" not in skip:
        linear = _linear_rows(args.input, args.linear_chars, max(1, min(args.rounds, 2)))
        small_mb = args.linear_chars / 1e6
        lines += [
            "",
            f"### Linear time: one document of {small_mb:g} M and {10 * small_mb:g} M characters",
            "",
            "Each row in its own subprocess, best of its rounds, CPU seconds (one thread); peak memory growth is the process's VmHWM "
            "after the runs minus before them (the documents themselves already held).",
            "",
            "| document | row | seconds (1x) | seconds (10x) | 10x / 1x (target <= 11) | peak memory growth (MiB) |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for (kind, row), r in linear.items():
            lines.append(
                f"| {kind} | {row} | {r['small_seconds']:.3f} | {r['large_seconds']:.3f} | "
                f"{r['large_seconds'] / max(r['small_seconds'], 1e-9):.1f} | {r['peak_growth_mib']:.0f} |"
            )

    table = "\n".join(lines)
    print(table)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        chart = out.with_suffix(".png")
        try:
            _chart(chart, bars, job_bars)
            table += f"\n\n![throughput]({chart.name})\n"
        except ImportError:
            print("matplotlib is not installed: no chart (pip install -e '.[peers]')", file=sys.stderr)
        out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
