"""Private helpers every layer may use.

The sync-to-async bridge, worker threads, garbage-collection tuning, a hung event loop's watchdog, file reading
and atomic writes, file locks, the reference's JSON conventions, name checks, secret redaction, names for user code
and terminal-safe text. Nothing here imports the rest of agenteval except :mod:`agenteval.errors`.
"""
