"""Thread and process safety of launches and of the compile cache, and edge launches."""
import functools
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import triton
import triton.language as tl

from conftest import run_in_threads


@triton.jit
def checked_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "x must not be negative")
    tl.store(out_ptr + offs, x * 2)


def test_assert_failures_are_per_launch_across_threads():
    """Two Python threads launch at the same time; only the one with bad data sees a
    failure, every time, and its message names its own program."""
    bad = torch.ones(8 * 64)
    bad[5 * 64 + 3] = -1.0
    good = torch.ones(8 * 64)
    checked_kernel[(8,)](good, torch.empty_like(good), BLOCK=64, debug=True)  # compile once
    rounds = 200
    seen = {"bad": [], "good": []}

    def run(name, x):
        out = torch.empty_like(x)
        for _ in range(rounds):
            try:
                checked_kernel[(8,)](x, out, BLOCK=64, debug=True)
                seen[name].append(None)
            except RuntimeError as e:
                seen[name].append(str(e))

    run_in_threads(lambda: run("bad", bad), lambda: run("good", good))
    assert seen["good"] == [None] * rounds
    assert len(seen["bad"]) == rounds
    assert all(m is not None and "block: [5, 0, 0]" in m and "x must not be negative" in m for m in seen["bad"])


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_launches_from_many_threads_are_correct():
    n = 100_003
    # Compiled first with the launches' own options: six first calls at once would parse
    # the kernel in six threads, which CPython 3.11's ast.parse does not always survive
    # (see the thread-count test below; seen here once too, 2026-12-02).
    add_kernel[(1,)](torch.zeros(4), torch.zeros(4), torch.zeros(4), 4, BLOCK=1024, num_threads=2)
    failures = []

    def run(seed):
        g = torch.Generator().manual_seed(seed)
        x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
        for _ in range(30):
            out = torch.empty(n)
            add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_threads=2)
            if not torch.equal(out, x + y):
                failures.append(seed)

    run_in_threads(*(functools.partial(run, s) for s in range(6)))
    assert failures == []


@triton.jit
def occupancy_kernel(running_ptr, peak_ptr, TARGET: tl.constexpr, POLLS: tl.constexpr):
    # Each program counts itself in, then watches how many programs of this launch run at
    # once until it has seen TARGET of them (or POLLS polls went by, when only fewer can run),
    # and counts itself out; the launch's peak goes to peak_ptr.
    now = tl.atomic_add(running_ptr, 1) + 1
    peak = now
    i = 0
    while (i < POLLS) & (peak < TARGET):
        now = tl.atomic_add(running_ptr, 0)
        peak = tl.maximum(peak, now)
        i += 1
    tl.atomic_add(running_ptr, -1)
    tl.atomic_max(peak_ptr, peak)


def test_thread_count_is_respected_from_several_python_threads():
    """Three Python threads launch at once, each asking for 2 threads: every launch has 2
    of its programs running at the same time at some point, and never more."""
    # Compiled first, with the launches' own constexprs and options (this test is about
    # launches): three first calls at once would parse the kernel in three threads, which
    # CPython 3.11's ast.parse does not always survive ("SystemError: AST constructor
    # recursion depth mismatch": its AST constructor's depth bookkeeping, see CPython
    # gh-106905; seen once in this test, in Triton's JITFunction.parse).
    occupancy_kernel[(2,)](torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32), TARGET=2,
                           POLLS=200_000_000, num_threads=2)
    peaks = []

    def run():
        for _ in range(3):
            running = torch.zeros(1, dtype=torch.int32)
            peak = torch.zeros(1, dtype=torch.int32)
            occupancy_kernel[(4,)](running, peak, TARGET=2, POLLS=200_000_000, num_threads=2)
            assert running.item() == 0
            peaks.append(peak.item())

    run_in_threads(run, run, run)
    assert peaks == [2] * 9, peaks


@triton.jit
def wait_kernel(flag_ptr, out_ptr, LIMIT: tl.constexpr):
    # Spins until another launch sets the flag (or gives up after LIMIT polls).
    seen = tl.atomic_add(flag_ptr, 0)
    i = 0
    while (seen == 0) & (i < LIMIT):
        seen = tl.atomic_add(flag_ptr, 0)
        i += 1
    tl.store(out_ptr, seen)


@triton.jit
def set_kernel(flag_ptr):
    tl.atomic_xchg(flag_ptr, 1)


def test_a_running_kernel_releases_the_gil():
    """A kernel that waits for another launch: if the launcher held the GIL, the second
    launch (from this thread) could not start and the first would give up (out == 0)."""
    flag = torch.zeros(1, dtype=torch.int32)
    out = torch.zeros(1, dtype=torch.int32)
    set_kernel[(1,)](torch.zeros(1, dtype=torch.int32))
    waiter = threading.Thread(target=lambda: wait_kernel[(1,)](flag, out, LIMIT=2_000_000_000))
    waiter.start()
    set_kernel[(1,)](flag)
    waiter.join()
    assert out.item() == 1


_COMPILER_CHILD = textwrap.dedent(r"""
    import sys, torch, triton, triton.language as tl

    @triton.jit
    def scaled_add(x_ptr, y_ptr, out_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * K + tl.load(y_ptr + offs, mask=m), mask=m)

    worker = int(sys.argv[1])
    x, y = torch.randn(5000), torch.randn(5000)
    for k in [1, 2, 3, 4, 10 + worker]:  # shared by all workers, then one of its own
        out = torch.empty(5000)
        scaled_add[(5,)](x, y, out, 5000, K=k, BLOCK=1024)
        # fp64 reference: x * k + y may be one fma (enable_fp_fusion) or two roundings.
        assert torch.allclose(out.double(), x.double() * k + y.double(), rtol=1e-6, atol=1e-5), (worker, k)
    print("ok", worker)
""")


