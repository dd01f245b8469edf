"""Run-time lane groups (convert_triton_to_tcpu/runtime_groups.py): Inductor's index
arithmetic under dynamic shapes (`xindex % ks0`, `xindex // ks0` with ks0 a kernel
argument of any value) evaluated in groups of lanes found at run time. Checked against
torch for sizes whose runs start and end inside vector steps, on chunk boundaries, are
shorter than a step (the nest runs as before), negative, and with i64 sizes; with both
vector widths. The sizes are not specialized (`do_not_specialize`), as Inductor passes
them."""
import pytest
import torch
import triton
import triton.language as tl

SIZES = ["ks0", "ks1", "ks2", "n"]


@triton.jit(do_not_specialize=SIZES)
def broadcast_kernel(x_ptr, b_ptr, out_ptr, ks0, ks1, ks2, n, XBLOCK: tl.constexpr):
    # out[x] = relu(x[x] + b[x % ks0]) * 2, Inductor's broadcast of a row
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < n
    x0 = xindex % ks0
    a = tl.load(x_ptr + xindex, xmask)
    b = tl.load(b_ptr + x0, xmask)
    tl.store(out_ptr + xindex, tl.maximum(a + b, 0.0) * 2, xmask)


@triton.jit(do_not_specialize=SIZES)
def embedding_kernel(idx_ptr, table_ptr, out_ptr, ks0, ks1, ks2, n, XBLOCK: tl.constexpr):
    # out[r, c] = 2 * table[idx[r], 2c] + table[idx[r], 2c + 1], for c < ks0: Inductor's
    # `table[idx][:, ::2] * 2 + table[idx][:, 1::2]` with its bounds assert
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < n
    x1 = xindex // ks0
    x0 = xindex % ks0
    row = tl.load(idx_ptr + x1, xmask)
    row = tl.where(row < 0, row + ks1, row)
    tl.device_assert(((0 <= row) & (row < ks1)) | ~xmask, "index out of bounds")
    a = tl.load(table_ptr + (2 * x0 + ks2 * row), xmask)
    b = tl.load(table_ptr + (1 + 2 * x0 + ks2 * row), xmask)
    tl.store(out_ptr + (x0 + x1 * ((1) * ((1) >= (ks0)) + (ks0) * ((ks0) > (1)))), a * 2 + b, xmask)


@triton.jit(do_not_specialize=SIZES)
def regroup_kernel(in_ptr, out_ptr, ks0, ks1, ks2, n, XBLOCK: tl.constexpr):
    # out[r, c] = in[r * ks1 + c % ks1] for c < ks0: a remainder of a remainder
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < n
    x0 = xindex % ks0
    x1 = xindex // ks0
    tl.store(out_ptr + xindex, tl.load(in_ptr + (ks1 * x1 + (x0 % ks1)), xmask), xmask)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("ks0", [1, 3, 31, 32, 33, 100, 128, 1000, 2500])
