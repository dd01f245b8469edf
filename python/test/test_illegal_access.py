"""A kernel that touches unmapped memory raises RuntimeError instead of ending the process.

Out of bounds by far (an index gone wrong, a page table shorter than the sequence it
describes) a load or store faults. On a GPU the launch then reports an illegal memory
access; here the launcher catches the SIGSEGV of a thread running programs, stops the launch
and raises (launcher.c, "Faults inside a kernel"). A fault outside a kernel keeps its default
action. Expected values come from torch or from the inputs.
"""
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl

FAR = 1 << 40  # elements: an address no allocation reaches


@triton.jit
def _copy_with_one_wild_program(x_ptr, y_ptr, wild_pid, offset, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    shift = tl.where(pid == wild_pid, offset, 0)
    tl.store(y_ptr + i, tl.load(x_ptr + i + shift, mask=i < n), mask=i < n)


@triton.jit
def _store_far(y_ptr, offset, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(y_ptr + offset + i, i.to(tl.float32))


@triton.jit
def _matmul_with_one_wild_program(a_ptr, b_ptr, c_ptr, wild_pid, offset, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    r = tl.arange(0, BLOCK)
    shift = tl.where(pid == wild_pid, offset, 0)
    a = tl.load(a_ptr + shift + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + pid * BLOCK * BLOCK + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))


@triton.jit
def _row_cumsums(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0))  # 4 MiB of scratch arena


def _copy(x, y, wild_pid, offset, **options):
    _copy_with_one_wild_program[(16,)](x, y, wild_pid, offset, x.numel(), BLOCK=256, **options)


@pytest.mark.parametrize("threads", [1, 2])
def test_wild_load_raises_and_the_next_launch_works(threads):
    x = torch.randn(4096)
    y = torch.zeros(4096)
    with pytest.raises(RuntimeError, match=r"illegal memory access.*program \(5, 0, 0\).*kernel "
                       r"'_copy_with_one_wild_program'"):
        _copy(x, y, 5, FAR, num_threads=threads)
    y2 = torch.zeros(4096)
    _copy(x, y2, -1, 0, num_threads=threads)
    assert torch.equal(y2, x)


def test_the_launch_stops_at_the_fault():
    """One thread runs programs 0..15 in order: 0-4 copy their block, 5 faults, 6-15 never run."""
    x = torch.randn(4096)
    y = torch.full((4096,), -7.0)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        _copy(x, y, 5, FAR, num_threads=1)
    assert torch.equal(y[:5 * 256], x[:5 * 256])
    assert torch.all(y[6 * 256:] == -7.0)


def test_wild_store_raises():
    y = torch.zeros(64)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        _store_far[(1,)](y, FAR, BLOCK=64)
    _store_far[(1,)](y, 0, BLOCK=64)
    assert torch.equal(y, torch.arange(64, dtype=torch.float32))


def test_every_program_faulting_is_one_error():
    """256 programs on 2 threads, each storing far away: both threads stop, one error."""
    y = torch.zeros(64)
    with pytest.raises(RuntimeError, match="illegal memory access") as info:
        _store_far[(256,)](y, FAR, BLOCK=64, num_threads=2)
    assert str(info.value).count("illegal memory access") == 1
    assert torch.all(y == 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fault_in_a_bf16_dot_kernel(threads):
    """bf16 dots run on AMX tiles where the host has them: the signal frame then carries the
    tile state, which must fit the handler's stack (also on the main thread, threads=1)."""
    a, b = torch.randn(64, 64).bfloat16(), torch.randn(64, 64).bfloat16()
    c = torch.zeros(4 * 64, 64)
    with pytest.raises(RuntimeError, match=r"illegal memory access.*program \(2, 0, 0\)"):
        _matmul_with_one_wild_program[(4,)](a, b, c, 2, FAR, BLOCK=64, num_threads=threads)
    _matmul_with_one_wild_program[(4,)](a, b, c, -1, 0, BLOCK=64, num_threads=threads)
    torch.testing.assert_close(c, (a.float() @ b.float()).repeat(4, 1), rtol=1e-5, atol=1e-4)


def _run(code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=os.path.dirname(__file__))


def test_a_fault_outside_a_kernel_still_ends_the_process():
    """After launches, one of which faulted, a segfault in other native code is not caught."""
    r = _run("""
        import ctypes, torch
        from test_illegal_access import _copy, FAR
        x, y = torch.randn(4096), torch.zeros(4096)
        try:
            _copy(x, y, 3, FAR)
        except RuntimeError:
            print("kernel fault raised", flush=True)
        _copy(x, y, -1, 0)
        ctypes.string_at(0)
        print("not reached", flush=True)
    """)
    assert "kernel fault raised" in r.stdout, r.stderr
    assert "not reached" not in r.stdout
    assert r.returncode == -11, (r.returncode, r.stderr[-2000:])


def test_a_fault_in_a_forked_child():
    """After fork the launcher runs programs on threads it creates per launch (launcher.c):
    their faults raise too, and the child's next launches work."""
    r = _run("""
        import os, torch
        from test_illegal_access import _copy, FAR
        x = torch.randn(4096)
        _copy(x, torch.zeros(4096), -1, 0, num_threads=2)   # the parent's thread pool started
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                _copy(x, torch.zeros(4096), 9, FAR, num_threads=2)
            except RuntimeError as e:
                ok = "illegal memory access" in str(e)
            for _ in range(3):
                y = torch.zeros(4096)
                _copy(x, y, -1, 0, num_threads=2)
                ok = ok and torch.equal(x, y)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
    """)
    assert "child 0" in r.stdout, (r.stdout, r.stderr[-2000:])


def test_a_buffer_that_cannot_be_allocated_raises(failing_aligned_alloc):
    """The scratch arena of a kernel whose intermediate tensors exceed the stack is allocated
    at its first launch on each thread; when that fails (here aligned_alloc refuses it:
    conftest's failing_aligned_alloc), the launch raises and names the cause (runtime.c,
    out_of_memory) instead of faulting on a NULL buffer. The next launch, with memory, works."""
    code = """
        import os, torch
        from test_illegal_access import _row_cumsums
        n = 2**20
        x, y = torch.randint(-8, 8, (4 * n,)).float(), torch.zeros(4 * n)
        _row_cumsums.warmup(x, y, BLOCK=n, grid=(4,), num_threads=2)._init_handles()
        os.environ["TCPU_TEST_FAIL_ALLOC_FROM"] = str(1 << 20)
        try:
            _row_cumsums[(4,)](x, y, BLOCK=n, num_threads=2)
            print("no error")
        except RuntimeError as e:
            print("raised:", e)
        del os.environ["TCPU_TEST_FAIL_ALLOC_FROM"]
        _row_cumsums[(4,)](x, y, BLOCK=n, num_threads=2)
        print("next launch right:", torch.equal(y, x.view(4, n).cumsum(1).view(-1)))
    """
    r = failing_aligned_alloc(code)
    assert re.search(r"raised: out of memory: 4194304 bytes per thread for this kernel's scratch arena "
                     r".*the launch was stopped \(kernel '_row_cumsums'\)", r.stdout), (r.stdout, r.stderr[-2000:])
    assert "next launch right: True" in r.stdout, (r.stdout, r.stderr[-2000:])
    assert r.returncode == 0, r.stderr[-2000:]
