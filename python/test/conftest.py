import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

# Keep every test process on few threads: CI has 2 cores and runs pytest-xdist.
os.environ.setdefault("OMP_NUM_THREADS", "2")
# A compile server a test session starts exits a minute after the session's last compile
# (a user's default is 10 minutes: triton_cpu/compile_server.py).
os.environ.setdefault("TRITON_CPU_COMPILE_SERVER_IDLE", "60")


def pytest_addoption(parser):
    parser.addoption("--bounds-check", action="store_true",
                     help="compile every kernel in the bounds-checked mode (TRITON_CPU_BOUNDS_CHECK=1): "
                          "the suite must pass unchanged, i.e. no false report")


def pytest_configure(config):
    if config.getoption("--bounds-check"):
        os.environ["TRITON_CPU_BOUNDS_CHECK"] = "1"


@pytest.fixture(scope="session", autouse=True)
def _settle_vector_math():
    """One small torch.exp, on this thread, before the first test of each process that runs
    tests (not in pytest-xdist's controller, which would import torch for nothing: 2.5 s).
    torch's float and double exp (log and others too) call MKL's vector math (VML); when a
    process's first VML call is split over two threads (10240 elements are) after MKL's BLAS
    has run, one thread sometimes computes its half with MKL's AVX2 "enhanced performance"
    kernel (about 12 correct bits: relative error up to 1.5e-4) instead of the accurate one,
    so a reference computed with torch.exp was wrong in one of two halves. torch 2.13 alone,
    no Triton: `torch.mm` then `x.exp()` on 32 x 320 fp32 was wrong in 4 of 30 fresh
    processes (bitwise equal to mkl_vml_kernel_sExp_L9EPnnn), a double exp in 6 of 30; with
    this call first, the float exp in 0 of 120. It made test_amx.py's exp-chain test fail in
    4 of 52 runs of `pytest -n 2` over test_amx.py, test_dot.py and test_shared_panels.py."""
    import torch
    torch.ones(1).exp()


_FAILING_ALIGNED_ALLOC = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
/* aligned_alloc, failing for sizes of at least TCPU_TEST_FAIL_ALLOC_FROM bytes while that
 * variable is set (in these tests' processes only the runtime's per-thread buffers ask
 * aligned_alloc for that much). */
void *aligned_alloc(size_t alignment, size_t size) {
  static void *(*real)(size_t, size_t);
  if (!real)
    real = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
  const char *from = getenv("TCPU_TEST_FAIL_ALLOC_FROM");
  if (from && size >= strtoull(from, NULL, 10))
    return NULL;
  return real(alignment, size);
}
"""


@pytest.fixture(scope="session")
def failing_aligned_alloc(tmp_path_factory):
    """run(code) -> CompletedProcess: `code` (dedented) run by a Python subprocess in the
    tests' folder whose large aligned_alloc calls fail on demand: an LD_PRELOAD shim (built
    here with the C compiler) refuses sizes of at least $TCPU_TEST_FAIL_ALLOC_FROM bytes
    while the process has that variable set. An address-space limit (RLIMIT_AS) did not make
    them fail reliably: malloc serves a request from a free chunk of its heap when one is
    large enough, which depends on what ran before."""
    d = tmp_path_factory.mktemp("failing_alloc")
    (d / "shim.c").write_text(_FAILING_ALIGNED_ALLOC)
    so = d / "shim.so"
    r = subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-o", str(so), str(d / "shim.c"),
                        "-ldl"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no C compiler to build the aligned_alloc shim: {r.stderr[-300:]}")
    env = dict(os.environ, LD_PRELOAD=str(so), PYTHONPATH=os.pathsep.join(sys.path))

    def run(code):
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                              timeout=300, cwd=os.path.dirname(__file__))
    return run


_BATCH_CHILD = r"""
import importlib.util, os, sys
import torch
cases = torch.load(sys.argv[1], weights_only=False)  # our own temp file
mods = {}
results = []
for path, name, grid, args, kwargs in cases:
    if path not in mods:
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location("m%d" % len(mods), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods[path] = mod
    getattr(mods[path], name)[grid](*args, **kwargs)
    results.append(args)
torch.save(results, sys.argv[1])
"""


def run_in_threads(*targets):
    """Runs each callable on its own thread, all at once, and waits for them; then raises
    the first exception any of them raised (a thread's exception would otherwise only be
    printed, and the test pass)."""
    import threading
    errors = []

    def guarded(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # re-raised below, in the test's thread
                errors.append(e)
        return run

    threads = [threading.Thread(target=guarded(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def source_line(kernel, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, column) in its file of the `nth` occurrence of `needle` inside the @triton.jit
    `kernel`'s source, 1-based."""
    import inspect
    lines, start = inspect.getsourcelines(kernel.fn)
    hits = [(start + i, line.index(needle) + 1) for i, line in enumerate(lines) if needle in line]
    return hits[nth]


def interpret_batch(cases):
    """Runs several (kernel, grid, args, kwargs) under TRITON_INTERPRET=1 in one child
    process and returns each case's arguments afterwards (outputs included)."""
    import torch
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cases.pt")
        torch.save([(k.fn.__code__.co_filename, k.fn.__name__, tuple(g), list(a), kw) for k, g, a, kw in cases],
                   path)
        env = dict(os.environ, TRITON_INTERPRET="1")
        subprocess.run([sys.executable, "-c", _BATCH_CHILD, path], env=env, check=True)
        return torch.load(path, weights_only=False)


def interpreted(kernel, subprocess=False):
    """The same @triton.jit kernel, run by Triton's interpreter (the reference).

    In-process by default; `subprocess=True` for kernels that call Triton's own @jit
    functions (reductions, scans, ...), which need TRITON_INTERPRET=1 at import."""
    if subprocess:
        return _Subprocess(kernel)
    from triton.runtime.interpreter import InterpretedFunction
    return InterpretedFunction(kernel.fn)


class _Subprocess:
    """`kernel[grid](*args)` under the interpreter in a child process (see interpret_batch);
    tensor arguments receive the child's results."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            import torch
            (after,) = interpret_batch([(self.kernel, grid, list(args), kwargs)])
            for mine, theirs in zip(args, after):
                if isinstance(mine, torch.Tensor):
                    mine.copy_(theirs)
        return run


@pytest.fixture
def interp():
    return interpreted
