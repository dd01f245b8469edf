"""split-bound-check-loops end to end: kernels whose bound checks are used as values give
torch's results (and the interpreter's) for every position of the bound around the
vector chunks, for lane offsets that start negative, near INT32_MAX (the lanes wrap) or
at INT32_MIN, for unsigned checks and every operand order, and inside 2-D tiles and
lane-group loops. Each kernel's IR is checked to have been split, so that the cases
exercise the pass."""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["start", "n"])
def where_ramp_kernel(x_ptr, y_ptr, sum_ptr, start, n, PRED: tl.constexpr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    cols = start + lanes
    if PRED == 0:
        valid = cols < n
    elif PRED == 1:
        valid = cols <= n
    elif PRED == 2:
        valid = n > cols
    elif PRED == 3:
        valid = n >= cols
    else:
        valid = cols.to(tl.uint32, bitcast=True) < n.to(tl.uint32, bitcast=True)
    v = tl.where(valid, tl.load(x_ptr + lanes) * 2.0 + 1.0, -3.0)
    tl.store(y_ptr + lanes, v)
    tl.store(sum_ptr, tl.sum(v, axis=0))


# The kernel's PRED forms in numpy, on exact int64 values.
_PREDICATES = [lambda c, n: c < n, lambda c, n: c <= n, lambda c, n: n > c, lambda c, n: n >= c,
               lambda c, n: c % 2**32 < n % 2**32]  # unsigned


def _ramp_reference(x, start, n, pred):
    lanes = np.arange(x.numel(), dtype=np.int64)
    cols = ((start + lanes + 2**31) % 2**32 - 2**31)  # int32 wrapping, like the lanes
    valid = _PREDICATES[pred](cols, n)
    return torch.where(torch.from_numpy(valid), x * 2.0 + 1.0, torch.tensor(-3.0))


def _split(compiled) -> bool:
    return "dense<true>" in compiled.asm["ttcir"]


@pytest.mark.parametrize("pred", range(5))
@pytest.mark.parametrize("block", [256, 1024])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_bound_positions(pred, block, vector_bits):
    x = torch.randn(block)
    y, total = torch.empty(block), torch.empty(1)
    ns = [-5, 0, 1, 15, 16, 17, 63, 64, 65, 100, block - 1, block, block + 1, 5000, 2**31 - 1, -2**31]
    starts = [0, 7, -20, 2**31 - 600, -2**31, 2**31 - block]
    split = False
    for start in starts:
        for n in ns:
            k = where_ramp_kernel[(1,)](x, y, total, start, n, PRED=pred, BLOCK=block, vector_bits=vector_bits)
            split |= _split(k)
            ref = _ramp_reference(x, start, n, pred)
            torch.testing.assert_close(y, ref, rtol=0, atol=0, msg=lambda m: f"start={start} n={n}: {m}")
            torch.testing.assert_close(total, ref.sum(0, keepdim=True), rtol=1e-5, atol=1e-3)
    assert split


@triton.jit
def tile_kernel(x_ptr, out_ptr, M, N, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """A 2-D tile whose row and column checks are ANDed and used as a value."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=5.0)
    centered = tl.where(mask, x - 1.0, 0.0)
    tl.store(out_ptr + rows, tl.sum(centered * centered, axis=1), mask=rows < M)


@pytest.mark.parametrize("n", [1, 33, 200, 256])
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_tile_with_row_mask(n, vector_bits):
    m = 13
    x = torch.randn(m, n)
    out = torch.empty(m)
    k = tile_kernel[(triton.cdiv(m, 4),)](x, out, m, n, n, ROWS=4, BLOCK=256, vector_bits=vector_bits)
    torch.testing.assert_close(out, ((x - 1.0)**2).sum(1), rtol=1e-5, atol=1e-4)
    assert _split(k)


@triton.jit
def grouped_kernel(in_ptr, out_ptr, xnumel, XBLOCK: tl.constexpr):
    """Inductor's shape: `xindex % 128` makes lane-group loops; the check is a value."""
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    x0 = xindex % 128
    v = tl.load(in_ptr + x0)
    tl.store(out_ptr + xindex, tl.where(xmask, v + 1.0, -1.0), mask=xindex < xnumel + 64)


@pytest.mark.parametrize("xnumel", [1, 100, 1000, 1024, 1500])
def test_lane_groups(xnumel, interp):
    src = torch.randn(128)
    outs = []
    for kernel in (grouped_kernel, interp(grouped_kernel)):
        out = torch.full((2048 + 64,), 7.0)
        k = kernel[(2,)](src, out, xnumel, XBLOCK=1024)
        outs.append(out)
        if kernel is grouped_kernel:
            assert _split(k)
    idx = torch.arange(2048)
    ref = torch.full((2048 + 64,), 7.0)
    stored = idx < xnumel + 64
    ref[:2048][stored] = torch.where(idx < xnumel, src[idx % 128] + 1.0, torch.tensor(-1.0))[stored]
    torch.testing.assert_close(outs[0], ref, rtol=0, atol=0)
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)


@triton.jit
def mask_only_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n, other=0.0)
    tl.store(y_ptr + cols, x * 2.0, mask=cols < n)


def test_memory_masks_are_not_split():
    """A check that only masks loads and stores costs a compare per chunk: not worth a copy
    of the loop."""
    x, y = torch.randn(1024), torch.zeros(1024)
    k = mask_only_kernel[(1,)](x, y, 1000, BLOCK=1024)
    torch.testing.assert_close(y[:1000], x[:1000] * 2.0)
    assert not torch.any(y[1000:])
    assert not _split(k)
