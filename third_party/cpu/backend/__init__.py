"""The Triton backend plugin (entry point `triton.backends: cpu`).

Triton imports `compiler` and `driver` from here while it discovers backends.

`triton` is imported first so that importing this package before Triton works: Triton's
discovery then loads `compiler` and `driver` completely, instead of finding them half
executed in sys.modules (no concrete backend/driver class yet). When Triton is the
importer it is already in sys.modules and this import is a no-op.
"""
import triton  # noqa: F401
