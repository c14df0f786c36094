"""The rechunk Beam job: options, configuration, graph and entry point."""
