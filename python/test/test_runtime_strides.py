"""Strides the compiler does not know: `offs * stride` with `stride` an argument Triton does
not specialize (`do_not_specialize`, as FlagGems' generated pointwise kernels declare every
stride, in i64). The lowering takes vector accesses when the stride is 1 at run time and
gathers/scatters otherwise (contiguity_checks.unit_stride_check); the 64-bit bound check
of such kernels is one scalar compare per chunk. Also pow(x, 2) as x * x. Results against
torch on contiguous tensors and on strided views, masked tails included."""
import pytest
import torch

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit(do_not_specialize=["x_stride", "y_stride", "n"])
def strided_axpy(x_ptr, y_ptr, out_ptr, x_stride, y_stride, n, BLOCK: tl.constexpr):
    # FlagGems' shape: i64 offsets, the strides widened to i64 and multiplied in.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < n
    x = tl.load(x_ptr + offs * x_stride.to(tl.int64), mask=mask)
    y = tl.load(y_ptr + offs * y_stride.to(tl.int64), mask=mask, other=1.0)
    tl.store(out_ptr + offs * y_stride.to(tl.int64), 2.0 * x + y, mask=mask)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("n", [1000, 1024, 4096 + 16])
@pytest.mark.parametrize("strides", [(1, 1), (2, 1), (1, 3), (3, 2)])
def test_unknown_strides(strides, n, vector_bits):
    sx, sy = strides
    x_base, y_base = torch.randn(n * sx), torch.randn(n * sy)
    x, y = x_base[::sx], y_base[::sy]
    out_base = torch.full((n * sy,), -7.0)
    kernel = strided_axpy[(triton.cdiv(n, 256),)](x, y, out_base, sx, sy, n, BLOCK=256, vector_bits=vector_bits)
    torch.testing.assert_close(out_base[::sy], 2.0 * x + y, rtol=0, atol=0)
    if sy > 1:  # the lanes between the strided ones are left alone
        untouched = torch.ones(n * sy, dtype=torch.bool)
        untouched[::sy] = False
        assert (out_base[untouched] == -7.0).all()
    ir = kernel.asm["ttcir"]
    assert "tcpu.vload" in ir and "tcpu.gather" in ir  # both paths, chosen at run time
    assert "tcpu.is_contiguous" not in ir  # by the scalar stride == 1, not per lane


@triton.jit
def squared(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, libdevice.pow(tl.load(x_ptr + offs, mask=mask), 2.0), mask=mask)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pow_of_two_is_the_square(dtype):
    x = torch.cat([torch.randn(1000, dtype=dtype) * 1e3, torch.tensor(
        [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1e-30, 3e-39, torch.finfo(dtype).max],
        dtype=dtype)])
    y = torch.empty_like(x)
    kernel = squared[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    torch.testing.assert_close(y, x * x, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(torch.signbit(y), torch.signbit(x * x))
    assert "pow" not in kernel.asm["asm"]  # no call of pow, powf or a SLEEF pow
