"""How much of one document the packer holds at most: the bounds of its memory.

Every module of the packer reads these as ``limits.NAME`` when it runs, so a test may lower one
to exercise a bounded path on a small document. None of them changes a chunk.
"""

#: Texts of up to this many tokens (of the budget tokenizer) keep their token ends as a list
#: (see :class:`~transforms.structure.packing.counting.TokenCounter`); longer ones keep an array.
LIST_TOKENS = 1 << 18
#: Texts longer than this many code points are encoded a part of about this size at a time.
PART_CHARS = 1 << 22
#: Line starts whose stability :class:`~transforms.structure.packing.lines.Lines` remembers at
#: most (then it forgets them all).
STABLE_MEMO = 1 << 16
#: Prefix counts of heading paths, and counts of repeated headers, remembered at most (then all
#: are forgotten): what a document of many sections holds of them.
TITLES_MEMO = 1 << 12
#: Tiles of a section given as a stream packed at a time (each may be a subsection of up to
#: ``tree.HELD_SECTION_NODES`` nodes).
SECTION_BATCH = 8
#: Heading paths whose titles are remembered at most (a path holds its sections, and so their
#: blocks: few are kept).
PATHS_MEMO = 64
#: Tiles of a split block packed at a time: what is held of its children.
TILE_BATCH = 4096
