"""A tile store fed by a load through the same argument (convert_triton_to_tcpu/core.py,
`_own_store_may_overwrite`): the loaded tile is a value, what memory held before any of the
tile was written, also where the store writes over what another part of the tile reads (an
in-place shift or reversal, rows that overlap at run time). The conversion evaluates a
store chunk by chunk, so such a load is read whole first. Checked against the program's
semantics computed in torch (the whole load, then the store), both vector widths."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def shift_in_place(p_ptr, shift, n, B: tl.constexpr):
    offs = tl.arange(0, B)
    mask = offs < n
    tl.store(p_ptr + offs + shift, tl.load(p_ptr + offs, mask=mask) * 2.0, mask=mask)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("shift", [1, 5, 17, -1, -16, 0])
@pytest.mark.parametrize("n", [256, 200])
def test_shift_in_place(shift, n, vector_bits):
    base = 32
    p = torch.randn(256 + 2 * base)
    want = p.clone()
    want[base + shift:base + shift + n] = p[base:base + n] * 2.0
    shift_in_place[(1,)](p[base:], shift, n, B=256, vector_bits=vector_bits)
    assert torch.equal(p, want)


@triton.jit
def reverse_in_place(p_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(p_ptr + offs, tl.load(p_ptr + (B - 1 - offs)))


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("B", [16, 128, 1024])
def test_reverse_in_place(B, vector_bits):
    p = torch.randn(B)
    want = p.flip(0)
    reverse_in_place[(1,)](p, B=B, vector_bits=vector_bits)
    assert torch.equal(p, want)


@triton.jit
def increment_rows(p_ptr, stride, ROWS: tl.constexpr, COLS: tl.constexpr):
    # rows `stride` elements apart: with stride < COLS (0 included) they share addresses
    p = p_ptr + tl.arange(0, COLS)[None, :] + stride * tl.arange(0, ROWS)[:, None]
    tl.store(p, tl.load(p) + 1.0)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("stride", [0, 3, 8, 16, 64, 100])
@pytest.mark.parametrize("rows,cols", [(4, 16), (8, 64)])
def test_rows_overlapping_at_run_time(rows, cols, stride, vector_bits):
    p = torch.randn(rows * max(stride, cols) + cols)
    idx = (torch.arange(cols)[None, :] + stride * torch.arange(rows)[:, None]).flatten()
    want = p.clone()
    want[idx] = p[idx] + 1.0  # every element written holds its old value + 1, once
    increment_rows[(1,)](p, stride, ROWS=rows, COLS=cols, vector_bits=vector_bits)
    assert torch.equal(p, want)


@triton.jit
def scatter_add_one(p_ptr, idx_ptr, B: tl.constexpr):
    # a gather and a scatter through the same indices, which repeat
    i = tl.load(idx_ptr + tl.arange(0, B))
    tl.store(p_ptr + i, tl.load(p_ptr + i) + 1.0)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_repeated_indices_in_place(vector_bits):
    B = 64
    idx = torch.randint(0, 8, (B,), dtype=torch.int32)
    p = torch.randn(8)
    want = p.clone()
    want[idx.long()] = p[idx.long()] + 1.0
    scatter_add_one[(1,)](p, idx, B=B, vector_bits=vector_bits)
    assert torch.equal(p, want)


@triton.jit
def increment_masked_rows(p_ptr, STRIDE: tl.constexpr, K: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    # Inductor's persistent reduction of rows shorter than the block: `r < K` keeps K
    # lanes of each row; with STRIDE >= K those share no address, below they do
    r = tl.arange(0, COLS)[None, :]
    p = p_ptr + r + STRIDE * tl.arange(0, ROWS)[:, None]
    mask = r < K
    tl.store(p, tl.load(p, mask=mask) * 2.0 + 1.0, mask=mask)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("stride,k", [(10, 10), (12, 10), (8, 10), (1, 16)])
def test_masked_rows_in_place(stride, k, vector_bits):
    rows, cols = 4, 16
    p = torch.randn(rows * stride + cols)
    idx = (torch.arange(k)[None, :] + stride * torch.arange(rows)[:, None]).flatten()
    want = p.clone()
    # where rows overlap, each writes its value of the same old element: all agree
    want[idx] = p[idx] * 2.0 + 1.0
    increment_masked_rows[(1,)](p, STRIDE=stride, K=k, ROWS=rows, COLS=cols, vector_bits=vector_bits)
    assert torch.equal(p, want)
