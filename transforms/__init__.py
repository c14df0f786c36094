"""rechunk's Beam-free core (documents, tokenizers, chunkers, validation) and its thin Beam layer (``transforms.beam``)."""

__version__ = "0.3.0"
