"""Checks of the Beam runner and its options before the pipeline starts, shared by both jobs.

Without ``--runner`` (or with any spelling of the DirectRunner) the jobs run on Beam's
FnApiRunner, the DirectRunner's own engine, so that the DirectRunner's first choice, Prism, never
tries to download its binary. Other runners get their services, binaries and cloud options checked
here, each mistake one :class:`~pipelines.options.OptionError` line instead of a traceback or a
long wait mid-submission.
"""

from __future__ import annotations

import logging
import os

from apache_beam.options.pipeline_options import (
    DirectOptions,
    FlinkRunnerOptions,
    GoogleCloudOptions,
    PipelineOptions,
    PortableOptions,
    PrismRunnerOptions,
    SetupOptions,
    SparkRunnerOptions,
    StandardOptions,
    TestOptions,
    TypeOptions,
)
from apache_beam.options.pipeline_options_validator import PipelineOptionsValidator

from pipelines.options import OptionError, RechunkOptions, one_line
from pipelines.preflight import call_with_deadline

__all__ = ["ENVIRONMENT_TYPES", "UNSUPPORTED_RUNNERS", "check_runner"]

#: --environment_type values of Beam's portable runners (Beam's own lookup is case-sensitive).
ENVIRONMENT_TYPES = ("DOCKER", "PROCESS", "EXTERNAL", "LOOPBACK")
#: Runners Beam knows that the jobs do not run on, and why.
UNSUPPORTED_RUNNERS = {
    # Measured: with --previous a side input of kept ids holds the manifest's rows instead (a
    # crash, or the kept documents' chunks lost with exit 0), and its metrics give the report 0
    # documents read. Beam's own issue on its side inputs: apache/beam#18942 (open).
    "BundleBasedDirectRunner": (
        "its side inputs and metrics differ from the FnApiRunner's (kept chunks and report counts came out wrong)"
    ),
    "InteractiveRunner": "it is for notebooks and fails on this job's graph",
}


def check_runner(options: PipelineOptions, *, tokenizer: str | None = None) -> None:
    """Pick FnApiRunner for the DirectRunner (no Prism download); check the runner and the files it ships.

    ``options`` is changed in place: ``--runner`` becomes ``FnApiRunner`` for the DirectRunner, and
    ``--environment_type`` its upper-case name. ``tokenizer`` (the job's spec, e.g. ``hf:PATH``)
    must be reachable by a cloud runner's workers.

    Raises:
        OptionError: An unsupported or unloadable runner, or an option it needs missing or wrong.
    """
    standard = options.view_as(StandardOptions)
    runner = _create_runner(standard)
    setup = options.view_as(SetupOptions)
    for flag, path in (("--setup_file", setup.setup_file), ("--requirements_file", setup.requirements_file)):
        if path and "://" not in path and not os.path.isfile(path):
            raise OptionError(f"{flag} {path}: no such file")
    workers = options.view_as(DirectOptions).direct_num_workers
    if workers is not None and workers < 0:
        raise OptionError(f"--direct_num_workers must be >= 0 (0: one per core), got {workers}")
    if options.view_as(TypeOptions).runtime_type_check:
        raise OptionError(
            "--runtime_type_check: Beam 2.77's own file sink fails it when the job ends (its "
            "WriteImpl/FinalizeWrite step); use --performance_runtime_type_check"
        )
    _check_cluster_runner(options, runner, tokenizer)
    # Beam's own checks of every option view, which beam.Pipeline() would raise as a traceback.
    errors = PipelineOptionsValidator(options, runner).validate()
    if errors:
        raise OptionError(f"--runner {standard.runner}: {one_line(errors[0])}")


def _create_runner(standard: StandardOptions):
    """The runner ``--runner`` names, FnApiRunner for the DirectRunner (set in ``standard``)."""
    short = (standard.runner or "direct").strip().rsplit(".", 1)[-1].lower().removesuffix("runner")
    if short in ("direct", "switchingdirect"):
        # Beam 2.77's SwitchingDirectRunner (what any other spelling of DirectRunner gives) tries
        # Prism first, downloading its binary from GitHub; FnApiRunner is what it falls back to.
        standard.runner = "FnApiRunner"
    # By name, before Beam imports it (InteractiveRunner's import fails with this pandas).
    for name, why in UNSUPPORTED_RUNNERS.items():
        if short == name.lower().removesuffix("runner"):
            raise OptionError(f"--runner {standard.runner}: not supported, {why}; use DirectRunner (FnApiRunner)")
    try:
        from apache_beam.runners.runner import create_runner

        return create_runner(standard.runner)
    except (ValueError, ImportError) as err:
        raise OptionError(f"--runner {standard.runner}: {one_line(err)}") from None
    except Exception as err:  # a runner module that fails on import with these libraries
        raise OptionError(f"--runner {standard.runner}: Beam cannot load it ({one_line(err)})") from None


