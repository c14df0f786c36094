"""The rechunk Beam jobs and their command line.

- :mod:`pipelines.rechunk`: the chunk job (``rechunk``) and the command-line entry point.
- :mod:`pipelines.parse`: the parse job (``rechunk parse``), raw files into the chunk job's input.
- :mod:`pipelines.check`: ``rechunk check``, a finished run checked against its input.
- :mod:`pipelines.options`: the chunk job's options, their one-line errors and the usage text.
- :mod:`pipelines.preflight`: checks of input, output and previous-run paths, shared by both jobs.
- :mod:`pipelines.runners`: checks of the Beam runner and its options, shared by both jobs.
- :mod:`pipelines.paths`: paths and file patterns as the workers read them.
- :mod:`pipelines.config`: the chunking configuration, checked into a routing spec.
- :mod:`pipelines.report`: ``report.json`` from the run's metrics.
- :mod:`pipelines.report_html`: ``report.html``, the report as a self-contained page.
- :mod:`pipelines.verdict`: the run's exit status (3 over ``--max-dead-letter-fraction``).
- :mod:`pipelines.console`: the jobs' stdout lines and workers' progress log entries.
"""
