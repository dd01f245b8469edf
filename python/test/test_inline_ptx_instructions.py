"""inline-ptx, one instruction: PTX approximations in `tl.inline_asm_elementwise` run as the
math functions they approximate, against torch in fp64, at both vector widths; `.ftz` flushes
subnormal operands and results; mov is a bitcast; two- and three-operand arithmetic matches
torch's fp32 (`.rn` never contracted into an fma); the ue8m0 scale conversion matches a
Python rounding of each value up to a power of two; what is not PTX's is refused. Blocks of
several instructions: test_inline_ptx.py."""
import math

import pytest
import torch
import triton
import triton.language as tl

from triton_cpu.errors import UnsupportedError


@triton.jit
def _asm_kernel(x_ptr, out_ptr, n, ASM: tl.constexpr, CONSTRAINTS: tl.constexpr, INT_OUT: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if INT_OUT:
        y = tl.inline_asm_elementwise(ASM, CONSTRAINTS, [x], dtype=tl.int32, is_pure=True, pack=1)
    else:
        y = tl.inline_asm_elementwise(ASM, CONSTRAINTS, [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=mask)


def _run(asm, x, constraints="=f,f", out_dtype=torch.float32, vector_bits=0):
    out = torch.empty(x.shape, dtype=out_dtype)
    _asm_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), ASM=asm, CONSTRAINTS=constraints,
                                                INT_OUT=out_dtype == torch.int32,
                                                BLOCK=256, vector_bits=vector_bits)
    return out


def _spread(n=1000, scale=4.0):
    torch.manual_seed(0)
    return torch.randn(n) * scale


def _positive(n=1000):
    torch.manual_seed(0)
    return torch.exp(torch.randn(n) * 8)  # e^-30 .. e^30


# asm -> (inputs, fp64 reference)
_CASES = {
    "tanh.approx.f32 $0, $1;": (_spread, torch.tanh),
    "ex2.approx.f32 $0, $1;": (lambda: _spread(scale=40.0), torch.exp2),
    "ex2.approx.ftz.f32 $0, $1;": (_spread, torch.exp2),
    "lg2.approx.f32 $0, $1;": (_positive, torch.log2),
    "lg2.approx.ftz.f32 $0, $1;": (_positive, torch.log2),
    "sin.approx.f32 $0, $1;": (_spread, torch.sin),
    "cos.approx.ftz.f32 $0, $1;": (_spread, torch.cos),
    "rcp.approx.f32 $0, $1;": (_spread, torch.reciprocal),
    "rcp.rn.f32 $0, $1;": (_spread, torch.reciprocal),
    "sqrt.approx.f32 $0, $1;": (_positive, torch.sqrt),
    "sqrt.rn.ftz.f32 $0, $1;": (_positive, torch.sqrt),
    "rsqrt.approx.f32 $0, $1;": (_positive, torch.rsqrt),
}


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("asm", list(_CASES))
def test_ptx_math_instruction(asm, vector_bits):
    make, ref_fn = _CASES[asm]
    x = make()
    got = _run(asm, x, vector_bits=vector_bits)
    ref = ref_fn(x.double()).float().double()  # exact, rounded to fp32 (overflows to inf as fp32 does)
    # Within ~2 fp32 ulps of it: far inside the PTX approximations' bounds.
    torch.testing.assert_close(got.double(), ref, rtol=2.5e-7, atol=1e-7)


def test_constraints_r_and_spacing():
    x = _spread()
    got = _run("  tanh.approx.f32\t$0 ,$1 ", x, constraints="=r,r")
    torch.testing.assert_close(got.double(), torch.tanh(x.double()), rtol=2.5e-7, atol=1e-7)


_SUB = 2.0**-130  # a subnormal fp32