def _check_cluster_runner(options: PipelineOptions, runner, tokenizer: str | None) -> None:
    """The options a cluster runner needs, checked before Beam would fail on them mid-submission."""
    from apache_beam.runners.dataflow.dataflow_runner import DataflowRunner
    from apache_beam.runners.portability.portable_runner import PortableRunner

    name = type(runner).__name__
    dry_run = options.view_as(TestOptions).dry_run
    if dry_run not in (False, True, "True", "true"):  # Beam takes any string as true
        raise OptionError(f"--dry_run={dry_run}: give --dry_run=True, or leave the option out")
    if dry_run and type(runner) is not DataflowRunner:
        raise OptionError(f"--dry_run: only DataflowRunner has a dry run; {name} would run the job")
    portable = options.view_as(PortableOptions)
    if isinstance(runner, PortableRunner) and portable.environment_type is not None:
        portable.environment_type = _environment_type(portable.environment_type)
    if type(runner) is PortableRunner:
        _check_job_endpoint(portable.job_endpoint, name)
        if portable.job_endpoint == "embed":
            _check_embedded_environment(portable.environment_type)
    _check_runner_binary(options, runner)
    if isinstance(runner, DataflowRunner):
        _check_dataflow(options, runner, tokenizer)


def _environment_type(given: str) -> str:
    """``--environment_type`` as Beam's portable runners look it up: one of :data:`ENVIRONMENT_TYPES`.

    Beam takes the names in upper case, or the URNs of its registered environments.
    """
    from apache_beam.portability.common_urns import environments

    urns = {getattr(environments, kind).urn: kind for kind in ENVIRONMENT_TYPES if kind != "LOOPBACK"}
    kind = urns.get(given, given)
    if kind not in ENVIRONMENT_TYPES:
        raise OptionError(f"--environment_type {given}: one of {', '.join(ENVIRONMENT_TYPES)} (upper case)")
    return kind


def _check_job_endpoint(endpoint: str | None, runner: str) -> None:
    """A portable runner's job service must be given and answer Beam's job API (``GetJobs``)
    within 5 s: Beam itself would wait 300 s for a silent address, or end in a gRPC traceback at
    another gRPC server."""
    import socket

    if not endpoint:
        raise OptionError(f"--job_endpoint is required with {runner}: HOST:PORT of the job service (or 'embed')")
    if endpoint == "embed":
        return
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise OptionError(f"--job_endpoint {endpoint}: expected HOST:PORT of the job service (or 'embed')")
    # A refused or unresolvable address (or a host name IDNA rejects) fails at once, with its reason.
    err = call_with_deadline(lambda: socket.create_connection((host.strip("[]"), int(port)), timeout=5).close(), 6)
    if err is not None:
        raise OptionError(f"--job_endpoint {endpoint}: no job service answers there ({one_line(err, 120)})")
    _ask_job_service(endpoint)


def _ask_job_service(endpoint: str) -> None:
    """The gRPC server at ``endpoint`` must be a Beam job service: it lists its jobs within 5 s."""
    import grpc
    from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc

    channel = grpc.insecure_channel(endpoint)
    grpc_log = logging.getLogger("grpc._common")  # it logs a traceback for a reply it cannot decode
    level = grpc_log.level
    grpc_log.setLevel(logging.CRITICAL)
    try:
        grpc.channel_ready_future(channel).result(timeout=5)
        # Any gRPC server gets this far (an artifact service, say); a Beam job service lists its jobs.
        beam_job_api_pb2_grpc.JobServiceStub(channel).GetJobs(beam_job_api_pb2.GetJobsRequest(), timeout=5)
    except grpc.FutureTimeoutError:
        raise OptionError(f"--job_endpoint {endpoint}: no job service answers there (no gRPC reply in 5 s)") from None
    except grpc.RpcError as err:
        raise OptionError(
            f"--job_endpoint {endpoint}: no Beam job service answers there "
            f"({err.code().name}: {one_line(err.details() or '', 120)})"
        ) from None
    finally:
        grpc_log.setLevel(level)
        channel.close()


