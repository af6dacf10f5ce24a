"""Fixtures for bootccm's integration tests: each drives one module (the API
client, reflector, lease, events, node controllers, serving endpoint) through
its driver program (tests/drivers/drv_*.c, from BOOTCCM_DRIVERS, default
build/dev/drivers) against the fake API server. The fixtures and helpers live
in tests/common/harness.py, shared with tests/e2e/ (a test here may also run
the real binary, BOOTCCM)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "common"))

from harness import *  # noqa: E402,F401,F403
