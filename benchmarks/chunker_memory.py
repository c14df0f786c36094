"""Peak memory of StructureAwareChunker alone on one document, stage by stage (Linux).

    python benchmarks/memory.py --only documents --work /tmp/mem      # builds markdown.parquet, ...
    python benchmarks/chunker_memory.py --input /tmp/mem/markdown.parquet [--repo /tmp/rechunk-main]

The input's first row is loaded as a string, then the kernel's high-water mark of this process is
reset (``/proc/self/clear_refs``) and the document goes through the chunker as the job takes it:
``stream_with_source``, then each chunk through ``transforms.validation.DocumentValidator`` one at
a time (cl100k_base, ``max_tokens`` 512). Printed, as MiB over the loaded document: the peak once
normalized, at the first chunk (packing done), and at the end, and the end's peak per character.
``--repo`` runs another checkout's code (e.g. main, for a before/after in the same session).
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _status(key: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="a Parquet file of documents; its first row is used")
    parser.add_argument("--repo", default=str(REPO), help="the checkout whose code runs (default: this one)")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.repo)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from transforms.chunkers import StructureAwareChunker
    from transforms.documents import Document
    from transforms.tokenizers import load_tokenizer
    from transforms.validation import DocumentValidator

    table = pq.read_table(args.input, columns=["id", "content", "content_format"]).slice(0, 1)
    row = table.to_pylist()[0]
    del table
    document = Document(id=row["id"], content=row["content"], content_format=row["content_format"] or "text")
    del row
    tokenizer = load_tokenizer("tiktoken:cl100k_base")
    tokenizer.count("warm up")
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=512)
    pa.default_memory_pool().release_unused()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    base = _status("VmRSS")
    chars = len(document.content)
    print(f"{args.input}: {chars:,} characters ({document.content_format}), code from {args.repo}")
    chunks, source = chunker.stream_with_source(document, tokenizer_identity=tokenizer.identity)
    print(f"normalized: peak +{_status('VmHWM') - base:.0f} MiB")
    validator = DocumentValidator(
        document,
        tokenizer=tokenizer,
        tokenizer_identity=tokenizer.identity,
        max_tokens=512,
        source=None if source is document.content else source,
        structure_limits={"max_overlap_tokens": 50, "min_preferred_tokens": 100},
    )
    count = 0
    for chunk in chunks:
        validator.check(chunk)
        count += 1
        if count == 1:
            print(f"first chunk (packed): peak +{_status('VmHWM') - base:.0f} MiB")
    validator.finish()
    peak = _status("VmHWM") - base
    print(f"end: {count:,} chunks, peak +{peak:.0f} MiB = {peak * 2**20 / max(chars, 1):.2f} bytes a character")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
