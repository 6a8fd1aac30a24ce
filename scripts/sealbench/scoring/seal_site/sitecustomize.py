"""The seal's entry point in a scoring command (docs/sealed-runs.md#the-seal).

The harness puts this folder alone on ``PYTHONPATH`` (with ``PYTHONSAFEPATH=1``) for every
scoring command, so Python's ``site`` imports this file while the interpreter starts: before
``-m pytest`` or the ``pytest`` script runs, before the workspace is on ``sys.path`` (it is not
there at all yet) and so before any code of the workspace or the tests. In the one process that
holds the seal's secret (``SEALBENCH_SEAL``), it hands over to :func:`sealbench.scoring.pytest_seal.boot`;
in any other Python process started with this environment (a test's subprocess) it does nothing.
"""

import os
import sys

if os.environ.get("SEALBENCH_SEAL"):
    _scripts = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    # the seal is the sealbench beside this file (the harness's own, whose judge reads its
    # records), even where the environment has another sealbench installed (a checkout's venv)
    while _scripts in sys.path:
        sys.path.remove(_scripts)
    sys.path.insert(0, _scripts)
    try:
        from sealbench.scoring.pytest_seal import boot
    finally:
        sys.path.remove(_scripts)
        sys.path.append(_scripts)

    boot(os.path.dirname(os.path.abspath(__file__)))
    del boot, _scripts
