"""Fixtures for bootccm's end-to-end tests: each drives the real binary
(BOOTCCM, default build/bootccm) against the fakes of the API server and the
metadata services, the way an installer or operator runs it. The fixtures and
helpers live in tests/common/harness.py, shared with tests/integration/."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "common"))

from harness import *  # noqa: E402,F401,F403
