"""benchmarks/retrieval_quality.py: Chroma's range metrics, retrieval, and a whole run on a tiny input.

The metric values are computed by hand from the definitions in Chroma's
``chunking_evaluation/evaluation_framework/base_evaluation.py``; the run uses a deterministic
keyword embedder instead of the local model, so it needs no model and no network.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import retrieval_quality as rq

R = rq.Retrieved


def scores(references, retrieved, corpus_id="a"):
    iou, recall, precision = rq.question_scores(references, corpus_id, retrieved)
    return pytest.approx(recall), pytest.approx(precision), pytest.approx(iou)


# ---------------------------------------------------------------- range helpers


def test_union_merges_overlapping_and_touching_ranges():
    assert rq.union_ranges([(5, 8), (0, 3), (3, 4), (7, 10), (12, 13)]) == [(0, 4), (5, 10), (12, 13)]
    assert rq.union_ranges([]) == []


def test_intersection_of_touching_ranges_is_empty_not_none():
    assert rq.intersect_two_ranges((0, 10), (5, 20)) == (5, 10)
    assert rq.intersect_two_ranges((0, 10), (10, 20)) == (10, 10)
    assert rq.intersect_two_ranges((0, 10), (11, 20)) is None


def test_difference_cuts_the_target_out_of_each_range():
    assert rq.difference([(0, 10)], (3, 5)) == [(0, 3), (5, 10)]
    assert rq.difference([(0, 10), (20, 30)], (5, 25)) == [(0, 5), (25, 30)]
    assert rq.difference([(3, 5)], (0, 10)) == []
    assert rq.difference([(0, 2)], (5, 8)) == [(0, 2)]


# ---------------------------------------------------------------- per-question scores (by hand)


def test_chunk_equal_to_reference_scores_one():
    assert scores([(10, 20)], [R("a", ((10, 20),))]) == (1, 1, 1)


def test_partial_overlap():
    # 5 of the reference's 10 found; chunk 15 long; 5 of the reference not covered.
    assert scores([(10, 20)], [R("a", ((15, 30),))]) == (0.5, 5 / 15, 5 / 20)


def test_chunk_inside_reference():
    # Found 20 of 100; the uncovered 80 join the IoU denominator.
    assert scores([(0, 100)], [R("a", ((40, 60),))]) == (0.2, 1, 20 / 100)


def test_duplicate_retrievals_count_twice_in_precision_only():
    # The union of intersections is 5 long; both copies (2 x 15) are in the precision denominator.
    assert scores([(10, 20)], [R("a", ((15, 30),)), R("a", ((15, 30),))]) == (0.5, 5 / 30, 5 / 35)


def test_chunk_of_another_corpus_counts_against_precision_only():
    assert scores([(10, 20)], [R("b", ((10, 20),)), R("a", ((10, 20),))]) == (1, 0.5, 0.5)
    # Only the other corpus: nothing found, and the whole reference is unused.
    assert scores([(10, 20)], [R("b", ((10, 20),))]) == (0, 0, 0)


def test_empty_retrieval_scores_zero():
    assert scores([(10, 20)], []) == (0, 0, 0)


def test_touching_chunk_finds_nothing():
    assert scores([(10, 20)], [R("a", ((20, 30),))]) == (0, 0, 0)


def test_overlapping_references_are_summed_in_recall_as_chroma_does():
    # Found: the union (0, 15) = 15; recall denominator 10 + 10 = 20 (a sum, not a union).
    assert scores([(0, 10), (5, 15)], [R("a", ((0, 15),))]) == (0.75, 1, 1)


def test_chunk_of_several_spans():
    # A HeadingChunker-like chunk: a heading line (0, 5) and its section (50, 60).
    assert scores([(52, 58)], [R("a", ((0, 5), (50, 60)))]) == (1, 6 / 15, 6 / 15)


def test_two_references_found_by_two_chunks():
    refs = [(0, 10), (100, 110)]
    retrieved = [R("a", ((0, 20),)), R("a", ((95, 105),))]
    # Found 10 + 5 of 20; chunks 20 + 10; uncovered (105, 110) = 5.
    assert scores(refs, retrieved) == (15 / 20, 15 / 30, 15 / 35)


def test_top_k_is_exact_and_breaks_ties_by_position():
    chunks = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    questions = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert rq.top_k(questions, chunks, 3).tolist() == [[0, 2, 3], [1, 3, 0]]


# ---------------------------------------------------------------- a whole run


class KeywordEmbedder:
    """Counts of a few keywords: a question retrieves the paragraph of its keyword first; every
    other chunk has similarity 0, so the ties go to the first in the pool."""

    identity = "test-keywords"
    WORDS = ("alpha", "bravo", "gamma", "delta")

    def __init__(self):
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        out = []
        for text in texts:
            words = re.findall(r"[a-z]+", text.lower())
            out.append([words.count(w) for w in self.WORDS])
        return out


# Three paragraphs of exactly the same length, one keyword each.
CORPUS_A = (
    "Alpha alpha alpha is the first topic here.\n\n"
    "Bravo bravo bravo is the other topic here.\n\n"
    "Gamma gamma gamma is the third topic here.\n"
)
CORPUS_B = "# Topics\n\nDelta delta delta is a topic in a second corpus.\n"


def _write_input(tmp_path: Path, questions):
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    (corpora / "a.txt").write_text(CORPUS_A, encoding="utf-8")
    (corpora / "b.md").write_text(CORPUS_B, encoding="utf-8")
    path = tmp_path / "questions.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "references", "corpus_id"])
        for question, corpus_id, excerpt in questions:
            text = (corpora / corpus_id).read_text(encoding="utf-8")
            start = text.index(excerpt)
            refs = [{"content": excerpt, "start_index": start, "end_index": start + len(excerpt)}]
            writer.writerow([question, json.dumps(refs), corpus_id])
    return corpora, path


QUESTIONS = [
    ("What about alpha?", "a.txt", "Alpha alpha alpha is the first topic here."),
    ("And gamma?", "a.txt", "Gamma gamma gamma is the third topic here."),
    ("Tell me of delta.", "b.md", "Delta delta delta is a topic in a second corpus."),
]


def _row(table: str, chunker: str) -> list[str]:
    line = next(row for row in table.splitlines() if row.startswith(f"| {chunker}"))
    return [cell.strip() for cell in line.strip("|").split("|")]


@pytest.mark.slow
def test_run_scores_each_chunker_on_a_tiny_input(tmp_path, capsys):
    corpora, questions = _write_input(tmp_path, QUESTIONS)
    out = tmp_path / "table.md"
    embedder = KeywordEmbedder()
    argv = [
        "--corpora",
        str(corpora),
        "--questions",
        str(questions),
        "--out",
        str(out),
        "--chunker",
        "RecursiveCharacterTextSplitter",
        "--max-tokens",
        "13",
        "--k",
        "1",
    ]
    assert rq.main(argv, embedder=embedder) == 0
    table = out.read_text(encoding="utf-8")
    assert table in capsys.readouterr().out
    # One paragraph per chunk (9, 12 and 9 tokens: no two fit 13), and b.md's heading (2) and
    # paragraph (11); each question retrieves exactly its reference: every score is 100.
    row = _row(table, "RecursiveCharacterTextSplitter")
    assert row[1:5] == ["13", "5", "9", "0"]
    assert row[5:] == ["100.0 ± 0.0", "100.0 ± 0.0", "100.0 ± 0.0", "1"]

    # k = 2: the second chunk is the first of the pool that is not the first hit (similarity 0
    # ties): for alpha the bravo paragraph, for gamma the alpha one (both of the same corpus,
    # 42 code points), for delta the alpha paragraph of the other corpus (42, found nothing).
    out2 = tmp_path / "k2.md"
    argv2 = [
        *argv[:4],
        "--out",
        str(out2),
        "--chunker",
        "RecursiveCharacterTextSplitter",
        "--max-tokens",
        "13",
        "--k",
        "2",
    ]
    assert rq.main(argv2, embedder=KeywordEmbedder()) == 0
    row = _row(out2.read_text(encoding="utf-8"), "RecursiveCharacterTextSplitter")
    p = [42 / 84, 42 / 84, 48 / (48 + 42)]
    expected = f"{100 * np.mean(p):.1f} ± {100 * np.std(p):.1f}"
    assert row[5:] == ["100.0 ± 0.0", expected, expected, "2"]


@pytest.mark.slow
def test_docling_chunker_row_converts_the_corpora_with_docling(tmp_path):
    """DoclingChunker gets both corpora converted by Docling (text read as Markdown) and finds each
    paragraph: its lines are the paragraphs' text, located exactly. (Docling is the parse extra.)"""
    pytest.importorskip("docling")
    corpora, questions = _write_input(tmp_path, QUESTIONS)
    out = tmp_path / "table.md"
    argv = [
        "--corpora",
        str(corpora),
        "--questions",
        str(questions),
        "--out",
        str(out),
        "--chunker",
        "DoclingChunker",
        "--max-tokens",
        "13",
        "--k",
        "1",
    ]
    assert rq.main(argv, embedder=KeywordEmbedder()) == 0
    row = _row(
        out.read_text(encoding="utf-8"),
        "DoclingChunker (2 corpora converted by Docling; 4 of 4 chunk lines located by text search (0 of",
    )
    assert row[2] == "4" and row[5:] == ["100.0 ± 0.0", "100.0 ± 0.0", "100.0 ± 0.0", "1"]


