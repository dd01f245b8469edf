"""The bounds-checked mode (`bounds_check=True`, or TRITON_CPU_BOUNDS_CHECK=1 at compile
time): each active lane of every load, store and atomic is checked against the storage of
the tensor argument its pointer derives from; a violation is not performed and the launch
raises RuntimeError naming the access, the kernel, the line, the program, the argument and
the offset. Masked-off lanes are never reported; the next launch works."""
import re

import pytest
import torch

import triton
import triton.language as tl

from conftest import run_in_threads, source_line


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)  # no mask: the bug under test
    y = tl.load(y_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x + y, mask=offs < n)


def test_off_by_one_load_names_everything():
    x, y, out = torch.randn(4096), torch.randn(4096), torch.empty(4096)
    line = source_line(add_kernel, "x = tl.load(x_ptr + offs)")[0]
    with pytest.raises(RuntimeError) as e:
        add_kernel[(5,)](x, y, out, 4096, BLOCK=1024, bounds_check=True)
    assert str(e.value) == (
        f"out-of-bounds load in kernel 'add_kernel' at test_bounds_check.py:{line}, program (4, 0, 0): "
        "element offset 4096 of argument 'x_ptr' (float32 tensor of 4096 elements, 0 bytes past its end); "
        "first of 1024 violations")
    # The masked load of y and the masked store saw no violation, and the in-bounds
    # programs ran: the result is right where it was computed.
    torch.testing.assert_close(out, x + y)
    # The process is fine and the next launch works.
    out2 = torch.empty(4096)
    add_kernel[(4,)](x, y, out2, 4096, BLOCK=1024, bounds_check=True)
    torch.testing.assert_close(out2, x + y)


def test_off_by_one_with_offset_in_the_middle_of_a_vector():
    # x is 4 elements short: the last 4 lanes of the last vector violate.
    x, y, out = torch.randn(4092), torch.randn(4096), torch.empty(4096)
    with pytest.raises(RuntimeError, match=r"element offset 4092 of argument 'x_ptr' \(float32 tensor of 4092 "
                                           r"elements, 0 bytes past its end\); first of 4 violations"):
        add_kernel[(1,)](x, y, out, 4096, BLOCK=4096, bounds_check=True)


@triton.jit
def store_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32), mask=offs <= n)  # off by one: <= instead of <


def test_off_by_one_store_is_not_performed():
    storage = torch.full((40,), -1.0)
    out = storage[:32]  # a view: the bounds are its storage's (40 elements)
    with pytest.raises(RuntimeError) as e:
        store_kernel[(2,)](out, 40, BLOCK=32, bounds_check=True)
    line = source_line(store_kernel, "tl.store(out_ptr")[0]
    assert str(e.value) == (
        f"out-of-bounds store in kernel 'store_kernel' at test_bounds_check.py:{line}, program (1, 0, 0): "
        "element offset 40 of argument 'out_ptr' (float32 tensor of 32 elements, in a storage of 160 bytes, "
        "0 bytes past its end); 1 violation")
    torch.testing.assert_close(storage, torch.arange(40, dtype=torch.float32))


@triton.jit
def copy_2d_kernel(x_ptr, out_ptr, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    ptrs = rows[:, None] * stride + cols[None, :]
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + ptrs, mask=cols[None, :] < N)  # the row mask is missing
    tl.store(out_ptr + ptrs, tile, mask=mask)


def test_missing_mask_in_2d_kernel():
    x = torch.randn(10, 12)
    out = torch.zeros(10, 12)
    with pytest.raises(RuntimeError) as e:
        copy_2d_kernel[(3,)](x, out, 10, 12, 12, BM=4, BN=16, bounds_check=True)
    msg = str(e.value)
    line = source_line(copy_2d_kernel, "tile = tl.load")[0]
    assert msg.startswith(f"out-of-bounds load in kernel 'copy_2d_kernel' at test_bounds_check.py:{line}, "
                          "program (2, 0, 0): element offset 120 of argument 'x_ptr' (float32 tensor of 120 "
                          "elements, 0 bytes past its end)")
    # Rows 10 and 11 of program 2, 12 valid columns each.
    assert msg.endswith("first of 24 violations")
    torch.testing.assert_close(out, x)


