"""inline-ptx, blocks of instructions: registers, predicated execution, integer and bitwise
instructions (prmt, lop3, shf, shifts past the width, mul.hi/wide), PTX's min/max rules,
conversions to and from the packed fp8 / fp4 / f16 formats of quantization kernels, and
`pack` > 1 (elements packed into 32-bit registers). Every result is checked against torch or
a numpy model written from the PTX ISA's definition of the instruction, at both vector
widths where the code is vector code; what cannot run on a CPU is refused with the
instruction named."""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from triton_cpu.errors import UnsupportedError

BLOCK = 256
WIDTHS = [256, 512]


@triton.jit
def _one(x_ptr, out_ptr, n, ASM: tl.constexpr, CONS: tl.constexpr, OUT: tl.constexpr, PACK: tl.constexpr,
         BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.inline_asm_elementwise(ASM, CONS, [x], dtype=OUT.value, is_pure=True, pack=PACK)
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def _two(x_ptr, y_ptr, out_ptr, n, ASM: tl.constexpr, CONS: tl.constexpr, OUT: tl.constexpr, PACK: tl.constexpr,
         BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.inline_asm_elementwise(ASM, CONS, [x, y], dtype=OUT.value, is_pure=True, pack=PACK)
    tl.store(out_ptr + offs, z, mask=mask)


@triton.jit
def _three(x_ptr, y_ptr, z_ptr, out_ptr, n, ASM: tl.constexpr, CONS: tl.constexpr, OUT: tl.constexpr,
           BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    r = tl.inline_asm_elementwise(ASM, CONS, [x, y, z], dtype=OUT.value, is_pure=True, pack=1)
    tl.store(out_ptr + offs, r, mask=mask)


@triton.jit
def _one_to_two(x_ptr, a_ptr, b_ptr, n, ASM: tl.constexpr, CONS: tl.constexpr, OUT: tl.constexpr,
                PACK: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    a, b = tl.inline_asm_elementwise(ASM, CONS, [x], dtype=(OUT.value, OUT.value), is_pure=True, pack=PACK)
    tl.store(a_ptr + offs, a, mask=mask)
    tl.store(b_ptr + offs, b, mask=mask)


_TL = {torch.float32: tl.float32, torch.int32: tl.int32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16,
       torch.int64: tl.int64, torch.uint8: tl.uint8, torch.int16: tl.int16}


def run(asm, cons, *args, out=torch.float32, pack=1, vector_bits=0):
    n = args[0].numel()
    res = torch.empty(n, dtype=out)
    grid = (triton.cdiv(n, BLOCK),)
    kw = dict(ASM=asm, CONS=cons, OUT=_TL[out], BLOCK=BLOCK, vector_bits=vector_bits)
    if len(args) == 1:
        _one[grid](args[0], res, n, PACK=pack, **kw)
    elif len(args) == 2:
        _two[grid](*args, res, n, PACK=pack, **kw)
    else:
        _three[grid](*args, res, n, **kw)
    return res


def _u32(t: torch.Tensor) -> np.ndarray:
    return t.numpy().view(np.uint32).astype(np.int64)


def _ints(n=1000, seed=0):
    g = np.random.default_rng(seed)
    return torch.from_numpy(g.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32))


# -- registers and predicates ------------------------------------------------------------

@pytest.mark.parametrize("vector_bits", WIDTHS)
def test_predicated_block(vector_bits):
    """softplus in base 2, as GPU kernels write it: the identity above a threshold, else
    log2(1 + 2^x), each path under its predicate; temporaries in declared registers."""
    asm = """{
        .reg .pred big;
        .reg .f32 t;
        setp.gt.f32 big, $1, 15.;       // the threshold as a decimal literal
        @big  mov.f32 $0, $1;
        @!big ex2.approx.f32 t, $1;
        @!big add.f32 t, t, 0f3F800000; // + 1.0
        @!big lg2.approx.f32 $0, t;
    }"""
    x = torch.linspace(-30, 40, 1000)
    got = run(asm, "=r,r", x, vector_bits=vector_bits).double()
    xd = x.double()
    want = torch.where(xd > 15, xd, torch.log2(1 + torch.exp2(xd)))
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-7)


def test_newton_refinement_of_a_reciprocal():
    """r = rcp(x); e = 1 - x r; r + r e: with a correctly rounded reciprocal, e is the rounding
    error of x r and the result is 1/x again."""
    asm = """{ .reg .f32 r, e;
        rcp.approx.ftz.f32 r, $1;
        fma.rn.f32 e, $1, r, 0fBF800000;
        neg.f32 e, e;
        fma.rn.f32 $0, r, e, r; }"""
    x = torch.randn(1000) * 100
    got = run(asm, "=f,f", x)
    torch.testing.assert_close(got, 1 / x, rtol=1.2e-7, atol=0)


def test_outputs_and_inputs_share_a_register_file():
    """A result register written, read back and overwritten; two results."""
    asm = "{ mul.f32 $0, $2, 0f40000000; add.f32 $0, $0, $2; sub.f32 $1, $0, $2; }"
    x = torch.randn(1000)
    a, b = torch.empty(1000), torch.empty(1000)
    _one_to_two[(4,)](x, a, b, 1000, ASM=asm, CONS="=f,=f,f", OUT=tl.float32, PACK=1, BLOCK=BLOCK)
    assert torch.equal(a, x * 2 + x)
    assert torch.equal(b, (x * 2 + x) - x)


def test_grid_dependency_control_is_a_no_op():
    """griddepcontrol orders dependent launches on the GPU; launches here run in order."""
    x = torch.randn(1000)
    got = run("griddepcontrol.wait; mov.b32 $0, $1;", "=r,r", x)
    assert torch.equal(got, x)


# -- integer and bitwise -----------------------------------------------------------------

def _prmt(a, b, sel):
    """PTX prmt.b32, default mode: byte k of the result is byte (sel_k & 7) of {b, a}, or
    its sign replicated when sel_k & 8."""
    both = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
    out = np.zeros_like(a, dtype=np.uint64)
    for k in range(4):
        nib = (sel >> (4 * k)) & 0xF
        byte = (both >> ((nib & 7) * 8).astype(np.uint64)) & np.uint64(0xFF)
        byte = np.where(nib & 8, np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
        out |= byte << np.uint64(8 * k)
    return out.astype(np.int64)


@pytest.mark.parametrize("sel", [0x3210, 0x7654, 0x5140, 0x0123, 0x9A8B, 0x4444])
def test_prmt_immediate(sel):
    x, y = _ints(seed=1), _ints(seed=2)
    got = run(f"prmt.b32 $0, $1, $2, {hex(sel)};", "=r,r,r", x, y, out=torch.int32)
    want = _prmt(_u32(x).astype(np.uint64), _u32(y).astype(np.uint64), np.full(1000, sel, dtype=np.uint64))
    np.testing.assert_array_equal(_u32(got), want)


def test_prmt_run_time_selector():
    x, y = _ints(seed=1), _ints(seed=2)
    sel = torch.from_numpy(np.random.default_rng(3).integers(0, 1 << 16, 1000).astype(np.int32))
    got = run("prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", x, y, sel, out=torch.int32)
    want = _prmt(_u32(x).astype(np.uint64), _u32(y).astype(np.uint64), _u32(sel).astype(np.uint64))
    np.testing.assert_array_equal(_u32(got), want)


@pytest.mark.parametrize("lut,fn", [(0xE4, lambda a, b, c: (a & c) | (b & ~c)),  # c ? a : b, bit by bit
                                    (0x96, lambda a, b, c: a ^ b ^ c),
                                    (0xE8, lambda a, b, c: (a & b) | (a & c) | (b & c)),  # majority
                                    (0x80, lambda a, b, c: a & b & c),
                                    (0x01, lambda a, b, c: ~(a | b | c))])
def test_lop3(lut, fn):
    a, b, c = _ints(seed=4), _ints(seed=5), _ints(seed=6)
    got = run(f"lop3.b32 $0, $1, $2, $3, {hex(lut)};", "=r,r,r,r", a, b, c, out=torch.int32)
    assert torch.equal(got, fn(a, b, c))


@triton.jit
def _immediates(x_ptr, out_ptr, n, ASM: tl.constexpr, CONS: tl.constexpr, A: tl.constexpr, B: tl.constexpr,
                C: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.inline_asm_elementwise(ASM, CONS, [x, A, B, C], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=offs < n)


@pytest.mark.parametrize("asm,a,b,c,fn", [
    # (x & a) | b: the truth table 0xEA (= (0xF0 & 0xCC) | 0xAA) itself an `n` operand
    ("lop3.b32 $0, $1, $2, $3, $4;", 0x000F000F, 0x64006400, 0xEA, lambda x: (x & 0x000F000F) | 0x64006400),
    ("prmt.b32 $0, $1, $2, $3;", 0, 0x1032, 0, lambda x: ((x >> 16) & 0xFFFF) | ((x & 0xFFFF) << 16)),
    ("shr.u32 $0, $1, $2;", 8, 0, 0, lambda x: (x & 0xFFFFFFFF) >> 8),
])
def test_immediate_operands(asm, a, b, c, fn):
    """`n` operands (immediates on the GPU: Triton passes the Python ints, which the GPU's
    compiler requires to be constants) read as registers holding those constants, also
    where the instruction needs an immediate (lop3's truth table, prmt's selector)."""
    x = _ints(seed=7)
    out = torch.empty_like(x)
    _immediates[(triton.cdiv(1000, BLOCK),)](x, out, 1000, ASM=asm, CONS="=r,r,n,n,n", A=a, B=b, C=c, BLOCK=BLOCK)
    np.testing.assert_array_equal(_u32(out), fn(x.numpy().astype(np.int64)) & 0xFFFFFFFF)


@triton.jit
def _nibble_pair(x_ptr, lo_ptr, hi_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    lo, hi = tl.inline_asm_elementwise(
        """{
        .reg .b32 t;
        lop3.b32 t, $2, $3, $4, $5;
        sub.f16x2 t, t, $6;
        mov.b32 {$0, $1}, t;
    }""", "=h,=h,r,n,n,n,r", [x, 0x000F000F, 0x64006400, 0xEA, 0x64006400], dtype=(tl.float16, tl.float16),
        is_pure=True, pack=1)
    tl.store(lo_ptr + offs, lo, mask=offs < n)
    tl.store(hi_ptr + offs, hi, mask=offs < n)


def test_int4_to_f16_by_exponent_bias():
    """The int4 decode of AWQ-style GEMMs: lop3 puts a nibble of each 16-bit half into the
    mantissa of fp16 1024.0 (0x6400), sub.f16x2 removes the 1024: the nibble's value."""
    x = _ints(seed=8)
    lo, hi = torch.empty(1000, dtype=torch.float16), torch.empty(1000, dtype=torch.float16)
    _nibble_pair[(triton.cdiv(1000, BLOCK),)](x, lo, hi, 1000, BLOCK=BLOCK)
    u = x.numpy().astype(np.int64) & 0xFFFFFFFF
    np.testing.assert_array_equal(lo.numpy(), (u & 0xF).astype(np.float16))
    np.testing.assert_array_equal(hi.numpy(), ((u >> 16) & 0xF).astype(np.float16))


def test_run_time_truth_table_is_refused():
    x = _ints(seed=9)
    with pytest.raises(UnsupportedError, match="truth table must be an immediate"):
        run("lop3.b32 $0, $1, $1, $1, $1;", "=r,r", x, out=torch.int32)


@pytest.mark.parametrize("mode", ["l.wrap", "r.wrap", "l.clamp", "r.clamp"])
def test_funnel_shift(mode):
    a, b = _ints(seed=7), _ints(seed=8)
    n = torch.from_numpy(np.random.default_rng(9).integers(0, 70, 1000).astype(np.int32))
    got = run(f"shf.{mode}.b32 $0, $1, $2, $3;", "=r,r,r,r", a, b, n, out=torch.int32)
    both = [(int(hi) << 32) | int(lo) for hi, lo in zip(_u32(b), _u32(a))]
    want = []
    for v, k in zip(both, n.tolist()):
        k = k & 31 if mode.endswith("wrap") else min(k, 32)
        want.append(((v << k) >> 32) & 0xFFFFFFFF if mode[0] == "l" else (v >> k) & 0xFFFFFFFF)
    np.testing.assert_array_equal(_u32(got), np.array(want))


@pytest.mark.parametrize("asm,fn", [
    ("shl.b32 $0, $1, $2;", lambda a, n: np.where(n >= 32, 0, (a << np.minimum(n, 31)) & 0xFFFFFFFF)),
    ("shr.u32 $0, $1, $2;", lambda a, n: np.where(n >= 32, 0, a >> np.minimum(n, 31))),
    ("shr.s32 $0, $1, $2;", lambda a, n: (_signed(a) >> np.minimum(n, 31)) & 0xFFFFFFFF),
])
def test_shift_past_the_width(asm, fn):
    """PTX shifts by more than the width give 0 (or the sign): LLVM's would be poison."""
    a = _ints(seed=10)
    n = torch.from_numpy(np.random.default_rng(11).integers(0, 64, 1000).astype(np.int32))
    got = run(asm, "=r,r,r", a, n, out=torch.int32)
    np.testing.assert_array_equal(_u32(got), fn(_u32(a), n.numpy().astype(np.int64)))


def _u64(u):
    return u.astype(np.uint64)  # products of two u32 wrap int64, not uint64


def _signed(u):
    return np.where(u >= 2**31, u - 2**32, u)


@pytest.mark.parametrize("asm,fn", [
    ("mul.hi.u32 $0, $1, $2;", lambda a, b: (_u64(a) * _u64(b)) >> np.uint64(32)),
    ("mul.hi.s32 $0, $1, $2;", lambda a, b: ((_signed(a) * _signed(b)) >> 32) & 0xFFFFFFFF),
    ("mul.lo.s32 $0, $1, $2;", lambda a, b: (_u64(a) * _u64(b)) & np.uint64(0xFFFFFFFF)),
    ("mad.lo.u32 $0, $1, $2, $1;", lambda a, b: (_u64(a) * _u64(b) + _u64(a)) & np.uint64(0xFFFFFFFF)),
    ("{ .reg .pred p; setp.lt.u32 p, $1, $2; selp.b32 $0, $1, $2, p; }", np.minimum),
    ("{ .reg .pred p; setp.lt.s32 p, $1, $2; selp.b32 $0, $1, $2, p; }",
     lambda a, b: np.where(_signed(a) < _signed(b), a, b)),
    ("max.s32 $0, $1, $2;", lambda a, b: np.where(_signed(a) > _signed(b), a, b)),
])
def test_integer_arithmetic(asm, fn):
    a, b = _ints(seed=12), _ints(seed=13)
    got = run(asm, "=r,r,r", a, b, out=torch.int32)
    np.testing.assert_array_equal(_u32(got), fn(_u32(a), _u32(b)).astype(np.int64))


def test_population_count_and_leading_zeros():
    a = _ints(seed=20)
    a[:3] = torch.tensor([0, -1, 1], dtype=torch.int32)
    u = _u32(a)
    got = run("popc.b32 $0, $1;", "=r,r", a, out=torch.int32)
    np.testing.assert_array_equal(got.numpy(), [bin(int(v)).count("1") for v in u])
    got = run("clz.b32 $0, $1;", "=r,r", a, out=torch.int32)
    np.testing.assert_array_equal(got.numpy(), [32 - int(v).bit_length() for v in u])


def test_wide_product_into_a_64_bit_result():
    a, b = _ints(seed=14), _ints(seed=15)
    got = run("mul.wide.s32 $0, $1, $2;", "=l,r,r", a, b, out=torch.int64)
    assert torch.equal(got, a.long() * b.long())


# -- float rules -------------------------------------------------------------------------

def _specials():
    v = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, float("inf"), float("-inf"), float("nan"), 1e-40, -3e38]
    g = np.random.default_rng(16)
    x = np.array([a for a in v for _ in v] + list(g.standard_normal(400)), dtype=np.float32)
    y = np.array([b for _ in v for b in v] + list(g.standard_normal(400)), dtype=np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


def _bits(t):
    return t.numpy().view(np.uint32)


def _ptx_min(a, b, nan=False):
    """PTX min.f32: a NaN operand gives the other (.NaN: a NaN); -0 is below +0."""
    r = np.where(a < b, a, b)
    both_zero = (a == 0) & (b == 0)
    r = np.where(both_zero, np.where(np.signbit(a) | np.signbit(b), np.float32(-0.0), np.float32(0.0)), r)
    if nan:
        return np.where(np.isnan(a) | np.isnan(b), np.float32("nan"), r)
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, r))


def test_min_max_rules():
    x, y = _specials()
    a, b = x.numpy(), y.numpy()
    got = run("min.f32 $0, $1, $2;", "=f,f,f", x, y).numpy()
    np.testing.assert_array_equal(got, _ptx_min(a, b))
    assert np.array_equal(np.signbit(got), np.signbit(_ptx_min(a, b)))
    got = run("max.NaN.f32 $0, $1, $2;", "=f,f,f", x, y).numpy()
    want = -_ptx_min(-a, -b, nan=True)
    np.testing.assert_array_equal(got, want)
    got = run("min.xorsign.abs.f32 $0, $1, $2;", "=f,f,f", x, y).numpy()
    mag = _ptx_min(np.abs(a), np.abs(b))
    want = np.where(np.signbit(a) ^ np.signbit(b), -mag, mag)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got)[~np.isnan(want)], np.signbit(want)[~np.isnan(want)])


def test_round_to_integer_saturates():
    x = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 3e9, -3e9, float("inf"), float("-inf"), float("nan"),
                      2147483520.0, -2147483648.0] * 10)
    got = run("cvt.rni.s32.f32 $0, $1;", "=r,f", x, out=torch.int32)
    xd = x.double().numpy()
    want = np.where(np.isnan(xd), 0, np.clip(np.round(np.nan_to_num(xd, nan=0.0, posinf=3e9, neginf=-3e9)),
                                             -2**31, 2**31 - 1))
    np.testing.assert_array_equal(got.numpy(), want)


