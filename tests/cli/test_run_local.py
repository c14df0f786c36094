"""run_local.sh's fresh output folder: removed before a run, unless a run is writing there."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _fresh_output(folder: Path) -> subprocess.CompletedProcess:
    """Run run_local.sh's ``fresh_output`` on ``folder`` (the function alone, as the script defines it)."""
    script = (REPO / "run_local.sh").read_text(encoding="utf-8")
    function = re.search(r"^fresh_output\(\) \{\n.*?^\}\n", script, flags=re.MULTILINE | re.DOTALL)
    assert function, "run_local.sh defines fresh_output"
    venv = Path(sys.executable).parent.parent  # the interpreter running the tests, as the script's .venv
    program = f"set -euo pipefail\nvenv={venv}\n{function.group(0)}fresh_output {folder}\necho removed\n"
    return subprocess.run(["bash", "-c", program], cwd=REPO, capture_output=True, text=True, timeout=60)


def _lock(folder: Path, pid: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "_rechunk.lock"
    path.write_text(json.dumps({"run_id": "r", "host": socket.gethostname(), "pid": pid, "started": "t"}))
    return path


def test_an_output_a_run_is_writing_in_is_kept_and_the_script_stops(tmp_path):
    out = tmp_path / "output" / "raw"
    _lock(out / "parse", os.getpid())  # a live process: this one
    done = _fresh_output(out)
    assert done.returncode == 2
    assert "a run is writing in" in done.stderr and "removed" not in done.stdout
    assert (out / "parse" / "_rechunk.lock").exists()


def test_an_output_whose_run_has_ended_is_removed(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    out = tmp_path / "output" / "sample"
    _lock(out, int(ended.stdout))
    (out / "chunks").mkdir()
    done = _fresh_output(out)
    assert done.returncode == 0, done.stderr
    assert not out.exists()


def test_a_missing_output_is_fine(tmp_path):
    done = _fresh_output(tmp_path / "none")
    assert done.returncode == 0 and done.stdout.strip() == "removed", done.stderr
