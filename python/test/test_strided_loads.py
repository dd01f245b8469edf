"""Loads whose lanes step by a small constant stride (`x[::2]`, Inductor's `2*x0 + 256*row`)
are one contiguous window load plus a shuffle instead of a per-lane gather, and loads that
differ only in a small constant offset share the window (convert_triton_to_tcpu/
strided_loads.py). Checked against torch indexing, with masks, `other`, 64-bit offsets, the
run-time-checked variant, and the bounds-checked mode at the very end of a tensor (the window
must not reach past the last element a lane addresses)."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def strided_kernel(x, y, n, S: tl.constexpr, OFF: tl.constexpr, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    tl.store(y + o, tl.load(x + OFF + S * o, mask=m, other=-7.0), mask=m)


@pytest.mark.parametrize("stride", [2, 3, 4, 5])
@pytest.mark.parametrize("n", [37, 1000, 4096])
def test_strided_values(stride, n):
    x = torch.randn(stride * n + 1)
    y = torch.full((n + 5,), 3.0)
    k = strided_kernel[(triton.cdiv(n, 256),)](x, y, n, S=stride, OFF=1, B=256)
    assert torch.equal(y[:n], x[1::stride][:n])
    assert torch.equal(y[n:], torch.full((5,), 3.0))  # masked-off lanes store nothing
    # Strides up to 4 take the contiguous load; 5 stays a gather.
    assert ("tcpu.gather" in k.asm["ttcir"]) == (stride > 4)


@triton.jit
def rows_kernel(table, idx, out, D: tl.constexpr, B: tl.constexpr):
    # Inductor's shape: row from a load, column 2*x0 (+1), 64-bit offsets.
    xi = tl.program_id(0) * B + tl.arange(0, B)
    row = tl.load(idx + xi // (D // 2))
    x0 = xi % (D // 2)
    a = tl.load(table + (2 * x0 + D * row))
    b = tl.load(table + (1 + 2 * x0 + D * row))
    tl.store(out + xi, a * 2 + b)


def test_rows_of_a_table():
    table = torch.randn(1000, 64)
    idx = torch.randint(0, 1000, (96,))
    out = torch.empty(96, 32)
    k = rows_kernel[(96 * 32 // 128,)](table, idx, out, D=64, B=128)
    e = table[idx]
    torch.testing.assert_close(out, e[:, ::2] * 2 + e[:, 1::2], rtol=0, atol=0)
    assert "tcpu.gather" not in k.asm["ttcir"]


@triton.jit
def assumed_kernel(x, y, shift, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    c = (o - shift) % 64  # contiguous in runs of 64 only if o - shift >= 0: checked at run time
    tl.store(y + o, tl.load(x + 128 + 2 * c))  # c >= -63: in bounds


@pytest.mark.parametrize("vector_bits", [256, 512])  # runs of 16 lanes: one step of 16 at 512 bits
@pytest.mark.parametrize("shift", [0, 48, 1024])  # multiples of 16: aligned runs (o - shift < 0 for 1024)
def test_run_time_checked_stride(shift, vector_bits):
    x = torch.randn(256)
    y = torch.empty(512)
    k = assumed_kernel[(4,)](x, y, shift, B=128, vector_bits=vector_bits)
    o = torch.arange(512)
    c = torch.fmod(o - shift, 64)  # C remainder: negative for negative o - shift
    assert torch.equal(y, x[128 + 2 * c])
    assert "stride = 2" in k.asm["ttcir"]


def test_no_bounds_report_at_the_end():
    """The last lane is the tensor's last element: the wide load's mask keeps it in bounds."""
    n = 1000
    x = torch.randn(2 * (n - 1) + 1)
    y = torch.empty(n)
    strided_kernel[(triton.cdiv(n, 256),)](x, y, n, S=2, OFF=0, B=256, bounds_check=True)
    assert torch.equal(y, x[::2])


@triton.jit
def family_kernel(x, y, n, S: tl.constexpr, OFFS: tl.constexpr, MASKED: tl.constexpr, B: tl.constexpr):
    # y[i] = sum over the members k of (k + 1) * x[S * i + OFFS[k]]: loads that differ only
    # in a constant offset smaller than S share one window. Masked-off lanes of y get the
    # sum of the members' `other`s (stored: y has a whole number of blocks).
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    acc = tl.zeros([B], tl.float32)
    for k in tl.static_range(len(OFFS)):
        if MASKED:
            v = tl.load(x + OFFS[k] + S * o, mask=m, other=-(k + 1.0))
        else:
            v = tl.load(x + OFFS[k] + S * o)
        acc += (k + 1) * v
    tl.store(y + o, acc)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("masked", [True, False])
@pytest.mark.parametrize("stride,offs", [(2, (0, 1)), (2, (1, 0)), (3, (0, 1, 2)), (3, (1, 2)), (4, (3, 1)),
                                         (4, (0, 2, 3)), (2, (0, 2))])
def test_families_at_the_end_of_a_tensor(stride, offs, masked, vector_bits):
    """Members' values and `other`s, and a window that ends at the last member's last lane,
    which is the tensor's last element: the bounds-checked mode reports any element read
    past it."""
    n = 1000 if masked else 1024
    rel = [o - min(offs) for o in offs]
    x = torch.randn(stride * (n - 1) + max(rel) + 1)
    y = torch.empty(1024)
    k = family_kernel[(4,)](x, y, n, S=stride, OFFS=tuple(rel), MASKED=masked, B=256,
                            vector_bits=vector_bits, bounds_check=True)
    ref = sum((j + 1) * x[r::stride][:n] for j, r in enumerate(rel))
    torch.testing.assert_close(y[:n], ref, rtol=1e-6, atol=1e-6)  # (the kernel may fuse into FMAs)
    if masked:
        other = sum(-(j + 1.0) * (j + 1) for j in range(len(rel)))
        assert torch.equal(y[n:], torch.full((1024 - n,), other))
    ir = str(k.asm["ttcir"])
    assert "tcpu.gather" not in ir
    windows = ir.count(f"-> vector<{stride * vector_bits // 16}xf32>")
    # one window per step for a family (offsets less than the stride apart), else one each;
    # twice when masked: the mask selects `other` (a value), so split-bound-check-loops
    # copies the loop for the chunks inside the bound
    copies = 2 if masked else 1
    assert windows == copies * (1 if max(rel) < stride else len(rel)), ir