def _check_embedded_environment(environment_type: str | None) -> None:
    """``--job_endpoint embed`` runs the SDK workers on this machine: Beam's default environment
    there is DOCKER (a container of Beam's SDK image, pulled if missing), which fails with a
    traceback where Docker is absent, so the environment must be named."""
    import shutil
    import subprocess

    if environment_type is None:
        raise OptionError(
            "--job_endpoint embed: give --environment_type LOOPBACK (workers in this process), or DOCKER "
            "(Beam's SDK container: needs Docker, and the image or the network to pull it)"
        )
    if environment_type == "DOCKER":
        if shutil.which("docker") is None:
            raise OptionError("--environment_type DOCKER: no docker command on this machine; use LOOPBACK")
        try:
            subprocess.run(["docker", "info"], capture_output=True, timeout=10, check=True)
        except (OSError, subprocess.SubprocessError):
            raise OptionError(
                "--environment_type DOCKER: Docker does not answer here (docker info failed); start it, or use LOOPBACK"
            ) from None


def _check_runner_binary(options: PipelineOptions, runner) -> None:
    """Runners that would download a binary at start (Prism's Go binary from GitHub, Flink's and
    Spark's job-server jars from Maven) must be given a local one, or a running job service: offline
    the download fails after a long wait, with a traceback."""
    from apache_beam.runners.portability.flink_runner import FlinkRunner
    from apache_beam.runners.portability.prism_runner import PrismRunner
    from apache_beam.runners.portability.spark_runner import SparkRunner

    name = type(runner).__name__
    if isinstance(runner, PrismRunner):
        location = options.view_as(PrismRunnerOptions).prism_location
        if not location or not os.path.isfile(location):
            raise OptionError(
                f"--prism_location {location}: {name} downloads its binary from GitHub unless this is a local "
                "file; give the path of a prism binary, or leave --runner out (the DirectRunner runs offline)"
                if location
                else f"--prism_location is required with {name}: the path of a local prism binary (else Beam downloads "
                "it from GitHub); or leave --runner out (the DirectRunner runs offline)"
            )
        return
    for runner_class, options_class, flag in (
        (FlinkRunner, FlinkRunnerOptions, "flink_job_server_jar"),
        (SparkRunner, SparkRunnerOptions, "spark_job_server_jar"),
    ):
        if not isinstance(runner, runner_class):
            continue
        endpoint = options.view_as(PortableOptions).job_endpoint
        if endpoint:
            _check_job_endpoint(endpoint, name)
            return
        jar = getattr(options.view_as(options_class), flag)
        if not jar or not os.path.isfile(jar):
            raise OptionError(
                f"--{flag}{' ' + jar if jar else ''}: {name} downloads its job-server jar from Maven unless "
                f"--{flag} is a local file; give one, or --job_endpoint HOST:PORT of a running job server"
            )


def _check_dataflow(options: PipelineOptions, runner, tokenizer: str | None) -> None:
    """Dataflow needs a project, a region and a gs:// temporary location, and its workers reach
    no local path."""
    name = type(runner).__name__
    cloud = options.view_as(GoogleCloudOptions)
    if not cloud.project:
        raise OptionError(f"--project is required with {name}: the Google Cloud project to run in")
    if not cloud.region and not os.environ.get("CLOUDSDK_COMPUTE_REGION"):
        raise OptionError(f"--region is required with {name}: the Dataflow region, e.g. europe-west1")
    # Beam falls back from one location to the other; with neither valid it would try to create a bucket.
    validator = PipelineOptionsValidator(options, runner)
    errors = {flag: validator.validate_gcs_path(cloud, flag) for flag in ("temp_location", "staging_location")}
    if all(errors.values()):
        if cloud.temp_location is None and cloud.staging_location is None:
            raise OptionError(f"--temp_location is required with {name}: a gs://BUCKET/PATH for temporary files")
        flag = "temp_location" if cloud.temp_location is not None else "staging_location"
        raise OptionError(
            f"--{flag} {getattr(cloud, flag)}: {name} needs a gs://BUCKET/PATH here ({one_line(errors[flag][0], 200)})"
        )
    job_opts = options.view_as(RechunkOptions)
    kind, _, spec_path = (tokenizer or "").partition(":")
    hf_path = spec_path if kind in ("hf", "hf-model") and spec_path else None
    for where, path in (
        (f"--input {job_opts.input}", job_opts.input),
        (f"--output {job_opts.output}", job_opts.output),
        (f"--previous {job_opts.previous}", job_opts.previous),
        (f"--tokenizer {tokenizer}", hf_path),
    ):
        if path is not None and ("://" not in path or path.startswith("file://")):
            raise OptionError(f"{where}: {name} workers cannot reach local paths; use gs://")
