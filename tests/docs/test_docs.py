"""docs/contract.md, the README and the pages of docs/ against the code and each other: drift fails here.

Every output column, every dead-letter reason code, every report.json key and every option the code
defines must be named in docs/contract.md. Every relative link (and its ``#anchor``) of README.md,
docs/*.md and the benchmark READMEs must reach a file of the repository, every page of docs/ must be
linked from README.md, and README.md stays a front door of at most 300 lines. The chunk job's report
keys come from a real run (and a --previous run) on two tiny documents; the parse job's from its
build_report over a result with no metrics (its keys do not depend on the metrics).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO, write_documents

CONTRACT = REPO / "docs" / "contract.md"
README_MAX_LINES = 300
DOC_PAGES = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))
LINKED_DOCS = (
    "README.md",
    *DOC_PAGES,
    *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "benchmarks").glob("**/README.md")),
)


def _named(name: str) -> bool:
    """Whether ``name`` appears in docs/contract.md as code (`name`)."""
    return f"`{name}`" in CONTRACT.read_text(encoding="utf-8")


def _schemas():
    from transforms.documents import CHUNK_SCHEMA, DEAD_LETTER_SCHEMA
    from transforms.incremental import DELETED_SCHEMA, MANIFEST_SCHEMA
    from transforms.parsing import PARSE_DEAD_LETTER_SCHEMA, PARSED_SCHEMA

    return {
        "CHUNK_SCHEMA": CHUNK_SCHEMA,
        "DEAD_LETTER_SCHEMA": DEAD_LETTER_SCHEMA,
        "MANIFEST_SCHEMA": MANIFEST_SCHEMA,
        "DELETED_SCHEMA": DELETED_SCHEMA,
        "PARSED_SCHEMA": PARSED_SCHEMA,
        "PARSE_DEAD_LETTER_SCHEMA": PARSE_DEAD_LETTER_SCHEMA,
    }


def _section(name: str) -> str:
    """The text of docs/contract.md from the heading naming ``name`` to the next heading."""
    text = CONTRACT.read_text(encoding="utf-8")
    match = re.search(rf"^#+ .*{re.escape(name)}.*$", text, flags=re.MULTILINE)
    assert match, f"docs/contract.md has no heading naming {name}"
    rest = text[match.end() :]
    end = re.search(r"^#+ ", rest, flags=re.MULTILINE)
    return rest[: end.start() if end else len(rest)]


@pytest.mark.parametrize("schema_name", sorted(_schemas()))
def test_every_output_column_is_in_its_schema_table(schema_name):
    """Each schema has its own section (named after the constant) whose table rows name every field."""
    schema = _schemas()[schema_name]
    section = _section(schema_name)
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert set(schema.names) <= rows, f"{schema_name}: not in docs/contract.md: {sorted(set(schema.names) - rows)}"
    assert rows <= set(schema.names), (
        f"{schema_name}: docs/contract.md names columns the code lacks: {sorted(rows - set(schema.names))}"
    )


def test_every_reason_code_is_in_the_contract_with_its_stage():
    from transforms.documents import REASONS, STAGES
    from transforms.parsing import PARSE_REASONS

    chunk_table = dict(re.findall(r"^\| `([a-z_]+)` \| ([a-z, ]+) \|", _section("REASONS"), flags=re.MULTILINE))
    assert set(chunk_table) == set(REASONS), sorted(set(REASONS) ^ set(chunk_table))
    for reason, stages in chunk_table.items():
        assert {s.strip() for s in stages.split(",")} <= set(STAGES), (reason, stages)
    parse_table = set(re.findall(r"^\| `([a-z][a-z0-9_]*)` \|", _section("PARSE_REASONS"), flags=re.MULTILINE))
    assert parse_table == set(PARSE_REASONS), sorted(set(PARSE_REASONS) ^ parse_table)


def test_every_name_of_a_content_format_is_in_the_contract():
    from transforms.documents import CONTENT_FORMAT_ALIASES

    table = dict(re.findall(r"^\| `([^`]+)` \| `([a-z]+)` \|$", _section("CONTENT_FORMAT_ALIASES"), flags=re.MULTILINE))
    assert table == dict(CONTENT_FORMAT_ALIASES)


def _report_keys(report, prefix=""):
    """Keys of ``report`` and of its nested objects, except the maps keyed by data (reasons, chunkers, formats)."""
    keys = []
    for key, value in report.items():
        keys.append(key)
        if isinstance(value, dict) and not key.endswith(("_by_reason", "_by_chunker", "_by_format")):
            keys.extend(_report_keys(value))
    return keys


@pytest.mark.slow
def test_every_report_key_of_a_real_run_is_in_the_contract(tmp_path, capsys):
    from pipelines.rechunk import main

    docs = [
        {"id": "a", "content": "# Title\n\nSome text.\n", "content_format": "markdown"},
        {"id": "b", "content": "   ", "content_format": "text"},  # dead-lettered: empty_document
    ]
    write_documents(tmp_path / "in" / "docs.parquet", docs)
    first_run = ["--input", str(tmp_path / "in" / "docs.parquet"), "--output", str(tmp_path / "run1")]
    assert main([*first_run, "--max-dead-letter-fraction", "1"]) == 0  # (1 of 2 dead-lettered)
    write_documents(
        tmp_path / "in2" / "docs.parquet", docs[:1] + [{"id": "c", "content": "New.", "content_format": "text"}]
    )
    assert (
        main(
            [
                "--input",
                str(tmp_path / "in2" / "docs.parquet"),
                "--output",
                str(tmp_path / "run2"),
                "--previous",
                str(tmp_path / "run1"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    first = json.loads((tmp_path / "run1" / "report.json").read_text())
    second = json.loads((tmp_path / "run2" / "report.json").read_text())
    assert first["incremental"] is None and second["incremental"] is not None  # both shapes seen
    section = _section("`report.json`")
    keys = set(_report_keys(first)) | set(_report_keys(second))
    missing = sorted(k for k in keys if f"`{k}`" not in section)
    assert not missing, f"report.json keys not in docs/contract.md's report section: {missing}"
    assert {"dead_letter_by_reason", "incremental", "structure", "model", "output"} <= keys


def test_every_parse_report_key_is_in_the_contract():
    from pipelines.parse import ParseJob, build_report

    empty = SimpleNamespace(metrics=lambda: SimpleNamespace(query=lambda _filter: {"counters": []}))
    job = SimpleNamespace(content_format="docling", max_file_bytes=1, max_file_seconds=1.0, output="out", format_for={})
    assert {"content_format", "max_file_bytes", "max_file_seconds", "output", "format_for"} <= set(
        ParseJob.__dataclass_fields__
    )
    report = build_report(empty, job=job, wall_seconds=0.0)
    section = _section("`report.json` of the parse job")
    missing = sorted(k for k in _report_keys(report) if f"`{k}`" not in section)
    assert not missing, f"parse report keys not in docs/contract.md: {missing}"


def test_the_options_of_both_jobs_are_in_the_contract():
    from pipelines.options import USAGE as _HELP
    from pipelines.parse import _USAGE

    for usage in (_HELP, _USAGE):
        for option in sorted(set(re.findall(r"(--[a-z][a-z_-]+)", usage))):
            if option in ("--help", "--runner", "--direct_running_mode", "--direct_num_workers", "--setup_file"):
                continue
            assert _named(option), f"{option} (in the usage text) is not in docs/contract.md"


_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def _prose(markdown: str) -> list[str]:
    """The lines of ``markdown`` outside fenced code blocks."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def _links(markdown: str) -> list[str]:
    """The targets of the inline links of ``markdown``, leaving out code blocks and code spans."""
    text = "\n".join(_prose(markdown))
    text = re.sub(r"(`+).+?\1", "", text)
    return _LINK.findall(text)


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: links reduced to their text, lower case, every
    character but letters, digits, ``_``, ``-`` and spaces dropped, each space a ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def _anchors(markdown: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings; a repeated slug gets ``-1``, ``-2``, ... as there."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for line in _prose(markdown.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6} (.+?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = github_slug(heading.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Dead-letter reasons", "dead-letter-reasons"),
        ("`report.json`", "reportjson"),
        ("Checking a run: `rechunk check`", "checking-a-run-rechunk-check"),
        ("`deleted/` (`DELETED_SCHEMA`, only with `--previous`)", "deleted-deleted_schema-only-with---previous"),
        (
            "RAG output: chunks into Beam's embedding and vector-store transforms",
            "rag-output-chunks-into-beams-embedding-and-vector-store-transforms",
        ),
    ],
)
def test_github_slug_follows_githubs_rule(heading, slug):
    assert github_slug(heading) == slug


