"""Write ``questions.csv`` from the hand-written questions below, with exact character ranges.

Each question names its corpus (a file name in ``corpora/``) and one or more excerpts copied
verbatim from it. This script finds each excerpt in the corpus (it must occur exactly once), writes
``start_index``/``end_index`` as code-point offsets with ``corpus[start:end] == content``, and
fails on an excerpt that is missing or ambiguous. The CSV layout is Chroma's chunking evaluation
(columns ``question``, ``references`` as a JSON list of ``{content, start_index, end_index}``,
``corpus_id``). Run it after editing the list: ``python benchmarks/retrieval_data/build_questions.py``.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

QUESTIONS: list[tuple[str, str, list[str]]] = [
    # --- postgresql-mvcc-caveats.md (PostgreSQL 15 docs, 13.6 Caveats)
    (
        "postgresql-mvcc-caveats.md",
        "Which PostgreSQL DDL commands are not MVCC-safe?",
        [
            'Some DDL commands, currently only [`TRUNCATE`](sql-truncate.html "TRUNCATE") and the table-rewriting forms of [`ALTER TABLE`](sql-altertable.html "ALTER TABLE"), are not MVCC-safe.'
        ],
    ),
    (
        "postgresql-mvcc-caveats.md",
        "What do concurrent transactions see after a TRUNCATE commits if their snapshot was taken before it?",
        [
            "This means that after the truncation or rewrite commits, the table will appear empty to concurrent transactions, if they are using a snapshot taken before the DDL command committed."
        ],
    ),
    (
        "postgresql-mvcc-caveats.md",
        "What is the strictest isolation level supported in hot standby mode?",
        ["The strictest isolation level currently supported in hot standby mode is Repeatable Read."],
    ),
    (
        "postgresql-mvcc-caveats.md",
        "Does internal access to the system catalogs use the current transaction's isolation level?",
        [
            "Internal access to the system catalogs is not done using the isolation level of the current transaction. This means that newly created database objects such as tables are visible to concurrent Repeatable Read and Serializable transactions, even though the rows they contain are not."
        ],
    ),
    # --- postgresql-sql-declare.md (PostgreSQL 15 docs, DECLARE)
    (
        "postgresql-sql-declare.md",
        "Are PostgreSQL cursors sensitive or insensitive to changes made in the same transaction?",
        [
            "In PostgreSQL, all cursors are insensitive; so these key words have no effect and are only accepted for compatibility with the SQL standard."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "What does the BINARY option of DECLARE do?",
        ["Causes the cursor to return data in binary rather than in text format."],
    ),
    (
        "postgresql-sql-declare.md",
        "Can a cursor declared WITH HOLD be used after its transaction commits?",
        [
            "`WITH HOLD` specifies that the cursor can continue to be used after the transaction that created it successfully commits."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Which is the default, WITH HOLD or WITHOUT HOLD?",
        ["If neither `WITHOUT HOLD` nor `WITH HOLD` is specified, `WITHOUT HOLD` is the default."],
    ),
    (
        "postgresql-sql-declare.md",
        "What would a binary cursor return for the integer value one?",
        [
            "As an example, if a query returns a value of one from an integer column, you would get a string of `1` with a default cursor, whereas with a binary cursor you would get a 4-byte field containing the internal representation of the value (in big-endian byte order)."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Why does PostgreSQL report an error for DECLARE without WITH HOLD outside a transaction block?",
        [
            "Thus, `DECLARE` without `WITH HOLD` is useless outside a transaction block: the cursor would survive only to the completion of the statement. Therefore PostgreSQL reports an error if such a command is used outside a transaction block."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "How are the rows of a held cursor kept available for later transactions?",
        [
            "In the current implementation, the rows represented by a held cursor are copied into a temporary file or memory area so that they remain available for subsequent transactions."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Can a cursor be fetched backwards without SCROLL?",
        [
            "However, for compatibility with earlier versions, PostgreSQL will allow backward fetches without `SCROLL`, if the cursor's query plan is simple enough that no extra overhead is needed to support it."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "How can volatile functions in a scrollable cursor be made to run exactly once per row?",
        [
            "If that is not practical, one workaround is to declare the cursor `SCROLL WITH HOLD` and commit the transaction before reading any rows from it. This will force the entire output of the cursor to be materialized in temporary storage, so that volatile functions are executed exactly once for each row."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Why use FOR UPDATE with a cursor meant for WHERE CURRENT OF?",
        [
            "Using `FOR UPDATE` prevents other sessions from changing the rows between the time they are fetched and the time they are updated."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Does PostgreSQL have an OPEN statement for cursors?",
        [
            "The PostgreSQL server does not implement an `OPEN` statement for cursors; a cursor is considered to be open when it is declared."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Which system view lists all available cursors?",
        [
            'You can see all available cursors by querying the [`pg_cursors`](view-pg-cursors.html "54.6.\u00a0pg_cursors") system view.'
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Where does the SQL standard allow cursors, and how does PostgreSQL differ?",
        [
            "The SQL standard allows cursors only in embedded SQL and in modules. PostgreSQL permits cursors to be used interactively."
        ],
    ),
    (
        "postgresql-sql-declare.md",
        "Which DECLARE options cannot be combined with a query using FOR UPDATE or FOR SHARE?",
        [
            "Specifying `INSENSITIVE` together with `FOR UPDATE` or `FOR SHARE` is an error.",
            "`WITH HOLD` may not be specified when the query includes `FOR UPDATE` or `FOR SHARE`.",
            "therefore `SCROLL` may not be specified in this case.",
        ],
    ),
    # --- python-textwrap.md (Python 3.11 docs, textwrap)
    (
        "python-textwrap.md",
        "What is the default width used by textwrap?",
        ["(default: `70`) The maximum length of wrapped lines."],
    ),
    (
        "python-textwrap.md",
        "What does textwrap.shorten do with whitespace before truncating?",
        [
            "First the whitespace in _text_ is collapsed (all whitespace is replaced by single spaces). If the result fits in the _width_ , it is returned. Otherwise, enough words are dropped from the end so that the remaining words plus the `placeholder` fit within `width`:"
        ],
    ),
    (
        "python-textwrap.md",
        "Are tabs and spaces treated as equal by dedent?",
        [
            'Note that tabs and spaces are both treated as whitespace, but they are not equal: the lines `" hello"` and `"\\thello"` are considered to have no common leading whitespace.'
        ],
    ),
    (
        "python-textwrap.md",
        "Which lines does textwrap.indent add the prefix to by default?",
        [
            "By default, _prefix_ is added to all lines that do not consist solely of whitespace (including any line endings)."
        ],
    ),
    (
        "python-textwrap.md",
        "When is it more efficient to create your own TextWrapper object?",
        [
            "That instance is not reused, so for applications that process many text strings using `wrap()` and/or `fill()`, it may be more efficient to create your own `TextWrapper` object."
        ],
    ),
    (
        "python-textwrap.md",
        "Which whitespace characters does replace_whitespace replace?",
        [
            "The whitespace characters replaced are as follows: tab, newline, vertical tab, formfeed, and carriage return (`'\\t\\n\\v\\f\\r'`)."
        ],
    ),
    (
        "python-textwrap.md",
        "Why is fix_sentence_endings specific to English text?",
        [
            "Since the sentence detection algorithm relies on `string.lowercase` for the definition of “lowercase letter”, and a convention of using two spaces after a period to separate sentences on the same line, it is specific to English-language texts."
        ],
    ),
    (
        "python-textwrap.md",
        "What happens to words longer than the width when break_long_words is false?",
        [
            "If it is false, long words will not be broken, and some lines may be longer than `width`. (Long words will be put on a line by themselves, in order to minimize the amount by which `width` is exceeded.)"
        ],
    ),
    (
        "python-textwrap.md",
        "What placeholder does textwrap append to truncated output by default?",
        ["(default: `' [...]'`) String that will appear at the end of the output text if it has been truncated."],
    ),
    ("python-textwrap.md", "What is fill() shorthand for?", ["`fill()` is shorthand for"]),
    # --- python-linecache.rst (Python 3.11 docs, linecache)
    (
        "python-linecache.rst",
        "Which Python module uses linecache to show source lines in tracebacks?",
        [
            "This is used by the :mod:`traceback` module\nto retrieve source lines for inclusion in  the formatted traceback."
        ],
    ),
    (
        "python-linecache.rst",
        "What does linecache.getline return on errors?",
        ["This function will never raise an\n   exception --- it will return ``''`` on errors"],
    ),
    (
        "python-linecache.rst",
        "What encoding does linecache assume when a file has no encoding token?",
        ["in the absence of an encoding token, the file encoding defaults to UTF-8."],
    ),
    (
        "python-linecache.rst",
        "What is linecache.lazycache for, and when was it added?",
        [
            "Capture enough detail about a non-file-based module to permit getting its\n   lines later via :func:`getline` even if *module_globals* is ``None`` in the later\n   call.",
            ".. versionadded:: 3.5",
        ],
    ),
    # --- python-poplib.rst (Python 3.11 docs, poplib)
    (
        "python-poplib.rst",
        "Why does the poplib documentation recommend IMAP over POP3?",
        [
            "Note that POP3, though widely supported, is obsolescent.  The implementation\nquality of POP3 servers varies widely, and too many are quite poor."
        ],
    ),
    (
        "python-poplib.rst",
        "What port does POP3_SSL use by default?",
        ["If *port* is not specified, 995, the standard POP3-over-SSL\n   port is used."],
    ),
    (
        "python-poplib.rst",
        "What happens if the POP3 timeout is set to zero?",
        [
            "If the *timeout* parameter is set to be zero, it will raise a\n      :class:`ValueError` to prevent the creation of a non-blocking socket.\n\n.. class:: POP3_SSL"
        ],
    ),
    (
        "python-poplib.rst",
        "What does POP3.stat return?",
        ["Get mailbox status.  The result is a tuple of 2 integers: ``(message count,\n   mailbox size)``."],
    ),
    (
        "python-poplib.rst",
        "When are messages flagged with dele actually deleted on most POP3 servers?",
        ["On most servers deletions are not\n   actually performed until QUIT"],
    ),
    (
        "python-poplib.rst",
        "Does the TOP command set the message's seen flag?",
        ["The POP3 TOP command this method uses, unlike the RETR command, doesn't set the\n   message's seen flag"],
    ),
    (
        "python-poplib.rst",
        "When is the POP3 STLS command allowed?",
        [
            "Start a TLS session on the active connection as specified in :rfc:`2595`.\n   This is only allowed before user authentication"
        ],
    ),
    (
        "python-poplib.rst",
        "What is locked after sending the POP3 password, and until when?",
        ["Note: the\n   mailbox on the server is locked until :meth:`~poplib.quit` is called."],
    ),
    (
        "python-poplib.rst",
        "Which poplib method can be used as a keep-alive?",
        ["Do nothing.  Might be used as a keep-alive."],
    ),
    (
        "python-poplib.rst",
        "Which POP3 methods return a result of the form (response, ['line', ...], octets)?",
        [
            "Retrieve whole message number *which*, and set its seen flag. Result is in form\n   ``(response, ['line', ...], octets)``.",
            "Retrieves the message header plus *howmuch* lines of the message after the\n   header of message number *which*. Result is in form ``(response, ['line', ...],\n   octets)``.",
        ],
    ),
    # --- nodejs-single-executable-applications.md (Node.js docs)
    (
        "nodejs-single-executable-applications.md",
        "Which tool follows the approach of compiling an application with Node.js into one executable?",
        ["This is the approach followed by [boxednode][]."],
    ),
    (
        "nodejs-single-executable-applications.md",
        "What does the Node.js executable itself provide for bundling into an existing binary?",
        [
            "* Looking for a segment within the executable that holds bundled code.\n* Running the bundled code when such a segment is found."
        ],
    ),
    (
        "nodejs-single-executable-applications.md",
        "What tool does the Node.js project maintain for injecting resources into the binary?",
        [
            "However, the project also maintains a separate tool, [postject][], for injecting\narbitrary read-only resources into the binary such as those needed for bundling\nthe application into the runtime."
        ],
    ),
    (
        "nodejs-single-executable-applications.md",
        "How do you build Node.js without single executable application support?",
        [
            "To disable single executable application support, build Node.js with the\n`--disable-single-executable-application` configuration option."
        ],
    ),
    (
        "nodejs-single-executable-applications.md",
        "Which binary section does Node.js check for an embedded single executable application?",
        [
            "the Node.js process uses\n[`postject-api.h`][] to check if the `NODE_SEA_BLOB` section exists in the\nbinary."
        ],
    ),
    (
        "nodejs-single-executable-applications.md",
        "Which upcoming single executable features are planned for Node.js?",
        [
            "* Running an embedded ESM file.\n* Running an archive of multiple files.\n* Embedding [Node.js CLI options][] into the binary."
        ],
    ),
    # --- websockets-readme.txt (websockets 17.4 README, BSD licence)
    (
        "websockets-readme.txt",
        "What is the websockets library built on by default?",
        [
            "Built on top of ``asyncio``, Python's standard asynchronous I/O framework, the\ndefault implementation provides an elegant coroutine-based API."
        ],
    ),
    (
        "websockets-readme.txt",
        "What branch coverage does websockets' continuous integration require?",
        ["Continuous integration fails under 100% branch coverage."],
    ),
    (
        "websockets-readme.txt",
        "Should I use websockets if I prefer callbacks?",
        [
            "If you prefer callbacks over coroutines: ``websockets`` was created to\n  provide the best coroutine-based API to manage WebSocket connections in\n  Python. Pick another library for a callback-based API."
        ],
    ),
    (
        "websockets-readme.txt",
        "How should a security vulnerability in websockets be reported?",
        [
            "To report a security vulnerability, please use the `Tidelift security\ncontact`_. Tidelift will coordinate the fix and disclosure."
        ],
    ),
    (
        "websockets-readme.txt",
        "Which port does the websockets echo server example listen on?",
        ['server = await serve(echo, "localhost", 8765)'],
    ),
    (
        "websockets-readme.txt",
        "How does websockets handle expensive operations for performance?",
        ["A C extension\n   accelerates expensive operations."],
    ),
    # --- python-tutorial-errors.md (Python 3.11 tutorial, Errors and Exceptions)
    (
        "python-tutorial-errors.md",
        "What are the two kinds of errors in Python?",
        ["There are (at least) two distinguishable kinds of errors: _syntax errors_ and _exceptions_."],
    ),
    (
        "python-tutorial-errors.md",
        "Where does the parser's arrow point in a syntax error message?",
        [
            "The parser repeats the offending line and displays a little ‘arrow’ pointing at the earliest point in the line where the error was detected."
        ],
    ),
    (
        "python-tutorial-errors.md",
        "What happens when an exception occurs that matches no except clause and no handler is found?",
        ["if no handler is found, it is an _unhandled exception_ and execution stops with a message as shown above."],
    ),
    (
        "python-tutorial-errors.md",
        "How can one except clause handle several exception types?",
        ["An _except clause_ may name multiple exceptions as a parenthesized tuple, for example:"],
    ),
    (
        "python-tutorial-errors.md",
        "What is printed if the except clauses for B, C, D are reversed so except B comes first?",
        [
            "Note that if the _except clauses_ were reversed (with `except B` first), it would have printed B, B, B — the first matching _except clause_ is triggered."
        ],
    ),
    (
        "python-tutorial-errors.md",
        "Which exceptions are not subclasses of Exception and why are they not usually handled?",
        [
            'Exceptions which are not subclasses of [`Exception`](../library/exceptions.html#Exception "Exception") are not typically handled, because they are used to indicate that the program should terminate. They include [`SystemExit`](../library/exceptions.html#SystemExit "SystemExit") which is raised by [`sys.exit()`](../library/sys.html#sys.exit "sys.exit") and [`KeyboardInterrupt`](../library/exceptions.html#KeyboardInterrupt "KeyboardInterrupt") which is raised when a user wishes to interrupt the program.'
        ],
    ),
    (
        "python-tutorial-errors.md",
        "What is the most common pattern for handling Exception?",
        [
            'The most common pattern for handling [`Exception`](../library/exceptions.html#Exception "Exception") is to print or log the exception and then re-raise it (allowing a caller to handle the exception as well):'
        ],
    ),
    (
        "python-tutorial-errors.md",
        "Where are the arguments of an exception instance stored?",
        [
            "The variable is bound to the exception instance which typically has an `args` attribute that stores the arguments."
        ],
    ),
]


def build(corpora_dir: Path, questions: list[tuple[str, str, list[str]]]) -> list[dict[str, str]]:
    """Rows of the CSV; raises ValueError naming the excerpt that is missing or not unique."""
    rows = []
    cache: dict[str, str] = {}
    for corpus_id, question, excerpts in questions:
        if corpus_id not in cache:
            cache[corpus_id] = (corpora_dir / corpus_id).read_text(encoding="utf-8")
        corpus = cache[corpus_id]
        references = []
        for excerpt in excerpts:
            start = corpus.find(excerpt)
            if start < 0:
                raise ValueError(f"{corpus_id}: excerpt not found: {excerpt[:80]!r}")
            if corpus.find(excerpt, start + 1) >= 0:
                raise ValueError(f"{corpus_id}: excerpt occurs more than once: {excerpt[:80]!r}")
            end = start + len(excerpt)
            assert corpus[start:end] == excerpt
            references.append({"content": excerpt, "start_index": start, "end_index": end})
        rows.append(
            {"question": question, "references": json.dumps(references, ensure_ascii=False), "corpus_id": corpus_id}
        )
    return rows


def main() -> int:
    rows = build(HERE / "corpora", QUESTIONS)
    with open(HERE / "questions.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} questions to {HERE / 'questions.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
