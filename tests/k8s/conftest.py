"""tests/k8s/: tests against a real control plane (controlplane.py), run by
make check-k8s once make k8s has built the upstream binaries."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