def test_half_precision_pairs():
    """f16x2 arithmetic on packed halves: each half computed and rounded on its own."""
    torch.manual_seed(17)
    x, y = torch.randn(1000, dtype=torch.float16), torch.randn(1000, dtype=torch.float16)
    # Two fp16 per 32-bit register with pack = 2.
    got = run("fma.rn.f16x2 $0, $1, $2, $1;", "=r,r,r", x, y, out=torch.float16, pack=2)
    want = (x.double() * y.double() + x.double()).half()
    assert torch.equal(got, want)
    got = run("mul.rn.bf16x2 $0, $1, $2;", "=r,r,r", x.bfloat16(), y.bfloat16(), out=torch.bfloat16, pack=2)
    assert torch.equal(got, (x.bfloat16().double() * y.bfloat16().double()).bfloat16())


def test_half_precision_approximations():
    """ex2/tanh.approx on f16 pairs and bf16: within one ulp of the half type's rounding of the
    exact value."""
    torch.manual_seed(21)
    x = (torch.randn(1000) * 4).half()
    got = run("ex2.approx.f16x2 $0, $1;", "=r,r", x, out=torch.float16, pack=2)
    torch.testing.assert_close(got.double(), torch.exp2(x.double()), rtol=2**-10, atol=0)
    got = run("tanh.approx.f16x2 $0, $1;", "=r,r", x, out=torch.float16, pack=2)
    torch.testing.assert_close(got.double(), torch.tanh(x.double()), rtol=2**-10, atol=2**-24)
    xb = (torch.randn(1000) * 60).bfloat16()
    got = run("ex2.approx.ftz.bf16 $0, $1;", "=h,h", xb, out=torch.bfloat16)
    want = torch.exp2(xb.double())
    want = torch.where(want < 2.0**-126, 0.0, want)  # .ftz: subnormal results are zero
    torch.testing.assert_close(got.double(), want.bfloat16().double(), rtol=2**-7, atol=0)  # inf past 2^128