def test_a_repeated_heading_gets_a_numbered_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Notes\n\n```\n# not a heading\n```\n\n## Notes\n", encoding="utf-8")
    assert _anchors(page) == {"title", "notes", "notes-1"}


@pytest.mark.parametrize("doc", LINKED_DOCS)
def test_every_relative_link_reaches_a_file_of_the_repository(doc):
    path = REPO / doc
    links = [t for t in _links(path.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", t)]
    assert links, f"{doc} has no relative link: the pattern is wrong"
    for target in links:
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        assert resolved.exists(), f"{doc}: link {target!r} reaches no file"
        assert resolved.is_relative_to(REPO), f"{doc}: link {target!r} leaves the repository"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{doc}: link {target!r}: no heading #{anchor} there"


def test_every_page_of_docs_is_linked_from_the_readme():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = {t.partition("#")[0] for t in _links(readme)}
    assert DOC_PAGES, "docs/ has no page: the pattern is wrong"
    missing = [page for page in DOC_PAGES if page not in targets]
    assert not missing, f"README.md links no page {missing}"


def test_the_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines, more than {README_MAX_LINES}"


@pytest.mark.parametrize("doc", ("README.md", *DOC_PAGES))
def test_the_docs_name_no_file_outside_the_repository(doc):
    text = (REPO / doc).read_text(encoding="utf-8")
    for outside in ("../shared", "shared/design", "shared/data", "/work/", "/home/"):
        assert outside not in text, f"{doc} names {outside!r}, outside the repository"


def test_the_readme_points_to_the_contract_in_the_repository():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/contract.md)" in readme
    assert "CONTRACT.md" not in readme


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = re.search(r"^(\./run_local\.sh test)\s*$", ci, flags=re.MULTILINE).group(1)
    assert re.search(rf"^{re.escape(command)}\s", readme, flags=re.MULTILINE)
