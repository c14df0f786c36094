"""The chunk job's command line: its options, their one-line errors and the usage text.

Every mistake is an :class:`OptionError`, whose message is one line; the jobs print it on stderr
and exit with status 2 before any pipeline starts. The parsers here read text only: checks that
touch a filesystem, a service or a runner are in :mod:`pipelines.preflight` and
:mod:`pipelines.runners`.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence
from typing import NoReturn

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.config import MAX_TOKENS_LIMIT
from pipelines.verdict import DEFAULT_MAX_DEAD_LETTER_FRACTION
from transforms.documents import DOCUMENT_COLUMNS

__all__ = [
    "DEFAULT_MAX_DOCUMENT_CHARS",
    "DEFAULT_PROGRESS_SECONDS",
    "MAX_DOCUMENT_CHARS_LIMIT",
    "USAGE",
    "OptionError",
    "OptionParser",
    "RechunkOptions",
    "RunError",
    "check_given_once",
    "known_option_names",
    "one_line",
    "parse_column_map",
    "parse_max_dead_letter_fraction",
    "parse_max_document_chars",
    "parse_max_tokens",
    "parse_progress_seconds",
    "read_options",
    "unknown_options",
    "unrecognized",
]

#: Default of --max-document-chars (code points): a 50 MB document is chunked.
DEFAULT_MAX_DOCUMENT_CHARS = 100_000_000
#: Above this, one document's UTF-8 could pass 2 GiB, which one Arrow string value cannot hold.
MAX_DOCUMENT_CHARS_LIMIT = 500_000_000
#: Default of --progress-seconds.
DEFAULT_PROGRESS_SECONDS = 30

USAGE = """usage: rechunk --input PATTERN --output DIR [--config FILE] [--tokenizer SPEC]
               [--max-tokens N] [--column-map NAME=COLUMN,...] [--previous DIR]
               [--max-document-chars N] [--progress-seconds N]
               [--max-dead-letter-fraction F] [Beam pipeline options]