# -- conversions -------------------------------------------------------------------------

def _quant_inputs():
    g = np.random.default_rng(18)
    x = np.concatenate([g.standard_normal(800) * 100, [0.0, -0.0, 448.0, 449.0, 500.0, -1e6, 1e-9, -1e-9,
                                                        float("inf"), float("-inf"), 57344.0, 70000.0]])
    return torch.from_numpy(x.astype(np.float32))


@pytest.mark.parametrize("fmt,dtype,limit", [("e4m3x2", torch.float8_e4m3fn, 448.0),
                                             ("e5m2x2", torch.float8_e5m2, 57344.0)])
def test_fp8_pair(fmt, dtype, limit):
    """Two fp32 to one 16-bit pair (a in the high byte), saturating, then widened."""
    x = _quant_inputs()
    y = x.flip(0)
    asm = f"{{ .reg .b16 h; cvt.rn.satfinite.{fmt}.f32 h, $1, $2; cvt.u32.u16 $0, h; }}"
    got = _u32(run(asm, "=r,f,f", x, y, out=torch.int32))

    def code(v):
        return v.clamp(-limit, limit).to(dtype).view(torch.uint8).numpy().astype(np.int64)
    np.testing.assert_array_equal(got, code(x) << 8 | code(y))


def _e2m1_code(v: float) -> int:
    """The e2m1 code of v: nearest of 0, 0.5, 1, 1.5, 2, 3, 4, 6, ties to the even code."""
    grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    mag = min(abs(v), 6.0)
    best = min(range(8), key=lambda c: (abs(grid[c] - mag), c % 2))
    return best | (8 if np.signbit(v) else 0)


