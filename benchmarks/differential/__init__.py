"""Differential checks: a normalizer's windowed or streamed reading against its whole reading."""