def test_chunks_over_the_budget_are_left_out_and_counted(tmp_path):
    corpora, questions = _write_input(tmp_path, QUESTIONS)
    out = tmp_path / "table.md"
    argv = [
        "--corpora",
        str(corpora),
        "--questions",
        str(questions),
        "--out",
        str(out),
        "--chunker",
        "HeadingChunker",
        "--max-tokens",
        "12",
        "--k",
        "1",
    ]
    assert rq.main(argv, embedder=KeywordEmbedder()) == 0
    row = _row(out.read_text(encoding="utf-8"), "HeadingChunker")
    # a.txt is one section of 30 tokens and b.md one of 14: both over 12, both left out.
    assert row[1:5] == ["12", "0", "—", "2"]
    assert row[5:8] == ["—", "—", "—"]


def test_a_reference_that_is_not_its_corpus_text_is_an_input_error(tmp_path, capsys):
    corpora, questions = _write_input(tmp_path, QUESTIONS)
    text = questions.read_text(encoding="utf-8").replace("first topic", "frist topic")
    questions.write_text(text, encoding="utf-8")
    assert rq.main(["--corpora", str(corpora), "--questions", str(questions)], embedder=KeywordEmbedder()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not its content" in err and "line 2" in err


def test_html_corpora_are_refused(tmp_path, capsys):
    corpora, questions = _write_input(tmp_path, QUESTIONS)
    (corpora / "a.txt").rename(corpora / "a.html")
    text = questions.read_text(encoding="utf-8").replace("a.txt", "a.html")
    questions.write_text(text, encoding="utf-8")
    assert rq.main(["--corpora", str(corpora), "--questions", str(questions)], embedder=KeywordEmbedder()) == 2
    assert "not supported" in capsys.readouterr().err


def test_the_shipped_questions_match_their_corpora():
    questions, documents = rq.load_inputs(rq.DATA / "corpora", rq.DATA / "questions.csv")
    assert len(questions) >= 40
    assert {d.content_format for d in documents.values()} == {"markdown", "rst", "text"}
    for q in questions:
        content = documents[q.corpus_id].content
        for start, end in q.references:
            assert content[start:end].strip()


def test_locate_ignores_whitespace_and_case_from_the_previous_chunk_on():
    corpus = "One two.\n\nThree   four.\nOne two."
    assert rq.locate(corpus, "three four.", 0) == (10, 23)
    # Searched from the previous chunk's end first, so a repeated text is found in order.
    assert rq.locate(corpus, "One two.", 9) == (24, 32)
    assert rq.locate(corpus, "One two.", 0) == (0, 8)
    assert rq.locate(corpus, "five", 0) is None


# ---------------------------------------------------------------- DoclingChunker: converted, located line by line


def test_locate_lines_finds_text_whose_markup_docling_removed():
    source = (
        '# Title\n\nSome **bold** text with a [link](http://x.org/a_b "Link") here.\n\n## Next\n\n'
        "- item `one`\n- item two\n"
    )
    # A docling chunk: item texts one per line, markup gone, the link rewritten as [text](url);
    # its last line is a table triplet, which is nowhere in the source.
    text = "Some bold text with a [link](http://x.org/a_b) here.\n- item one\n- item two\nrow, col = value"
    ranges, lines, missed = rq.locate_lines(source, text, 0)
    paragraph = (source.index("Some"), source.index("here.") + len("here."))
    items = (source.index("item `one`"), len(source) - 1)
    # Two ranges, not joined: the heading "## Next" stands between them; the list's lines are
    # joined across the backtick and the next item's marker.
    assert ranges == [paragraph, items]
    assert lines == 4 and missed == ["row, col = value"]


def test_align_words_skips_markup_and_needs_nine_tenths_of_the_words():
    source = "Intro.\n\nReturn the *delta* of :func:`x`. Then more.\n"
    assert rq.align_words(source, "Return the delta of x .", 0) == (8, source.index("Then") - 1)
    assert rq.align_words(source, "Return the gamma of x", 0) is None  # 4 of 5 words: under 90%
    assert rq.align_words(source, "!!", 0) is None


def test_unlocated_text_counts_against_precision_and_finds_nothing():
    # A chunk with 10 located code points (the whole reference) and 30 not located.
    assert scores([(10, 20)], [R("a", ((10, 20),), 30)]) == (1, 10 / 40, 10 / 40)
    assert scores([(10, 20)], [R("a", (), 30)]) == (0, 0, 0)


DOCLING_MD = (
    "# Errors\n\nAlpha **alpha** alpha is the [first](http://example.org/alpha_topic) topic here.\n\n"
    "## More\n\n- Bravo `bravo` bravo is the other topic.\n- Gamma gamma gamma is the third topic.\n"
)
DOCLING_RST = (
    "Deltas\n======\n\nDelta delta delta is a topic in a *reST* corpus.\n\n.. function:: delta(x)\n\n"
    "   Return the delta of :func:`x`.\n"
)


def test_docling_chunker_is_scored_on_docling_conversions_located_in_the_source(tmp_path):
    pytest.importorskip("docling")
    pytest.importorskip("docutils")
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    (corpora / "c.md").write_text(DOCLING_MD, encoding="utf-8")
    (corpora / "d.rst").write_text(DOCLING_RST, encoding="utf-8")
    alpha = "Alpha **alpha** alpha is the [first](http://example.org/alpha_topic) topic here."
    gamma = "Gamma gamma gamma is the third topic."
    delta = "Delta delta delta is a topic in a *reST* corpus."
    path = tmp_path / "questions.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "references", "corpus_id"])
        for question, corpus_id, corpus, excerpt in (
            ("What about alpha?", "c.md", DOCLING_MD, alpha),
            ("And gamma?", "c.md", DOCLING_MD, gamma),
            ("Tell me of delta.", "d.rst", DOCLING_RST, delta),
        ):
            start = corpus.index(excerpt)
            writer.writerow(
                [
                    question,
                    json.dumps([{"content": excerpt, "start_index": start, "end_index": start + len(excerpt)}]),
                    corpus_id,
                ]
            )
    out = tmp_path / "table.md"
    argv = [
        "--corpora",
        str(corpora),
        "--questions",
        str(path),
        "--out",
        str(out),
        "--chunker",
        "DoclingChunker",
        "--max-tokens",
        "30",
        "--k",
        "1",
    ]
    assert rq.main(argv, embedder=KeywordEmbedder()) == 0
    # Docling's chunks (30 tokens with the headings): the alpha paragraph (5 lines: docling cuts
    # it at its inline markup); the list of bravo and gamma (2 lines); the reST section, whose
    # function description became two paragraphs (5 lines); 76 + 80 + 77 code points of text.
    # Each is located in the source as the whole stretch of it that holds its text:
    list_range = DOCLING_MD[DOCLING_MD.index("- Bravo") : DOCLING_MD.index("third topic.") + len("third topic.")]
    rst_range = DOCLING_RST[DOCLING_RST.index("Delta delta") : DOCLING_RST.index(":func:`x`.") + len(":func:`x`.")]
    precision = [1, len(gamma) / len(list_range), len(delta) / len(rst_range)]
    expected = f"{100 * np.mean(precision):.1f} ± {100 * np.std(precision):.1f}"
    row = _row(out.read_text(encoding="utf-8"), "DoclingChunker")
    assert (
        row[0]
        == "DoclingChunker (2 corpora converted by Docling; 12 of 12 chunk lines located by text search (0 of 233 code points not found))"
    )
    assert row[1:5] == ["30", "3", "26", "0"]
    assert row[5:] == ["100.0 ± 0.0", expected, expected, "1"]
