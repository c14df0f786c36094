"""Placeholder: DoclingChunker is being written."""
from transforms.chunkers.base import Chunker


class DoclingChunker(Chunker):
    accepted_content_formats = frozenset({"docling"})
    content_format = "text"

    def __init__(self, *, chunker="hybrid", max_tokens=8192, merge_peers=True, contextualize=True, tokenizer=None):
        self.chunker = chunker; self.max_tokens = max_tokens; self.merge_peers = merge_peers
        self.contextualize = contextualize; self.tokenizer = tokenizer

    def to_dict(self):
        return {"chunker": self.chunker, "max_tokens": self.max_tokens, "merge_peers": self.merge_peers, "contextualize": self.contextualize}

    def split(self, document):
        raise NotImplementedError
