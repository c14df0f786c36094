"""A structure normalizer module of another checkout, for differential runs against this one.

    module = load_normalizer(CHECKOUT, "rst")    # CHECKOUT/transforms/structure/normalizers/rst.py

The module is loaded under its own name (``rst_reference``), beside this checkout's; what it
imports (``transforms.structure.tree`` ...) comes from this checkout.
"""

from __future__ import annotations

import importlib.util
import os
import sys


def load_normalizer(checkout: str, name: str):
    """``transforms/structure/normalizers/{name}.py`` of ``checkout``, as module ``{name}_reference``."""
    path = os.path.join(checkout, "transforms", "structure", "normalizers", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"{name}_reference", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no normalizer module at {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
