"""``python -m agenteval``: the same as the ``agenteval`` command."""

from agenteval.cli import main

raise SystemExit(main())
