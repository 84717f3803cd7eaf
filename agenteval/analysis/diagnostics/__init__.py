"""Why cases fail and whether a result is noise: flaky cases across runs, a failure taxonomy, trajectory alignment."""
