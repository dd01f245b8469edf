"""fp8 types: loads/stores, casts in both directions (every byte, subnormals, RNE ties,
rtz, NaN, infinity, saturation), abs, tl.dot on fp8 operands, fp8e4b15. Against torch's
float8 conversions for values in range; out of range, against the documented rule (values
beyond the range, infinities included, saturate to the largest finite, as NVIDIA's
`.satfinite` does and upstream's test_typeconvert_downcast_clamping requires)."""
import pytest
import torch
import triton
import triton.language as tl

FORMATS = {  # triton dtype, torch dtype, largest finite
    "e4m3fn": (tl.float8e4nv, torch.float8_e4m3fn, 448.0),
    "e5m2": (tl.float8e5, torch.float8_e5m2, 57344.0),
    "e4m3fnuz": (tl.float8e4b8, torch.float8_e4m3fnuz, 240.0),
    "e5m2fnuz": (tl.float8e5b16, torch.float8_e5m2fnuz, 57344.0),
}


@triton.jit
def to_fp8_kernel(x_ptr, out_ptr, N: tl.constexpr, DT: tl.constexpr, RTZ: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if RTZ:
        y = x.to(DT, fp_downcast_rounding="rtz")
    else:
        y = x.to(DT)
    tl.store(out_ptr + offs, y.to(tl.uint8, bitcast=True))


@triton.jit
def from_fp8_kernel(x_ptr, out_ptr, N: tl.constexpr, DT: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs).to(DT, bitcast=True)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + N + offs, tl.abs(x).to(out_ptr.dtype.element_ty))


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("dst", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_every_fp8_byte_widens_exactly(fmt, dst):
    tl_dt, torch_dt, _ = FORMATS[fmt]
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    out = torch.empty(512, dtype=dst)
    from_fp8_kernel[(1,)](codes, out, N=256, DT=tl_dt)
    ref = codes.view(torch_dt).to(dst)
    torch.testing.assert_close(out[:256], ref, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(out[256:], ref.abs(), rtol=0, atol=0, equal_nan=True)


def _in_range_samples(fmt, dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4096, generator=g) * torch.exp2(torch.randint(-12, 8, (4096,), generator=g).float())
    # Every representable value and every midpoint between neighbours (ties to even).
    vals = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(FORMATS[fmt][1]).float()
    vals = vals[vals.isfinite()].unique()
    mids = (vals[1:] + vals[:-1]) / 2
    x = torch.cat([x, vals, mids, torch.tensor([0.0, -0.0])])
    x = x[x.abs() <= FORMATS[fmt][2]]
    n = 1 << (x.numel() - 1).bit_length()
    return torch.cat([x, torch.zeros(n - x.numel())]).to(dtype)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("src", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_narrowing_to_fp8_rounds_to_nearest_even(fmt, src):
    tl_dt, torch_dt, _ = FORMATS[fmt]
    x = _in_range_samples(fmt, src)
    out = torch.empty(x.numel(), dtype=torch.uint8)
    to_fp8_kernel[(1,)](x, out, N=x.numel(), DT=tl_dt, RTZ=False)
    ref = x.to(torch_dt).view(torch.uint8)
    mism = (out != ref).nonzero()
    assert mism.numel() == 0, [(x[i].item(), out[i].item(), ref[i].item()) for i in mism[:5, 0]]


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
def test_narrowing_to_fp8_toward_zero(fmt):
    tl_dt, torch_dt, _ = FORMATS[fmt]
    x = _in_range_samples(fmt, torch.float32)
    out = torch.empty(x.numel(), dtype=torch.uint8)
    to_fp8_kernel[(1,)](x, out, N=x.numel(), DT=tl_dt, RTZ=True)
    got = out.view(torch_dt).float()
    nearest = x.to(torch_dt).float()
    # Toward zero: never larger in magnitude than x, and the nearest value when that is.
    assert bool((got.abs() <= x.abs()).all())
    keep = nearest.abs() <= x.abs()
    assert torch.equal(got[keep], nearest[keep])


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_fp8_special_values(fmt):
    tl_dt, torch_dt, big = FORMATS[fmt]
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), big * 4, -big * 4, 1e30, -0.0, 0.0])
    out = torch.empty(8, dtype=torch.uint8)
    to_fp8_kernel[(1,)](x, out, N=8, DT=tl_dt, RTZ=False)
    got = out.view(torch_dt).float()
    assert got[0].isnan()
    assert got[1:6].tolist() == [big, -big, big, -big, big]  # infinities saturate too
    assert got[6].item() == 0.0 and got[7].item() == 0.0
    if fmt.endswith("fnuz"):
        assert out[6].item() == 0  # no negative zero


@triton.jit
def fp8_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, DT: tl.constexpr):
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :]).to(DT, bitcast=True)
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :]).to(DT, bitcast=True)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], tl.dot(a, b))


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
def test_dot_on_fp8_operands(fmt):
    tl_dt, torch_dt, _ = FORMATS[fmt]
    g = torch.Generator().manual_seed(2)
    a = torch.randn(16, 32, generator=g).to(torch_dt)
    b = torch.randn(32, 16, generator=g).to(torch_dt)
    c = torch.empty(16, 16)
    fp8_dot_kernel[(1,)](a.view(torch.uint8), b.view(torch.uint8), c, M=16, N=16, K=32, DT=tl_dt)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-5, atol=1e-5)


@triton.jit
def e4b15_kernel(x_ptr, bits_ptr, back_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.load(x_ptr + offs).to(tl.float8e4b15)
    tl.store(bits_ptr + offs, y.to(tl.uint8, bitcast=True))
    tl.store(back_ptr + offs, y.to(tl.float32))


def test_fp8e4b15_roundtrip():
    """fp8e4b15: e4m3 with bias 15, no inf or NaN (its byte is a truncated fp16)."""
    codes = torch.arange(128, dtype=torch.int32)
    values = ((codes & 0x7F) << 7).to(torch.int16).view(torch.float16).float()  # every non-negative value
    x = torch.cat([values, -values])
    bits, back = torch.empty(256, dtype=torch.uint8), torch.empty(256)
    e4b15_kernel[(1,)](x, bits, back, N=256)
    assert torch.equal(back, x)
    assert torch.equal(bits[:128].int(), codes)
