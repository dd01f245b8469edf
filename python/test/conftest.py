import os

import pytest

# Keep every test process on few threads: CI has 2 cores and runs pytest-xdist.
os.environ.setdefault("OMP_NUM_THREADS", "2")


def interpreted(kernel):
    """The same @triton.jit kernel, run by Triton's interpreter (the reference)."""
    from triton.runtime.interpreter import InterpretedFunction
    return InterpretedFunction(kernel.fn)


@pytest.fixture
def interp():
    return interpreted