def test_ftz_flushes_subnormal_operands_and_results():
    x = torch.tensor([_SUB, -_SUB, 2.0**-127, 1.0, -2.0])
    assert _run("rcp.approx.ftz.f32 $0, $1;", x).tolist() == [math.inf, -math.inf, math.inf, 1.0, -0.5]
    # Without .ftz a subnormal operand is a number: 1 / 2^-127 = 2^127.
    assert _run("rcp.approx.f32 $0, $1;", x).tolist()[2] == 2.0**127
    # exp2 of -130 is 2^-130, subnormal: flushed to +0 with .ftz, exact without.
    e = torch.tensor([-130.0, -126.0, 0.0])
    assert _run("ex2.approx.ftz.f32 $0, $1;", e).tolist() == [0.0, 2.0**-126, 1.0]
    assert _run("ex2.approx.f32 $0, $1;", e).tolist() == [2.0**-130, 2.0**-126, 1.0]
    # sqrt of a negative subnormal: -0 (its flushed operand), not NaN.
    s = _run("sqrt.approx.ftz.f32 $0, $1;", torch.tensor([-_SUB, _SUB, 4.0]))
    assert s.tolist() == [0.0, 0.0, 2.0] and math.copysign(1.0, s[0].item()) == -1.0
    assert math.isnan(_run("sqrt.approx.f32 $0, $1;", torch.tensor([-_SUB])).item())


def test_mov_is_the_operand_or_its_bits():
    x = _spread()
    assert torch.equal(_run("mov.f32 $0, $1;", x, constraints="=r,r"), x)
    bits = x.view(torch.int32)
    assert torch.equal(_run("mov.b32 $0, $1;", bits, constraints="=r,r"), x)
    assert torch.equal(_run("mov.b32 $0, $1;", x, constraints="=r,r", out_dtype=torch.int32), bits)