def test_fp4_pair():
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    vals = ties + [-t for t in ties] + [0.0, -0.0, 0.1, 6.0, 7.0, 100.0, -100.0, float("inf"), float("-inf")]
    g = np.random.default_rng(19)
    x = torch.tensor(vals + list(g.standard_normal(500) * 3), dtype=torch.float32)
    y = x.roll(1)
    asm = "{ .reg .b8 q; cvt.rn.satfinite.e2m1x2.f32 q, $1, $2; cvt.u32.u8 $0, q; }"
    got = _u32(run(asm, "=r,f,f", x, y, out=torch.int32))
    want = [_e2m1_code(a) << 4 | _e2m1_code(b) for a, b in zip(x.tolist(), y.tolist())]
    np.testing.assert_array_equal(got, np.array(want))


def test_decode_fp8_and_fp4_pairs():
    codes = torch.arange(1 << 16, dtype=torch.int32)
    # e4m3x2 -> f16x2: each byte decoded; the low byte into the low half
    got = _u32(run("cvt.rn.f16x2.e4m3x2 $0, $1;", "=r,h", codes.to(torch.int16), out=torch.int32))
    lo = (codes & 0xFF).to(torch.uint8).view(torch.float8_e4m3fn).half().view(torch.int16).numpy()
    hi = (codes >> 8).to(torch.uint8).view(torch.float8_e4m3fn).half().view(torch.int16).numpy()
    want = (hi.astype(np.int64) & 0xFFFF) << 16 | (lo.astype(np.int64) & 0xFFFF)
    finite = ~(torch.isnan(lo_view := (codes & 0xFF).to(torch.uint8).view(torch.float8_e4m3fn).float())
               | torch.isnan((codes >> 8).to(torch.uint8).view(torch.float8_e4m3fn).float())).numpy()
    np.testing.assert_array_equal(got[finite], want[finite])
    assert lo_view.numel() == 1 << 16
    # e2m1x2 -> bf16x2
    grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    b = torch.arange(256, dtype=torch.int32)
    got = _u32(run("{ .reg .b8 q; cvt.u8.u32 q, $1; cvt.rn.bf16x2.e2m1x2 $0, q; }", "=r,r", b, out=torch.int32))

    def value(c):
        return (-1.0 if c & 8 else 1.0) * grid[c & 7]
    halves = [[value(c & 0xF), value(c >> 4)] for c in range(256)]
    bits = torch.tensor(halves, dtype=torch.bfloat16).view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    np.testing.assert_array_equal(got, bits[:, 1] << 16 | bits[:, 0])


