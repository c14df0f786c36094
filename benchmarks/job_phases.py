"""Where the job's wall time goes, stage by stage: each process's CPU seconds in each Beam stage.

    python benchmarks/job_phases.py --input ../shared/data/corpus/docs.parquet --output /tmp/phases \
        --direct_running_mode=multi_processing --direct_num_workers=2 [any other job option]

Runs the job's launcher in this process (``pipelines.rechunk.main``) with Beam's
``FnApiRunner._execute_bundle`` wrapped: around each stage it reads the CPU seconds (user + system)
of this process and of each of its descendants (the ``multi_processing`` workers) from Linux's
/proc (``benchmarks/measure_job.process_tree``). It prints the stages that took more than 0.1 s
(wall time, CPU seconds per process, the stage's transforms), the launcher's CPU outside the
stages, and the *critical path*: the launcher's CPU outside stages plus, for each stage, the CPU of
its busiest process. The stages run one after another, so on an idle machine the wall time
cannot be much less than the critical path; on a shared machine the CPU figures still hold where
the wall times do not. ``--progress-seconds 0`` is added unless given.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure_job import process_tree


def _stage_label(name: str) -> str:
    """A short list of the user-level transforms a fused stage holds."""
    parts = name.replace("(", "").replace(")", "").split("+")
    labels = []
    for part in parts:
        part = part.removeprefix("ref_AppliedPTransform_").split("/")[0]
        label = part.split("-ParDo")[0].rsplit("_", 1)[0].replace("-", " ")
        # A transform nested in one already listed ("Read documents Read Parquet ...") is not
        # listed again: the list stays short enough to show every top-level transform.
        if (
            label
            and not label.startswith("ref_PCollection")
            and not any(label == known or label.startswith(known + " ") for known in labels)
        ):
            labels.append(label)
    return ", ".join(labels)[:160]


def main(argv: list[str] | None = None) -> dict:
    """Run the job with ``argv`` (job options); print the per-stage table; return the figures."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a.startswith(("--progress-seconds", "--progress_seconds")) for a in argv):
        argv += ["--progress-seconds", "0"]
    started, cpu_started = time.monotonic(), time.process_time()
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    import pipelines.rechunk as rechunk

    me = os.getpid()
    stages: list[tuple[str, float, dict[int, float]]] = []
    original = fn_runner.FnApiRunner._execute_bundle

    def cpu_by_process() -> dict[int, float]:
        return {pid: seconds for pid, (_, seconds) in process_tree(me).items()}

    def execute_bundle(self, runner_context, bundle_context_manager, bundle_input):
        before, wall = cpu_by_process(), time.monotonic()
        try:
            return original(self, runner_context, bundle_context_manager, bundle_input)
        finally:
            after = cpu_by_process()
            used = {pid: after[pid] - before.get(pid, 0.0) for pid in after}
            stages.append((bundle_context_manager.stage.name, time.monotonic() - wall, used))

    fn_runner.FnApiRunner._execute_bundle = execute_bundle
    try:
        status = rechunk.main(argv)
    finally:
        fn_runner.FnApiRunner._execute_bundle = original
    wall = time.monotonic() - started
    launcher = time.process_time() - cpu_started
    outside = launcher - sum(used.get(me, 0.0) for _, _, used in stages)
    critical = outside + sum(max(used.values(), default=0.0) for _, _, used in stages)
    print(f"exit {status}; wall {wall:.1f} s; launcher CPU {launcher:.1f} s, of which outside stages {outside:.1f} s")
    print("| stage wall s | CPU s: launcher, then other processes (>= 0.05 s) | transforms |")
    print("|---:|---|---|")
    for name, seconds, used in stages:
        if seconds > 0.1:
            others = sorted((c for pid, c in used.items() if pid != me and c >= 0.05), reverse=True)
            cells = ", ".join(f"{c:.1f}" for c in [used.get(me, 0.0), *others])
            print(f"| {seconds:.1f} | {cells} | {_stage_label(name)} |")
    print(f"critical path (launcher outside stages + each stage's busiest process): {critical:.1f} s CPU")
    return {
        "exit": status,
        "wall": wall,
        "launcher": launcher,
        "outside": outside,
        "critical": critical,
        "stages": [_stage_label(name) for name, _, _ in stages],
    }


if __name__ == "__main__":
    sys.exit(main()["exit"])
