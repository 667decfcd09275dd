"""Imported first by a test that needs torch (python3-torch): without it the test prints
kvx-test-skipped, which ctest reports as skipped, and exits 0."""
import sys

try:
    import torch  # noqa: F401
except ImportError:
    print("kvx-test-skipped: python3-torch is not installed")
    sys.exit(0)