@triton.jit
def shifted_load_kernel(x_ptr, out_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs - shift))


def test_negative_offsets():
    x, out = torch.arange(16, dtype=torch.int64), torch.zeros(16, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=r"out-of-bounds load .* program \(0, 0, 0\): element offset -3 of "
                                           r"argument 'x_ptr' \(int64 tensor of 16 elements, 24 bytes before "
                                           r"its start\); first of 3 violations"):
        shifted_load_kernel[(1,)](x, out, 3, BLOCK=16, bounds_check=True)
    shifted_load_kernel[(1,)](x, out, 0, BLOCK=16, bounds_check=True)
    assert torch.equal(out, x)


@triton.jit
def histogram_kernel(bins_ptr, idx_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(bins_ptr + tl.load(idx_ptr + offs), 1)


def test_atomic_past_the_end():
    bins = torch.zeros(8, dtype=torch.int32)
    idx = torch.tensor([0, 1, 8, 3, 9, 7, 7, 1], dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"out-of-bounds atomic in kernel 'histogram_kernel' .* element "
                                           r"offset 8 of argument 'bins_ptr' \(int32 tensor of 8 elements, "
                                           r"0 bytes past its end\); first of 2 violations"):
        histogram_kernel[(1,)](bins, idx, BLOCK=8, bounds_check=True)
    # The in-bounds increments happened, the others did not.
    assert bins.tolist() == [1, 2, 0, 1, 0, 0, 0, 2]


@triton.jit
def cas_kernel(lock_ptr, k):
    tl.atomic_cas(lock_ptr + k, 0, 1)


def test_atomic_cas_past_the_end():
    lock = torch.zeros(2, dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"out-of-bounds atomic .* element offset 2 of argument 'lock_ptr'"):
        cas_kernel[(1,)](lock, 2, bounds_check=True)
    cas_kernel[(1,)](lock, 1, bounds_check=True)
    assert lock.tolist() == [0, 1]


@triton.jit
def wrong_argument_kernel(small_ptr, big_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    big = tl.load(small_ptr + offs, mask=mask)  # meant big_ptr: n is big's length
    tl.store(out_ptr + offs, big, mask=mask)


def test_pointer_derived_from_the_wrong_argument():
    small, big, out = torch.randn(100), torch.randn(1000), torch.empty(1000)
    with pytest.raises(RuntimeError, match=r"element offset 100 of argument 'small_ptr' \(float32 tensor of "
                                           r"100 elements, 0 bytes past its end\); first of 900 violations"):
        wrong_argument_kernel[(1,)](small, big, out, 1000, BLOCK=1024, bounds_check=True)


@triton.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.load(x_ptr + i * 3, mask=i >= 0, other=-1.0))


def test_gather_checks_only_active_lanes():
    x = torch.randn(30)
    idx = torch.tensor([0, 9, -5, 10, 2, -1, 3, 4], dtype=torch.int32)  # 10*3 = 30: out; negatives masked
    out = torch.empty(8)
    with pytest.raises(RuntimeError, match=r"element offset 30 of argument 'x_ptr' .*; 1 violation$"):
        gather_kernel[(1,)](x, idx, out, BLOCK=8, bounds_check=True)
    expected = torch.where(idx >= 0, x[(idx * 3).clamp(0, 29)], torch.tensor(-1.0))
    expected[3] = -1.0  # the violating lane is not loaded: it reads as `other`, like a masked-off lane
    torch.testing.assert_close(out, expected)


@triton.jit
def scalar_kernel(x_ptr, out_ptr, k):
    tl.store(out_ptr, tl.load(x_ptr + k) * 2)


def test_scalar_access_and_program_id():
    x, out = torch.randn(4), torch.zeros(1)
    with pytest.raises(RuntimeError, match=r"out-of-bounds load .* program \(0, 0, 0\): element offset 4 of "
                                           r"argument 'x_ptr' .*; 1 violation"):
        scalar_kernel[(1,)](x, out, 4, bounds_check=True)
    scalar_kernel[(1,)](x, out, 3, bounds_check=True)
    assert out.item() == x[3].item() * 2


@triton.jit
def raw_address_kernel(addr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    p = addr.to(tl.pointer_type(tl.float32))
    tl.store(out_ptr + offs, tl.load(p + offs))


def test_pointers_made_from_integers_are_not_checked():
    # x is not an argument: its storage is unknown to the launch, so the access through
    # the raw address is not checked (a report would be a false positive).
    x, out = torch.randn(64), torch.empty(16)
    raw_address_kernel[(1,)](x.data_ptr() + 4 * 48, out, BLOCK=16, bounds_check=True)
    assert torch.equal(out, x[48:])


@triton.jit
def select_kernel(a_ptr, b_ptr, out_ptr, use_a, k, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + k
    p = tl.where(use_a != 0, a_ptr, b_ptr)  # either argument: must stay in one of them
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p + offs))


def test_pointer_from_either_of_two_arguments():
    a, b, out = torch.randn(32), torch.randn(16), torch.empty(16)
    select_kernel[(1,)](a, b, out, 1, 16, BLOCK=16, bounds_check=True)
    assert torch.equal(out, a[16:])
    select_kernel[(1,)](a, b, out, 0, 0, BLOCK=16, bounds_check=True)
    assert torch.equal(out, b)
    # 64 MiB past b: 64 elements past it fell inside a (or out) once, as the allocator placed
    # them, and were in bounds.
    with pytest.raises(RuntimeError, match=r"out-of-bounds load in kernel 'select_kernel' .*; first of 16 violations"):
        select_kernel[(1,)](a, b, out, 0, 1 << 24, BLOCK=16, bounds_check=True)


def test_violations_of_many_programs_on_several_threads():
    n = 1 << 16
    x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
    with pytest.raises(RuntimeError, match=r"first of 4096 violations"):
        # 64 programs run by 4 threads; the last 4 programs read 1024 lanes past x each.
        add_kernel[(68,)](x, y, out, n, BLOCK=1024, bounds_check=True, num_threads=4)


@triton.jit
def knob_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


def test_environment_knob_turns_it_on(monkeypatch):
    # Read when the kernel is compiled (the JIT's in-memory cache does not see the
    # environment: a kernel compiled earlier in the process keeps its mode).
    monkeypatch.setenv("TRITON_CPU_BOUNDS_CHECK", "1")
    x, out = torch.randn(60), torch.empty(64)
    with pytest.raises(RuntimeError, match="out-of-bounds load in kernel 'knob_kernel'.*; first of 4 violations"):
        knob_kernel[(1,)](x, out, BLOCK=64)


def test_concurrent_launches_see_only_their_own_violations():
    n = 4096
    good = (torch.randn(n), torch.randn(n), torch.empty(n))
    errors, ok = [], []

    def bad_launches():
        x, y, out = torch.randn(n), torch.randn(n), torch.empty(n)
        for _ in range(50):
            try:
                add_kernel[(5,)](x, y, out, n, BLOCK=1024, bounds_check=True)
            except RuntimeError as e:
                errors.append(str(e))

    def good_launches():
        for _ in range(50):
            add_kernel[(4,)](*good, n, BLOCK=1024, bounds_check=True)
            ok.append(True)

    add_kernel[(4,)](*good, n, BLOCK=1024, bounds_check=True)  # compile first
    run_in_threads(bad_launches, good_launches)
    assert len(errors) == 50 and len(ok) == 50
    assert all(re.search(r"first of 1024 violations$", e) for e in errors)