Chunk parsed documents (Parquet) for RAG ingestion with Apache Beam.

  --input PATTERN      document Parquet files (local path, gs://, any Beam filesystem)
  --output DIR         writes DIR/chunks/, DIR/dead_letter/, DIR/documents/ (Parquet), DIR/report.json
                       and report.html, then DIR/_SUCCESS when the run is committed
  --config FILE        YAML/JSON chunkers and routes (default: configs/default.yaml, in the README)
  --tokenizer SPEC     tiktoken:cl100k_base (default) | tiktoken:o200k_base | utf8-bytes
                       | hf:PATH (tokenizer.json, local or gs://) | hf-model:PATH (what a model reads)
  --max-tokens N       hard budget for each chunk's embedding_text (default 512)
  --column-map MAP     input column names, e.g. content=text,id=doc_id
  --max-document-chars N  longer documents are dead-lettered as document_too_large (100,000,000)
  --progress-seconds N    log documents done, of the total, and time left every N seconds (30; 0: never)
  --max-dead-letter-fraction F  exit status 3 when more than this fraction of the documents read
                       is dead-lettered (0.1; 1: never)
  --previous DIR       an earlier run's output: unchanged documents keep its chunks (not chunked
                       again); DIR/deleted/ lists its chunk ids this run no longer has

Any Apache Beam option passes through: --runner, --direct_running_mode, --direct_num_workers,
--setup_file, ... Exit status: 0 the run is committed; 1 it is not (nothing committed); 2 a
mistake in the options (before the pipeline starts); 3 committed, but over
--max-dead-letter-fraction.

rechunk parse --input PATTERN --output DIR ...   raw files (HTML, Markdown, DOCX, PPTX, XLSX, PDF)
                       into this job's input with Docling (rechunk parse --help)
rechunk check --input PATTERN --output DIR ...   recount and check a finished run's chunks against
                       its input, independently of the job (rechunk check --help)
"""


class OptionError(ValueError):
    """A command-line mistake: one line, exit status 2."""


class RunError(RuntimeError):
    """A run that started and did not finish whole (nothing committed): one line, exit status 1."""


class OptionParser(argparse.ArgumentParser):
    """An argument parser whose mistakes are :class:`OptionError` (argparse would print its usage
    and exit)."""

    def error(self, message: str) -> NoReturn:
        raise OptionError(message)


class RechunkOptions(PipelineOptions):
    """The job's own options; every other Beam option passes through to the runner."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        parser.add_argument("--input", help="File pattern of document Parquet files (any Beam filesystem).")
        parser.add_argument(
            "--output",
            help="Output directory: chunks/, dead_letter/, documents/, deleted/ (with --previous), report.json.",
        )
        parser.add_argument("--config", help="YAML or JSON chunking configuration. Default: configs/default.yaml.")
        parser.add_argument(
            "--tokenizer",
            help="Budget tokenizer: tiktoken:cl100k_base (default), utf8-bytes, or hf:PATH to a tokenizer.json (local or gs://).",
        )
        parser.add_argument(
            "--max-tokens",
            "--max_tokens",
            dest="max_tokens",
            help="Hard budget for every chunk's embedding_text, in tokens of --tokenizer. Default 512.",
        )
        parser.add_argument(
            "--column-map",
            "--column_map",
            dest="column_map",
            help="Input column names, e.g. content=text,id=doc_id. Default: the contract's names.",
        )
        parser.add_argument(
            "--max-document-chars",
            "--max_document_chars",
            dest="max_document_chars",
            help=f"Longer documents (in code points) are dead-lettered as document_too_large. "
            f"Default {DEFAULT_MAX_DOCUMENT_CHARS:,}.",
        )
        parser.add_argument(
            "--progress-seconds",
            "--progress_seconds",
            dest="progress_seconds",
            help=f"Log documents and chunks per second every N seconds (per worker); 0: never. "
            f"Default {DEFAULT_PROGRESS_SECONDS}.",
        )
        parser.add_argument(
            "--max-dead-letter-fraction",
            "--max_dead_letter_fraction",
            dest="max_dead_letter_fraction",
            help=f"Exit status 3 when more than this fraction (0 to 1) of the documents read is dead-lettered; "
            f"1: never. Default {DEFAULT_MAX_DEAD_LETTER_FRACTION}.",
        )
        parser.add_argument(
            "--previous",
            help="An earlier run's output directory: unchanged documents keep its chunks without being chunked again.",
        )


def one_line(err: BaseException | str, limit: int = 200) -> str:
    """``err``'s message (or text) on one line (runs of whitespace as one space), cut at ``limit`` characters."""
    return " ".join(str(err).split())[:limit]


_RAISED = re.compile(r"^\s*[A-Za-z_][\w.]*(?:Error|Exception|Exit)\w*: (\S.*)$")


def worker_error_line(err: BaseException | str, limit: int = 400) -> str:
    """The cause of a runner's error on one line: when its text holds a worker's traceback (the
    FnApiRunner's, by worker process), the message of the last exception it names (``StoreError:
    MESSAGE`` gives ``MESSAGE``); else the text as :func:`one_line` gives it."""
    text = str(err)
    if "Traceback (most recent call last)" in text:
        raised = [m.group(1) for m in map(_RAISED.match, text.splitlines()) if m]
        if raised:
            return one_line(raised[-1], limit)
    return one_line(text, limit)


def read_options(argv: Sequence[str]) -> PipelineOptions:
    """The chunk job's command line as Beam options, with ``--input`` and ``--output`` given.

    Raises:
        OptionError: An option no Beam options class knows, a stray argument, one of the job's own
            options given twice, or ``--input`` or ``--output`` missing.
    """
    unknown = unknown_options(argv)
    if unknown:
        raise OptionError(unrecognized(unknown[0], known_option_names(), "rechunk --help"))
    own = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    RechunkOptions._add_argparse_args(own)
    check_given_once(argv, own)
    options = PipelineOptions(list(argv))
    job_opts = options.view_as(RechunkOptions)
    if not job_opts.input:
        raise OptionError("--input is required: a file pattern of document Parquet files")
    if not job_opts.output:
        raise OptionError(
            "--output is required: the directory to write chunks/, dead_letter/, documents/ and report.json"
        )
    return options


def unrecognized(arg: str, known: argparse.ArgumentParser | Iterable[str], see: str) -> str:
    """The one line for an ``arg`` no parser knows: an option with the known option nearest to
    it when one is close (``--max-token``: did you mean ``--max-tokens``?, by
    :func:`difflib.get_close_matches` with ``_`` read as ``-``), else a hint to ``see``.

    ``known``: a parser whose option strings are the known names, or the names themselves.
    """
    if not arg.startswith("-"):
        return (
            f"unrecognized argument {arg} (an option's value? quote a pattern, e.g. --input 'docs/**', so that "
            f"the shell does not expand it; see {see})"
        )
    names = (
        [o for a in known._actions for o in a.option_strings] if isinstance(known, argparse.ArgumentParser) else known
    )
    given = arg.split("=", 1)[0]
    spelled = {name.replace("_", "-").lower(): name for name in names if name.startswith("--")}
    close = (
        difflib.get_close_matches(given.replace("_", "-").lower(), sorted(spelled), n=1, cutoff=0.75)
        if len(given) <= 100
        else []
    )
    hint = f"did you mean {spelled[close[0]].replace('_', '-')}? " if close else ""
    return f"unrecognized option {given} ({hint}see {see})"


def known_option_names(*, exclude: tuple[type, ...] = ()) -> list[str]:
    """The option strings of every registered ``PipelineOptions`` class (the job's and Beam's),
    but those of the classes in ``exclude``."""
    from apache_beam.options.pipeline_options import _BeamArgumentParser

    parser = _BeamArgumentParser(add_help=False, allow_abbrev=False)
    for cls in _options_classes(exclude):
        cls._add_argparse_args(parser)
    return [o for a in parser._actions for o in a.option_strings]


def _options_classes(exclude: tuple[type, ...]) -> list[type[PipelineOptions]]:
    """The registered ``PipelineOptions`` classes, one of each name, but those in ``exclude``."""
    seen: dict[str, type[PipelineOptions]] = {}
    for cls in PipelineOptions.__subclasses__():
        if cls not in exclude:
            seen.setdefault(str(cls), cls)
    return list(seen.values())


def unknown_options(argv: Sequence[str], *, exclude: tuple[type, ...] = ()) -> list[str]:
    """Options (and arguments) in ``argv`` that no registered ``PipelineOptions`` class knows,
    leaving out the classes in ``exclude``: Beam itself would only warn and drop them.

    Raises:
        OptionError: A known option is malformed (argparse's own message, e.g. a missing value).
    """
    from apache_beam.options.pipeline_options import _BeamArgumentParser

    class _Parser(_BeamArgumentParser):
        def error(self, message):  # argparse would print Beam's whole usage and exit
            raise OptionError(message)

    parser = _Parser(allow_abbrev=False)
    for cls in _options_classes(exclude):
        cls._add_argparse_args(parser)
    _, unknown = parser.parse_known_args(list(argv))
    return unknown


def check_given_once(argv: Sequence[str], parser: argparse.ArgumentParser) -> None:
    """Each of ``parser``'s options at most once in ``argv`` (``--opt V`` or ``--opt=V``, under any
    of its names): argparse would keep the last of a repeated one silently.

    Raises:
        OptionError: Naming the repeated option and how many times it is given.
    """
    for action in parser._actions:
        given = [a for a in argv if a.split("=", 1)[0] in action.option_strings]
        if len(given) > 1:
            raise OptionError(f"{action.option_strings[0]} is given {len(given)} times; give it once")


def parse_column_map(text: str | None) -> dict[str, str]:
    """``--column-map`` (``NAME=COLUMN,...``) as ``{NAME: COLUMN}``; empty when not given.

    Raises:
        OptionError: A NAME that is not one of ``DOCUMENT_COLUMNS``, an item without ``=``, a NAME
            mapped twice, two names on one column, or a COLUMN that is another name's own column
            while that name is not mapped elsewhere.
    """
    if not text:
        return {}
    mapping: dict[str, str] = {}
    for item in text.split(","):
        target, sep, source = item.partition("=")
        if not sep or target.strip() not in DOCUMENT_COLUMNS or not source.strip():
            raise OptionError(
                f"--column-map: expected NAME=COLUMN with NAME one of {', '.join(DOCUMENT_COLUMNS)}, got {item!r}"
            )
        if target.strip() in mapping:
            raise OptionError(f"--column-map: {target.strip()} is mapped twice in {text!r}")
        mapping[target.strip()] = source.strip()
    if len(set(mapping.values())) < len(mapping):
        raise OptionError(f"--column-map: two names map to the same column in {text!r}")
    for target, source in mapping.items():
        if source in DOCUMENT_COLUMNS and source != target and source not in mapping:
            raise OptionError(
                f"--column-map: {target}={source} would read the {source} column as {target}; "
                f"map {source} elsewhere too, or choose another column"
            )
    return mapping


def parse_max_document_chars(value: str | None) -> int:
    """``--max-document-chars`` in code points (default :data:`DEFAULT_MAX_DOCUMENT_CHARS`).

    Raises:
        OptionError: Not an integer from 1 to :data:`MAX_DOCUMENT_CHARS_LIMIT`.
    """
    if value is None:
        return DEFAULT_MAX_DOCUMENT_CHARS
    try:
        chars = int(value)
    except ValueError:
        chars = 0
    if not 0 < chars <= MAX_DOCUMENT_CHARS_LIMIT:
        raise OptionError(
            f"--max-document-chars must be an integer from 1 to {MAX_DOCUMENT_CHARS_LIMIT:,} "
            f"(one document's text must stay under Arrow's 2 GiB), got {value!r}"
        )
    return chars


def parse_progress_seconds(value: str | None) -> float:
    """``--progress-seconds`` (default :data:`DEFAULT_PROGRESS_SECONDS`; 0: no progress lines).

    Raises:
        OptionError: Not a finite number of seconds >= 0.
    """
    if value is None:
        return DEFAULT_PROGRESS_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise OptionError(f"--progress-seconds must be a number of seconds >= 0 (0: never), got {value!r}")
    return seconds


def parse_max_dead_letter_fraction(value: str | None) -> float:
    """``--max-dead-letter-fraction`` (default :data:`~pipelines.verdict.DEFAULT_MAX_DEAD_LETTER_FRACTION`).

    Raises:
        OptionError: Not a number from 0 to 1 (a percent such as ``10%`` gets a hint).
    """
    if value is None:
        return DEFAULT_MAX_DEAD_LETTER_FRACTION
    try:
        fraction = float(value)
    except ValueError:
        fraction = -1.0
    if not 0 <= fraction <= 1:
        hint = f" (for {value.strip()} write {float(value.strip()[:-1]) / 100:g})" if _is_percent(value) else ""
        raise OptionError(
            f"--max-dead-letter-fraction must be a number from 0 to 1 (1: never exit 3 for dead letters), "
            f"got {value!r}{hint}"
        )
    return fraction


def _is_percent(value: str) -> bool:
    """Whether ``value`` reads as a percent from 0 to 100 (``10%``)."""
    try:
        return value.strip().endswith("%") and 0 <= float(value.strip()[:-1]) <= 100
    except ValueError:
        return False


def parse_max_tokens(value: str | None) -> int | None:
    """``--max-tokens`` (tokens of the job's tokenizer); ``None`` when not given (the
    configuration's budget then holds).

    Raises:
        OptionError: Not a positive integer, or over ``MAX_TOKENS_LIMIT``.
    """
    if value is None:
        return None
    try:
        max_tokens = int(value)
    except ValueError:
        raise OptionError(f"--max-tokens must be a positive integer, got {value!r}") from None
    if max_tokens <= 0:
        raise OptionError(f"--max-tokens must be a positive integer, got {max_tokens}")
    if max_tokens > MAX_TOKENS_LIMIT:
        raise OptionError(f"--max-tokens must be at most {MAX_TOKENS_LIMIT:,}, got {max_tokens:,}")
    return max_tokens
