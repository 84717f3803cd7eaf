"""Session-wide set-up for every collected test, notebooks included.

Jupyter kernels started by nbval, matplotlib and IPython all write caches and runtime files under
the home directory; point them at a scratch directory before anything starts, so a test run never
touches the real home. Plots use the non-interactive Agg backend.
"""

from __future__ import annotations

import os
import tempfile

_SCRATCH = tempfile.mkdtemp(prefix="agenteval-tests-")
for variable, folder in {
    "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
    "JUPYTER_DATA_DIR": "jupyter-data",
    "JUPYTER_CONFIG_DIR": "jupyter-config",
    "IPYTHONDIR": "ipython",
    "MPLCONFIGDIR": "matplotlib",
}.items():
    os.environ[variable] = os.path.join(_SCRATCH, folder)
os.environ["MPLBACKEND"] = "Agg"
