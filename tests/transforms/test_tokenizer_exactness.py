"""cl100k_base exactness at two corners: the long-run check sees a symbol run through
U+001C..U+001F, and encode agrees with count on a surrogate pair."""

from __future__ import annotations

import pytest

from transforms.tokenizers import TiktokenTokenizer, segments


@pytest.fixture(scope="module")
def cl100k() -> TiktokenTokenizer:
    return TiktokenTokenizer("cl100k_base")


# Shows: _may_hold_long_run says "no" although the text holds a long symbol run. U+001C..U+001F
# (information separators) are whitespace to Python's str.isspace but not to the pattern's \s
# (Unicode White_Space), so cl100k_base's punctuation piece [^\s\p{L}\p{N}]++ runs through them
# and _LONG_RUN finds the run; but the symbols table of _run_tables() marks them 0 (built with
# str.isspace) and the whitespace table marks "!" 0, so "!" * 1000 + "\x1c", repeated, breaks
# the streak of every table. The segment then goes to tiktoken as one piece, whose merge loop is
# quadratic (measured on a busy machine: 64 K code points 1.4 s, 128 K 5.5 s, while "!" * 128 K
# takes 0.05 s through the windows); a few hundred KB of such text stalls a worker for minutes.
# (The docstring claims "never wrong when it says no"; the windows themselves are tested in test_tokenizers.py::test_long_runs_of_any_script_are_encoded_in_windows.)
@pytest.mark.parametrize("separator", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_may_hold_long_run_sees_symbol_runs_through_information_separators(separator):
    text = ("!" * 1000 + separator) * 3
    assert segments.LONG_RUN.search(text)  # one pre-token of 3,003 code points
    assert segments.may_hold_long_run(text)


# A surrogate pair held as two code points (possible in a Python string, never in Parquet): every
# path turns each lone surrogate into U+FFFD, so encode, count and the ids behind token_ends and
# slice_counter agree (tiktoken's own fallback would join the pair into one character, U+1F600).
@pytest.mark.parametrize("engine", ["bpe-openai", "tiktoken"])
def test_encode_agrees_with_count_on_a_surrogate_pair(engine):
    tokenizer = TiktokenTokenizer("cl100k_base", engine=engine)
    text = "\ud83d\ude00"
    assert tokenizer.encode(text) == tokenizer._ids(text).tolist()
    assert len(tokenizer.encode(text)) == tokenizer.count(text) == tokenizer.count("\ufffd\ufffd")