def test_f16_pair_from_f32():
    x = torch.randn(1000) * 1000
    y = torch.randn(1000)
    got = _u32(run("cvt.rn.f16x2.f32 $0, $1, $2;", "=r,f,f", x, y, out=torch.int32))
    hx = x.half().view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    hy = y.half().view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    np.testing.assert_array_equal(got, hx << 16 | hy)


# -- pack > 1 ------------------------------------------------------------------------------

@triton.jit
def _bytes_with_constant(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    lut = tl.full((BLOCK,), 0xE4, tl.int32)   # c ? a : b, bit by bit; one register per element
    fill = tl.full((BLOCK,), 0x55, tl.int8)   # four per register: 0x55555555
    masks = tl.full((BLOCK,), 0x0F, tl.int8)
    y = tl.inline_asm_elementwise("lop3.b32 $0, $1, $2, $3, $4;", "=r,r,r,r,n,n,n,n",
                                  [x, fill, masks, lut], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(out_ptr + offs, y, mask=offs < n)


def test_constant_operands_with_pack():
    """pack = 4 with constant operands: inside the body they stay constants (lop3's truth
    table, an `n` operand per instance's four i32 elements), and a constant of bytes is
    packed like any operand."""
    x = torch.randint(-128, 128, (1000,), dtype=torch.int8)
    out = torch.empty_like(x)
    _bytes_with_constant[(triton.cdiv(1000, BLOCK),)](x, out, 1000, BLOCK=BLOCK)
    assert torch.equal(out, (x & 0x0F) | 0x50)  # low nibble from x, high from 0x55


@pytest.mark.parametrize("vector_bits", WIDTHS)
def test_four_bytes_in_one_register(vector_bits):
    """pack = 4 over uint8: element k is byte k of the input register and half k % 2 of
    output register k // 2."""
    asm = """{
        .reg .b8 b<4>;
        .reg .b16 h<4>;
        mov.b32 {b0, b1, b2, b3}, $2;
        cvt.rn.f16.u8 h0, b0;
        cvt.rn.f16.u8 h1, b1;
        cvt.rn.f16.u8 h2, b2;
        cvt.rn.f16.u8 h3, b3;
        mov.b32 $0, {h0, h1};
        mov.b32 $1, {h2, h3};
    }"""
    x = torch.randint(0, 256, (1024,), dtype=torch.uint8)
    got = run(asm, "=r,=r,r", x, out=torch.float16, pack=4, vector_bits=vector_bits)
    assert torch.equal(got, x.half())


def test_pack_two_floats():
    """pack = 2 over f32: two registers per operand, element 0 first."""
    x = torch.randn(512)
    asm = "{ add.f32 $0, $2, $3; sub.f32 $1, $2, $3; }"
    got = run(asm, "=f,=f,f,f", x, out=torch.float32, pack=2)
    pairs = x.view(-1, 2)
    want = torch.stack([pairs[:, 0] + pairs[:, 1], pairs[:, 0] - pairs[:, 1]], dim=1).flatten()
    assert torch.equal(got, want)


# -- memory ------------------------------------------------------------------------------

@triton.jit
def _ldst(x_ptr, y_ptr, ASM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.inline_asm_elementwise(ASM, "=r,l,l", [x_ptr + 2 * offs, y_ptr + 2 * offs], dtype=tl.int32, is_pure=False,
                              pack=1)


def test_load_and_store_through_pointer_operands():
    """ld/st become tt.load/tt.store at the pointer plus the byte offset; a .v2 access is two
    consecutive elements; cache hints are ignored."""
    x = torch.randint(-1000, 1000, (1024,), dtype=torch.int32)
    y = torch.zeros(1024, dtype=torch.int32)
    asm = """{ .reg .b32 a, b;
        ld.global.nc.L1::no_allocate.v2.b32 {a, b}, [$1];
        sub.s32 a, b, a;
        st.global.cs.b32 [$2 + 4], a; }"""
    _ldst[(2,)](x, y, ASM=asm, BLOCK=256)
    want = torch.zeros(1024, dtype=torch.int32)
    want[1::2] = x[1::2] - x[0::2]
    assert torch.equal(y, want)


def test_predicated_store_and_load_touch_no_memory_when_false():
    """`@p st` writes only where p holds; `@!p ld` from an address far out of bounds reads
    nothing where its guard is false (here everywhere) and leaves the register as it was."""
    x = torch.randint(-1000, 1000, (1024,), dtype=torch.int32)
    y = torch.full((1024,), 7, dtype=torch.int32)
    asm = """{ .reg .b32 a; .reg .pred p, q;
        ld.global.b32 a, [$1];
        setp.gt.s32 p, a, 0;
        setp.gt.s32 q, a, -5000;
        @!q ld.global.b32 a, [$1 + 1000000000];
        @p st.global.b32 [$2], a; }"""
    _ldst[(2,)](x, y, ASM=asm, BLOCK=256)
    want = torch.full((1024,), 7, dtype=torch.int32)
    want[0::2] = torch.where(x[0::2] > 0, x[0::2], 7)
    assert torch.equal(y, want)


def test_out_of_bounds_asm_load_is_reported_in_bounds_check_mode():
    x, y = torch.zeros(1024, dtype=torch.int32), torch.zeros(1024, dtype=torch.int32)
    asm = "{ ld.global.b32 $0, [$1 + 8192]; st.global.b32 [$2], $0; }"
    with pytest.raises(RuntimeError, match="out-of-bounds load in kernel ._ldst.*argument .x_ptr."):
        _ldst[(2,)](x, y, ASM=asm, BLOCK=256, bounds_check=True)


# -- refused -----------------------------------------------------------------------------

@pytest.mark.parametrize("asm,named", [
    ("shfl.sync.bfly.b32 $0, $1, 1, 31, 0xffffffff;", "shfl.sync.bfly.b32"),
    ("{ .reg .pred p; setp.eq.s32 p, $1, 0; @p bra skip; mov.b32 $0, $1; skip: }", "label 'skip:'"),
    ("{ .reg .pred p; setp.eq.s32 p, $1, 0; @p bra.uni out; mov.b32 $0, $1; }", "bra.uni"),
    ("mov.u32 $0, %tid.x;", "special register '%tid.x'"),
    ("ld.shared.b32 $0, [$1];", "ld.shared.b32"),
    ("ld.acquire.gpu.global.b32 $0, [$1];", "ld.acquire.gpu.global.b32"),
    ("ld.global.b32 $0, [$1];", "not a pointer operand"),
    ("cvt.rs.f16x2.f32 $0, $1, $1, $1;", "stochastic rounding"),
    ("v_mul_f32 $0, $1, $1", "v_mul_f32"),
])
def test_refused_with_the_instruction_named(asm, named):
    x = torch.randn(300)
    with pytest.raises(UnsupportedError) as info:
        run(asm, "=r,r", x)
    msg = str(info.value)
    assert named in msg and "tt.elementwise_inline_asm" in msg and "'_one'" in msg