@triton.jit
def _scalar_asm_kernel(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    y = tl.inline_asm_elementwise("ex2.approx.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr, y)


def test_scalar_operand():
    x, out = torch.tensor([3.5]), torch.empty(1)
    _scalar_asm_kernel[(1,)](x, out)
    assert out.item() == pytest.approx(2**3.5, rel=1e-7)


@pytest.mark.parametrize("asm", ["tanh.approx.ftz.f32 $0, $1;",  # no such instruction
                                 "add.rz.f32 $0, $1, $1;",  # a rounding mode not translated
                                 "add.f32 $0, $1, %r1;"])  # a register it does not define
def test_other_assembly_is_refused(asm):
    with pytest.raises(UnsupportedError, match="tt.elementwise_inline_asm"):
        _run(asm, _spread())


@triton.jit
def _asm3_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, ASM: tl.constexpr, CONSTRAINTS: tl.constexpr,
                 ADD_Z: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x, y, z = tl.load(x_ptr + offs, mask=mask), tl.load(y_ptr + offs, mask=mask), tl.load(z_ptr + offs, mask=mask)
    if ADD_Z:  # the result added to z in the kernel: an fma candidate when the asm is a multiply
        r = tl.inline_asm_elementwise(ASM, CONSTRAINTS, [x, y], dtype=tl.float32, is_pure=True, pack=1) + z
    else:
        r = tl.inline_asm_elementwise(ASM, CONSTRAINTS, [x, y, z], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, r, mask=mask)


def _run3(asm, x, y, z, constraints="=f,f,f,f", add_z=False, vector_bits=0):
    out = torch.empty_like(x)
    _asm3_kernel[(triton.cdiv(x.numel(), 256),)](x, y, z, out, x.numel(), ASM=asm, CONSTRAINTS=constraints,
                                                 ADD_Z=add_z, BLOCK=256, vector_bits=vector_bits)
    return out


def _xyz(n=1000):
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(n, generator=g) * 3, torch.randn(n, generator=g) * 3
    return x, y, torch.randn(n, generator=g)


# asm -> fp32 reference on (x, y, z) (fp64 results rounded once to fp32); `.rn` results are
# IEEE's, so they are compared exactly.
_ARITH = {
    "add.rn.f32 $0, $1, $2;": lambda x, y, z: x + y,
    "sub.rn.f32 $0, $1, $2;": lambda x, y, z: x - y,
    "mul.rn.f32 $0, $1, $2;": lambda x, y, z: x * y,
    "mul.rn.ftz.f32 $0, $1, $2;": lambda x, y, z: x * y,  # no subnormal in these operands
    "div.rn.f32 $0, $1, $2;": lambda x, y, z: (x.double() / y.double()).float(),
    "fma.rn.f32 $0, $1, $2, $3;": lambda x, y, z: (x.double() * y.double() + z.double()).float(),
    "add.f32 $0, $1, 0f3F800000;": lambda x, y, z: x + 1.0,  # PTX's hex literal for 1.0
    "mul.f32 $0, $2, 0.5;": lambda x, y, z: y * 0.5,
}


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("asm", list(_ARITH))
def test_ptx_arithmetic(asm, vector_bits):
    x, y, z = _xyz()
    assert torch.equal(_run3(asm, x, y, z, vector_bits=vector_bits), _ARITH[asm](x, y, z))


def test_div_full_within_two_ulp():
    x, y, z = _xyz()
    got = _run3("div.full.f32 $0, $1, $2;", x, y, z)
    torch.testing.assert_close(got.double(), x.double() / y.double(), rtol=2.5e-7, atol=0)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_mul_rn_is_never_contracted(vector_bits):
    """x*y + z with the product from `mul.rn`: two roundings, as PTX keeps them, although
    the kernel's add may contract with a plain multiply (enable_fp_fusion, the default).
    z = -fl(x*y) makes the difference visible: with an fma the result would be x*y's
    rounding error, not 0."""
    x, y, _ = _xyz()
    z = -(x * y)
    got = _run3("mul.rn.f32 $0, $1, $2;", x, y, z, "=f,f,f", add_z=True, vector_bits=vector_bits)
    assert torch.equal(got, x * y + z)


def _ue8m0(v: float) -> int:
    """v rounded up to 2^(c - 127), c = 0..254 (satfinite), as its code c; NaN: 255."""
    if math.isnan(v):
        return 255
    if v <= 2.0**-127:
        return 0
    if v >= 2.0**127:
        return 254
    m, e = math.frexp(v)  # v = m * 2^e, 0.5 <= m < 1
    return e - 1 + 127 + (m != 0.5)


@triton.jit
def _ue8m0_kernel(a_ptr, b_ptr, out_ptr, out1_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    both = tl.inline_asm_elementwise("cvt.rp.satfinite.ue8m0x2.f32 $0, $1, $2;", "=h,f,f", [a, b],
                                     dtype=tl.uint16, is_pure=True, pack=1)
    tl.store(out_ptr + offs, both)
    # torchao's and TransformerEngine's form: one operand, the other 0.0; as a scalar too
    one = tl.inline_asm_elementwise("cvt.rp.satfinite.ue8m0x2.f32 $0, 0.0, $1;", "=h,r", [b],
                                    dtype=tl.uint16, is_pure=True, pack=1)
    tl.store(out1_ptr + offs, one)
    s = tl.inline_asm_elementwise("cvt.rp.satfinite.ue8m0x2.f32 $0, 0.0, $1;", "=h,r", [tl.load(b_ptr)],
                                  dtype=tl.uint16, is_pure=True, pack=1)
    tl.store(out1_ptr + BLOCK, s)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_ue8m0_rounds_up_to_powers_of_two(vector_bits):
    special = [0.0, -0.0, math.nan, math.inf, -math.inf, -3.0, 1.0, 1.5, 2.0**-127, 2.0**-127 * 1.0000001,
               2.0**-128, 2.0**-149, 2.0**-126, 2.0**127, 2.0**127 * 1.5, 3.4e38, 448.0, 1 / 448.0]
    g = torch.Generator().manual_seed(2)
    b = torch.cat([torch.tensor(special), torch.exp(torch.randn(1024 - len(special), generator=g) * 30)])
    a = b.flip(0).contiguous()
    out, out1 = torch.empty(1024, dtype=torch.int16), torch.empty(1025, dtype=torch.int16)
    _ue8m0_kernel[(1,)](a, b, out, out1, BLOCK=1024, vector_bits=vector_bits)
    want_b = torch.tensor([_ue8m0(v) for v in b.tolist()], dtype=torch.int32)
    want_a = torch.tensor([_ue8m0(v) for v in a.tolist()], dtype=torch.int32)
    assert torch.equal(out.to(torch.int32) & 0xFFFF, want_a << 8 | want_b)
    assert torch.equal(out1[:1024].to(torch.int32), want_b)  # 0.0 in the high byte: code 0
    assert out1[1024].item() == want_b[0].item()
