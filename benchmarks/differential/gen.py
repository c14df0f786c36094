"""Hostile documents for the differential run."""

from __future__ import annotations

import random

LETTERS = "abcdefghijklmnopqrstuvwxyz"
CJK = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 200))
ARABIC = "".join(chr(c) for c in range(0x0627, 0x064A))
HEBREW = "".join(chr(c) for c in range(0x05D0, 0x05EA))
COMBINING = "".join(chr(c) for c in range(0x0300, 0x0330))
EMOJI = "😀😃😄😁🙂🙃😉😊😇🥰😍🤩👍🏽👨‍👩‍👧‍👦🏳️‍🌈"
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
SPACES = " \t\u00a0\u2028\u2029\u3000\u200b\x0b\x0c\x1c\x85"


def run_of(rng: random.Random, n: int) -> str:
    """A run of one pre-token class, or mixed."""
    k = rng.randrange(12)
    if k == 0:
        return "".join(rng.choice(LETTERS) for _ in range(n))
    if k == 1:
        return "".join(rng.choice("0123456789") for _ in range(n))
    if k == 2:
        return "".join(rng.choice(PUNCT) for _ in range(n))
    if k == 3:
        return "".join(rng.choice(EMOJI) for _ in range(n))[:n]
    if k == 4:
        return "".join(rng.choice(CJK) for _ in range(n))
    if k == 5:
        return "".join(rng.choice(LETTERS) + (rng.choice(COMBINING) if rng.random() < 0.5 else "") for _ in range(n))[
            :n
        ]
    if k == 6:
        return "".join(rng.choice(ARABIC + HEBREW) for _ in range(n))
    if k == 7:
        return "a" * n
    if k == 8:
        return "é" * n
    if k == 9:
        # rare safe cuts: long words with a rare single space
        return "".join(rng.choice(LETTERS) if rng.random() > 0.003 else " " for _ in range(n))
    if k == 10:
        return "".join(
            rng.choice(LETTERS + PUNCT + "0123456789" + CJK[:5] + EMOJI[:3] + " " + SPACES) for _ in range(n)
        )
    return "".join(
        rng.choice(
            [
                "word",
                " ",
                "  ",
                "12345",
                "don't",
                "é",
                "😀",
                "--",
                "...",
                "\t",
                "x" * 40,
                " " * 30,
                "\u00a0",
                "\u2028",
                "\ud800",
                "\udc00",
            ]
        )
        for _ in range(max(1, n // 4))
    )


def words(rng: random.Random, n: int) -> str:
    return " ".join("".join(rng.choice(LETTERS) for _ in range(rng.randint(1, 8))) for _ in range(n))


def sentences(rng: random.Random, n: int) -> str:
    return " ".join(
        words(rng, rng.randint(1, 12)).capitalize() + rng.choice([".", "!", "?", "…", "。"]) for _ in range(n)
    )


def nl(rng: random.Random) -> str:
    return rng.choice(["\n", "\n", "\n", "\r\n", "\r"])


def block(rng: random.Random, fmt: str, size: int) -> str:
    k = rng.randrange(14)
    e = nl(rng)
    if k == 0:
        return run_of(rng, size)
    if k == 1:
        return sentences(rng, max(1, size // 30))
    if k == 2:  # code block with long lines
        fence = rng.choice(["```", "~~~", "````"])
        lang = rng.choice(["", "python", "x" * 50])
        lines = [
            run_of(rng, rng.randint(0, size)) if rng.random() < 0.3 else words(rng, rng.randint(0, 12))
            for _ in range(rng.randint(1, 8))
        ]
        if fmt == "rst":
            return ".. code-block:: python" + e + e + e.join("   " + l for l in lines)
        return fence + lang + e + e.join(lines) + e + fence
    if k == 3:  # table with huge cells
        cols = rng.randint(1, 4)
        head = "| " + " | ".join(words(rng, 2) for _ in range(cols)) + " |"
        sep = "|" + "|".join("---" for _ in range(cols)) + "|"
        rows = [
            "| "
            + " | ".join(
                run_of(rng, rng.randint(0, size // 2)) if rng.random() < 0.3 else words(rng, 3) for _ in range(cols)
            )
            + " |"
            for _ in range(rng.randint(1, 10))
        ]
        return e.join([head, sep, *rows])
    if k == 4:  # nested lists
        out = []
        for _ in range(rng.randint(1, 10)):
            depth = rng.randint(0, 4)
            out.append(
                "  " * depth
                + rng.choice(["- ", "* ", "1. ", "+ "])
                + (words(rng, rng.randint(1, 20)) if rng.random() < 0.8 else run_of(rng, size // 3))
            )
        return e.join(out)
    if k == 5:  # nested quotes
        return e.join(">" * rng.randint(1, 4) + " " + words(rng, rng.randint(0, 15)) for _ in range(rng.randint(1, 6)))
    if k == 6:
        return (
            rng.choice(["#", "##", "###", "######"])
            + " "
            + (words(rng, rng.randint(0, 6)) if rng.random() < 0.8 else run_of(rng, size // 4))
        )
    if k == 7:
        t = words(rng, rng.randint(1, 4))
        return t + e + rng.choice(["=", "-"]) * max(3, len(t))
    if k == 8:  # tiny mergeable paragraphs
        return (e + e).join(words(rng, rng.randint(1, 3)) for _ in range(rng.randint(1, 20)))
    if k == 9:  # whitespace-y
        return rng.choice(SPACES) * rng.randint(1, 20) + words(rng, 3)
    if k == 10 and fmt == "html":
        return (
            "<table>"
            + "".join(
                "<tr>" + "".join(f"<td>{run_of(rng, rng.randint(1, size // 3))}</td>" for _ in range(2)) + "</tr>"
                for _ in range(rng.randint(1, 5))
            )
            + "</table>"
        )
    if k == 11 and fmt == "html":
        return f"<h{rng.randint(1, 6)}>{words(rng, 3)}</h{rng.randint(1, 6)}><p>{sentences(rng, 5)}</p><pre><code>{run_of(rng, size)}</code></pre>"
    if k == 12 and fmt == "rst":
        t = words(rng, 3)
        return t + e + rng.choice("=-~^") * len(t)
    if k == 13 and fmt == "rst":
        return ".. note::" + e + e + "   " + words(rng, 20) + e + e + "   " + run_of(rng, size // 2)
    return words(rng, rng.randint(1, size // 5 + 1))


def document(rng: random.Random, fmt: str, size: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 12)):
        parts.append(block(rng, fmt, size))
        parts.append(rng.choice(["\n\n", "\n", "\r\n\r\n", "\n \n", "\n\u00a0\n", "\n\n\n\n", "\r\r", "\u2028", ""]))
    text = "".join(parts)
    if fmt == "html" and rng.random() < 0.7:
        text = "<html><body>" + text.replace("\n\n", "<p>") + "</body></html>"
    return text


def huge_blocks(rng: random.Random, text: str) -> str:
    """``text`` with a long list (nested items, lazy and blank lines, marker changes) and a long
    table (escaped pipes, ragged rows, rows without pipes) inserted at random block boundaries."""
    e = nl(rng)
    marker = rng.choice(["- ", "* ", "1. ", "2) "])
    items = []
    for _ in range(rng.randint(100, 600)):
        item = marker + words(rng, rng.randint(0, 12))
        if rng.random() < 0.2:
            item += e + rng.choice(["   - ", "    1. ", "lazy ", "   ", "\t- "]) + words(rng, rng.randint(0, 6))
        if rng.random() < 0.05:
            item += e
        items.append(item)
    cols = rng.randint(1, 4)
    rows = [
        "| " + " | ".join(words(rng, 2) for _ in range(cols)) + " |",
        "|" + "|".join("---" for _ in range(cols)) + "|",
    ]
    for _ in range(rng.randint(100, 600)):
        rows.append(
            rng.choice(["| ", "", "  |"])
            + rng.choice([" | ", " \\| ", "|"]).join(words(rng, 2) for _ in range(rng.randint(1, 5)))
        )
    blocks = [e.join(items), e.join(rows)]
    parts = text.split("\n\n")
    for huge in blocks:
        parts.insert(rng.randint(0, len(parts)), huge)
    return "\n\n".join(parts)


FIXED = [
    ("empty", ""),
    ("spaces", "   \n\n \t \n"),
    ("nbsp", "\u00a0\u00a0\n\u00a0"),
    ("lone_cr", "a\rb\r\rc\r# H\rtext\r"),
    ("crlf", "# A\r\n\r\npara one\r\n\r\n## B\r\n\r\n" + "x " * 300 + "\r\n"),
    ("u2028", "line\u2028line\u2028\u2028# not\u2028" + "w " * 200),
    ("surrogates", "# H\n\n" + "\ud800x\udc00 " * 300 + "\n\n" + "\ud83d\ude00" * 200),
    ("surrogate_run", "\ud800" * 3000),
    ("one_letter_run", "a" * 9000),
    ("one_e_run", "é" * 5000),
    ("digits", "1" * 7000),
    ("punct", "-" * 7000 + " x"),
    ("emoji", "😀" * 3000),
    ("zwj", "👨‍👩‍👧‍👦" * 700),
    ("cjk", "".join(chr(0x4E00 + i % 500) for i in range(6000))),
    ("combining", ("e" + "\u0301" * 20) * 300),
    ("rtl", ("שלום" + "\u200f" + "مرحبا") * 600),
    ("tabs", "\t" * 3000 + "x\n" + "\t\ty\n" * 200),
    ("spaces_run", " " * 5000 + "b"),
    ("newlines_run", "x" + "\n" * 5000 + "y"),
    ("space_newline", ("a \n" * 2000)),
    ("rare_cuts", ("z" * 997 + " ") * 10),
    ("headings_everywhere", "".join(f"{'#' * (1 + i % 6)} h{i}\n" for i in range(400))),
    ("tiny_paras", "# T\n\n" + "\n\n".join(f"p{i}" for i in range(600))),
    ("tiny_sections", "".join(f"# S{i}\n\nx{i}\n\n" for i in range(300))),
    ("huge_code", "```\n" + "\n".join(("y" * 3000) if i % 3 == 0 else f"line {i}" for i in range(30)) + "\n```\n"),
    ("huge_table", "| a | b |\n|---|---|\n" + "\n".join(f"| {'c' * (i * 50)} | d{i} |" for i in range(40))),
    ("quote_list", "\n".join("> " * (i % 5 + 1) + "- " * (i % 3) + "item " * (i % 17) for i in range(300))),
    (
        "mixed_long_line",
        "".join(["ab", " ", "12", "...", "é", "😀", "\t", "中"][i % 8] * (i % 13 + 1) for i in range(3000)),
    ),
]
