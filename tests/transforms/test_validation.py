"""validate_chunks: each check decides its reason, and token_count is the recount."""

from __future__ import annotations

from dataclasses import replace

import pytest

from transforms.chunkers.text import RecursiveCharacterTextSplitter
from transforms.documents import Document
from transforms.validation import validate_chunks

CONTENT = "Alpha beta gamma.\n\nDelta epsilon zeta eta theta.\n\nIota kappa."


@pytest.fixture()
def chunks(tokenizer):
    splitter = RecursiveCharacterTextSplitter(chunk_size=8, chunk_overlap=0, length="tokens", tokenizer=tokenizer)
    doc = Document(id="d", content=CONTENT, content_format="text")
    return doc, splitter.chunk(doc, tokenizer_identity=tokenizer.identity)


def test_all_good_chunks_pass_with_recounted_tokens(chunks, tokenizer, recount):
    doc, cs = chunks
    result = validate_chunks(doc, cs, tokenizer=tokenizer, tokenizer_identity=tokenizer.identity, max_tokens=8)
    assert result.rejected == []
    assert [c.text for c in result.accepted] == ["Alpha beta gamma.", "Delta epsilon zeta eta theta.", "Iota kappa."]
    assert [c.token_count for c in result.accepted] == [recount(c.embedding_text) for c in cs]


@pytest.mark.parametrize(
    "change, reason",
    [
        (lambda c: replace(c, tokenizer="tiktoken:cl100k_base:00000000"), "tokenizer_mismatch"),
        (lambda c: replace(c, text="  \n "), "empty_chunk"),
        (lambda c: replace(c, start_offset=c.start_offset + 1), "offset_mismatch"),
        (lambda c: replace(c, end_offset=None), "offset_mismatch"),
        (lambda c: replace(c, embedding_text=c.text * 5), "token_budget_exceeded"),
    ],
)
def test_each_check_rejects_with_its_reason(chunks, tokenizer, change, reason):
    doc, cs = chunks
    bad = change(cs[1])
    result = validate_chunks(
        doc, [cs[0], bad, cs[2]], tokenizer=tokenizer, tokenizer_identity=tokenizer.identity, max_tokens=8
    )
    assert [c.chunk_id for c in result.accepted] == [cs[0].chunk_id, cs[2].chunk_id]
    assert len(result.rejected) == 1
    row = result.rejected[0]
    assert (row.reason, row.stage, row.chunk_id, row.document_id) == (reason, "validate", bad.chunk_id, "d")
    assert row.payload == bad.text
    assert row.tokenizer == tokenizer.identity


def test_budget_detail_gives_the_figures(chunks, tokenizer):
    doc, cs = chunks
    result = validate_chunks(doc, cs, tokenizer=tokenizer, tokenizer_identity=tokenizer.identity, max_tokens=3)
    assert {r.reason for r in result.rejected} == {"token_budget_exceeded"}
    assert result.rejected[1].detail == "7 tokens > max 3"


def test_worker_tokenizer_that_differs_from_the_side_input_rejects_everything(chunks, tokenizer):
    doc, cs = chunks
    result = validate_chunks(doc, cs, tokenizer=tokenizer, tokenizer_identity="hf:other:12345678", max_tokens=8)
    assert result.accepted == []
    assert {r.reason for r in result.rejected} == {"tokenizer_mismatch"}


@pytest.mark.slow
def test_is_slice_is_exactly_the_slice_comparison():
    import random

    from transforms.validation import _is_slice

    rng = random.Random(5)
    content = "ab cd\n데이터 ef"
    for _ in range(3000):
        start, end = rng.randint(-15, 16), rng.randint(-15, 16)
        text = rng.choice([content[start:end], content[start:end] + "x", content[start:end][1:], "", "cd"])
        assert _is_slice(content, start, end, text) == (content[start:end] == text), (start, end, text)