def test_broadcast_row(ks0, vector_bits):
    rows = 37
    n = rows * ks0 - (ks0 // 3)  # a partial last row
    x = torch.randn(rows * ks0)
    b = torch.randn(ks0)
    out = torch.full((rows * ks0,), 5.0)
    broadcast_kernel[(triton.cdiv(n, 1024),)](x, b, out, ks0, 0, 0, n, XBLOCK=1024, vector_bits=vector_bits)
    i = torch.arange(n)
    assert torch.equal(out[:n], torch.relu(x[:n] + b[i % ks0]) * 2)
    assert torch.equal(out[n:], torch.full((rows * ks0 - n,), 5.0))


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("ks0,rows", [(128, 50), (100, 41), (7, 300), (40, 33), (1, 500), (300, 9)])
def test_embedding_rows(ks0, rows, vector_bits):
    table = torch.randn(999, 2 * ks0 + 5)
    idx = torch.randint(-999, 999, (rows,))  # negative indices count from the end
    out = torch.full((rows, ks0), 5.0)
    n = rows * ks0
    k = embedding_kernel[(triton.cdiv(n, 1024),)](idx, table, out, ks0, 999, 2 * ks0 + 5, n, XBLOCK=1024,
                                                  vector_bits=vector_bits)
    e = table[idx]
    assert torch.equal(out, e[:, 0:2 * ks0:2] * 2 + e[:, 1:2 * ks0:2])
    if ks0 >= 64:
        # the row offset is computed once per group, not per lane
        assert "scf.while" in str(k.asm["ttcir"])


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_embedding_bounds_assert(vector_bits):
    table = torch.randn(50, 64)
    idx = torch.tensor([3, 49, 50, 1])  # 50 is out of range
    out = torch.empty(4, 32)
    with pytest.raises(RuntimeError, match="index out of bounds"):
        embedding_kernel[(1,)](idx, table, out, 32, 50, 64, 128, XBLOCK=1024, vector_bits=vector_bits, debug=True)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("ks0,ks1", [(1000, 1000), (1000, 96), (200, 333), (64, 17), (48, 48)])
def test_remainder_of_a_remainder(ks0, ks1, vector_bits):
    rows = 21
    src = torch.randn(rows * ks1 + 8)
    n = rows * ks0
    out = torch.empty(n)
    regroup_kernel[(triton.cdiv(n, 2048),)](src, out, ks0, ks1, 0, n, XBLOCK=2048, vector_bits=vector_bits)
    i = torch.arange(n)
    assert torch.equal(out, src[ks1 * (i // ks0) + (i % ks0) % ks1])


@triton.jit(do_not_specialize=SIZES)
def signed_kernel(b_ptr, out_ptr, ks0, ks1, ks2, n, XBLOCK: tl.constexpr):
    # out[x] = q * 1000 + b[r + 200] for q, r = (x - ks1) // ks0, (x - ks1) % ks0: the
    # dividend negative for the first lanes, the divisor of either sign, where the runs
    # of a truncating division are not those of a positive one
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK) - ks1
    mask = (xindex + ks1) < n
    q = xindex // ks0
    r = xindex % ks0
    tl.store(out_ptr + xindex + ks1, q.to(tl.float32) * 1000 + tl.load(b_ptr + (r + 200), mask), mask)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("ks0,ks1", [(100, 250), (-100, 250), (37, 0), (-37, 1000), (64, 64), (200, 2999)])
def test_negative_dividends_and_divisors(ks0, ks1, vector_bits):
    n = 3000
    b = torch.randn(400)
    out = torch.empty(n)
    signed_kernel[(triton.cdiv(n, 1024),)](b, out, ks0, ks1, 0, n, XBLOCK=1024, vector_bits=vector_bits)
    x = torch.arange(n) - ks1
    q = torch.div(x, ks0, rounding_mode="trunc")
    assert torch.equal(out, q.float() * 1000 + b[x - q * ks0 + 200])


@triton.jit(do_not_specialize=SIZES)
def wide_kernel(b_ptr, out_ptr, ks0, ks1, ks2, n, XBLOCK: tl.constexpr):
    # i64 sizes, as Inductor passes them: the i32 index is sign-extended for the division
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    xmask = xindex < n
    x0 = xindex % ks0
    x1 = xindex // ks0
    tl.store(out_ptr + xindex, tl.load(b_ptr + x0, xmask) + x1.to(tl.float32), xmask)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("ks0", [2**33 + 5, 1000, 77])
def test_i64_sizes(ks0, vector_bits):
    n = 5000
    width = min(ks0, n)
    b = torch.randn(width)
    out = torch.empty(n)
    wide_kernel[(triton.cdiv(n, 1024),)](b, out, ks0, 0, 0, n, XBLOCK=1024, vector_bits=vector_bits)
    i = torch.arange(n)
    assert torch.equal(out, b[i % ks0] + (i // ks0).float())


@triton.jit(do_not_specialize=SIZES)
def wrapping_kernel(b_ptr, out_ptr, ks0, ks1, ks2, n, XBLOCK: tl.constexpr):
    # x = local + ks2 wraps past 2^31 - 1 inside the block; its sign extension, divided by
    # an i64 ks0 larger than any x, jumps there: a group must end at the wrap
    local = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    x = local + ks2
    r = x % ks0
    v = tl.load(b_ptr + (r - x + local), local < n)
    tl.store(out_ptr + local, r.to(tl.float32) + v, local < n)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_index_wrapping_past_int32(vector_bits):
    n, start = 4096, 2**31 - 1500
    b = torch.randn(n)
    out = torch.empty(n)
    wrapping_kernel[(triton.cdiv(n, 1024),)](b, out, 2**33 + 5, 0, start, n, XBLOCK=1024,
                                             vector_bits=vector_bits)
    x = (torch.arange(n, dtype=torch.int64) + start + 2**31) % 2**32 - 2**31  # i32 wrap-around
    assert torch.equal(out, x.float() + b)