def test_processes_compiling_into_one_cache(tmp_path):
    """Four processes compile the same kernels (and one each of their own) into one empty
    TRITON_CACHE_DIR at the same time, twice: the second round reads what the first
    wrote. No process sees a half-written entry."""
    script = tmp_path / "child.py"
    script.write_text(_COMPILER_CHILD)
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    for _ in range(2):
        procs = [subprocess.Popen([sys.executable, str(script), str(w)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for w in range(4)]
        results = [p.communicate(timeout=600) + (p.returncode,) for p in procs]
        for w, (out, err, rc) in enumerate(results):
            assert rc == 0 and f"ok {w}" in out, err[-2000:]


# -- edge launches ------------------------------------------------------------------------


@triton.jit
def last_program_kernel(out_ptr):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    last = (x == tl.num_programs(0) - 1) & (y == tl.num_programs(1) - 1) & (z == tl.num_programs(2) - 1)
    if last:
        tl.store(out_ptr + 0, x)
        tl.store(out_ptr + 1, y)
        tl.store(out_ptr + 2, z)
    tl.atomic_add(out_ptr + 3, 1)


@pytest.mark.parametrize("grid", [(0,), (3, 0, 2), (1, 65535, 1), (1, 1, 65535), (7, 300, 31)])
def test_grid_shapes(grid):
    out = torch.zeros(4, dtype=torch.int64)
    last_program_kernel[grid](out)
    full = tuple(grid) + (1,) * (3 - len(grid))
    total = full[0] * full[1] * full[2]
    expected = [d - 1 for d in full] + [total] if total else [0, 0, 0, 0]
    assert out.tolist() == expected


@triton.jit
def last_x_kernel(out_ptr):
    pid = tl.program_id(0)
    if pid == tl.num_programs(0) - 1:
        tl.store(out_ptr, pid)


def test_largest_grid_on_axis_x():
    out = torch.zeros(1, dtype=torch.int32)
    last_x_kernel[(2**31 - 1,)](out)
    assert out.item() == 2**31 - 2


@triton.jit
def big_block_kernel(x_ptr, out_ptr, sums_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.cumsum(x, 0)  # a large materialized tensor (scratch arena)
    tl.store(out_ptr + offs, y)
    tl.store(sums_ptr, tl.sum(x * 2.0, axis=0))


@pytest.mark.parametrize("on_small_stack_thread", [False, True])
def test_block_of_2_17_elements(on_small_stack_thread):
    n = 2**17
    x = torch.randint(-100, 100, (n,)).float()
    out, sums = torch.empty(n), torch.empty(1)

    def run():
        big_block_kernel[(1,)](x, out, sums, BLOCK=n, num_threads=1)

    if on_small_stack_thread:
        # The launch runs inline on this 256 KiB stack: materialized tensors beyond
        # the per-kernel stack budget must come from the heap arena.
        old = threading.stack_size(256 * 1024)
        try:
            t = threading.Thread(target=run)
            t.start()
            t.join()
        finally:
            threading.stack_size(old)
    else:
        run()
    assert torch.equal(out, torch.cumsum(x, 0))  # integers: exact in any order
    assert sums.item() == (x * 2).sum().item()


@triton.jit
def uneven_kernel(work_ptr, count_ptr, out_ptr):
    """Program p runs work[p] steps of a recurrence LLVM cannot fold, counts itself and
    stores the recurrence's value."""
    pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    state = pid.to(tl.int64)
    for _ in range(tl.load(work_ptr + pid)):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
    tl.atomic_add(count_ptr + pid, 1)
    tl.store(out_ptr + pid, state)


def _uneven_reference(work):
    state = torch.arange(len(work), dtype=torch.int64)
    for step in range(int(work.max())):
        live = work > step
        state = torch.where(live, (state * 1103515245 + 12345) & 0x7FFFFFFF, state)
    return state


@pytest.mark.parametrize("stealing", ["1", "0"])
@pytest.mark.parametrize("threads", [2, 3, 17])
@pytest.mark.parametrize("grid", [(2,), (5, 3), (1000,), (4099, 2)])
def test_uneven_programs_each_run_once(grid, threads, stealing, monkeypatch):
    """The first quarter of the programs is 300 times as costly as the rest: the thread
    whose share they are finishes last, and the others take its remaining programs (work
    stealing, launcher.c), or, with TRITON_CPU_WORK_STEALING=0, wait for it. Either way every
    program runs exactly once, whatever the thread count (17: more shares than the
    launcher keeps on its stack)."""
    monkeypatch.setenv("TRITON_CPU_WORK_STEALING", stealing)
    total = grid[0] * (grid[1] if len(grid) > 1 else 1)
    work = torch.where(torch.arange(total) < max(1, total // 4), 3000, 10).to(torch.int32)
    counts = torch.zeros(total, dtype=torch.int32)
    out = torch.zeros(total, dtype=torch.int64)
    uneven_kernel[grid](work, counts, out, num_threads=threads)
    assert torch.equal(counts, torch.ones(total, dtype=torch.int32))
    assert torch.equal(out, _uneven_reference(work))
