"""inline-ptx-math: one-instruction PTX approximations in `tl.inline_asm_elementwise` run as the
math functions they approximate, against torch in fp64, at both vector widths; `.ftz` flushes
subnormal operands and results; mov is a bitcast; other inline assembly is still refused."""
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


@pytest.mark.parametrize("asm", ["{ .reg .f32 t; ex2.approx.f32 t, $1; mov.f32 $0, t; }",
                                 "tanh.approx.ftz.f32 $0, $1;",  # no such instruction
                                 "add.f32 $0, $1, $1;"])
def test_other_assembly_is_refused(asm):
    with pytest.raises(UnsupportedError, match="tt.elementwise_inline_asm"):
        _run(asm, _spread())
