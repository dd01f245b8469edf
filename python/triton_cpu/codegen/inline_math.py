"""Math functions emitted inline as LLVM IR instead of called: fp32 `exp`, `exp2`, `erf`,
`tanh`.

They dominate softmax, attention, sigmoid/SiLU, cross-entropy and GELU (exact or tanh),
where a call into a vector library costs more than the function: the call clobbers every vector
register (the loop's live values are spilled around it) and is opaque to LLVM's scheduler
and unroller; SLEEF 3.5's erff_u10 also runs at a fifth of libmvec's speed. Inline, the
loop keeps its values in registers and interleaves the polynomial with the loads and
reductions around it. The same code serves vectors of any width and scalars, so a tail
element gets the same result as a vector lane. math_lib.MathLib uses these in the "sleef"
and "libmvec" modes; "scalar" (the libm reference) calls libm.

exp and exp2:
  * clamp the argument to where the result is neither 0 nor infinity for every smaller /
    larger argument (NaN passes through the clamp, and through the arithmetic after it);
  * split x = q*ln2 + s (exp; exp2: x = q + s) with q an integer and |s| <= ln2/2 (1/2),
    q rounded by adding 1.5 * 2^23 + 254 (in the FMA that multiplies by log2 e), whose
    float pattern then holds q + 254 as an integer too (no rint, no conversion):
    ln2 is hi + lo with hi of 15 significant bits, so q*hi is exact for the |q| <= 151
    the clamp allows and x - q*hi is exact too, with or without FMA;
  * e^s (2^s) by a polynomial fitted for the smallest maximum relative error of the
    function (scripts/fit_math_polys.py derives all coefficients here);
  * multiply by 2^q built from exponent bits, in two halves (2^(q>>1) * 2^(q - (q>>1))) so
    that results down into the subnormals are rounded once and q = 128 does not overflow
    the exponent field early; both exponent fields come from that pattern by three integer
    operations (four more took q out of it, and added the bias to each half);
  * but first, one branch per vector: when every lane has |x| <= 86.5 (exp; exp2: 125),
    |q| <= 125 and e^s is in [0.7, 1.5), so 2^q * e^s is a normal float: that path skips
    the clamp and adds q to e^s's exponent field (a shift and an integer add, exact) instead
    of the two multiplications. A vector with any other lane (an overflow, a subnormal
    result, a masked-off -inf, a NaN) takes the full path. Both give the same bits where
    the fast one applies: the same q (the two rounders differ by 254, an even integer, so
    even ties round alike), the same e^s, and both scalings are exact there. The fast path
    is 9 operations on the FMA ports per vector instead of 13, plus 2 integer ones instead
    of 4 (a softmax row's exp loop: 25% less time, one thread, rows in L1).
erf: three polynomial pieces selected per lane (erf_f32), and, like exp, one branch per
vector: when every lane has |x| < 2 the third piece is not computed (about 25 operations on
the FMA ports per vector instead of 38; the same bits, checked on every third fp32 input at
both vector widths). An exact GELU over 4M samples, 2 threads: 1.27 -> 1.03 ms for N(0, 1)
inputs (7% of its vectors take the full path); 1.30 -> 1.33 ms for N(0, 9) inputs, where
nearly all do. erf alone on N(0, 1) arguments, half of its vectors fast in no pattern (the
branch mispredicted often), one thread in L1: 0.60-0.62 -> 0.58-0.59 ns per element. The
same branch in tanh (every lane below 1.875: no exp, no division) made a tanh-GELU slower,
1.62-1.67 -> 1.77-2.37 ms for N(0, 1) inputs: not done.
tanh: two polynomial pieces and one through exp, selected per lane (tanh_f32; SLEEF 3.5's
tanhf_u10 ran at 0.37 elements per ns on one Zen 3 thread, this at 0.80: a tanh-GELU over 4M
elements, 2 threads, 7.0 -> 3.4 ms).

Measured (python -m triton_cpu.tools.math_accuracy; emulated over every fp32 input for
erf, run over every fp32 input from 0 to 10 for tanh): at most 0.87 ulp for exp, 0.88
exp2, 0.81 erf, 0.871 tanh, like SLEEF's u10 variants.
"""
import llvmlite.ir as ir

from triton_cpu.codegen import cgutils as cg


def _hex(*values):
    return [float.fromhex(v) for v in values]


_LN2_HI = float.fromhex("0x1.62e4p-1")       # ln 2 rounded to 15 significant bits
_LN2_LO = float.fromhex("0x1.7f7d1cp-20")    # fp32(ln 2 - _LN2_HI)
_LOG2E = float.fromhex("0x1.715476p0")       # fp32(1 / ln 2)

# e^s = 1 + s + s^2 (c0 + c1 s + ... + c4 s^4) on [-ln2/2, ln2/2].
_EXP_POLY = _hex(
    "0x1.fffffcp-2", "0x1.555494p-3", "0x1.5558bep-5", "0x1.123856p-7", "0x1.6a3d04p-10")
# 2^s = 1 + s (c0 + c1 s + ... + c5 s^5) on [-1/2, 1/2].
_EXP2_POLY = _hex(
    "0x1.62e430p-1", "0x1.ebfbdcp-3", "0x1.c6af7cp-5", "0x1.3b2de0p-7", "0x1.5f082ep-10", "0x1.416b52p-13")


def _fmuladd(b, x, y, z):
    return cg.call_intrinsic(b, "llvm.fmuladd", [x.type], x.type, [x, y, z])


def _horner(b, s, coeffs):
    """c0 + c1 s + ... + cn s^n."""
    t = s.type
    acc = cg.const(t, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = _fmuladd(b, acc, s, cg.const(t, c))
    return acc


def _clamp(b, x, lo, hi):
    """x clamped to [lo, hi]; NaN stays NaN (both compares are false)."""
    t = x.type
    x = b.select(b.fcmp_ordered("<", x, cg.const(t, lo)), cg.const(t, lo), x)
    return b.select(b.fcmp_ordered(">", x, cg.const(t, hi)), cg.const(t, hi), x)


# 1.5 * 2^23 + 254: a float v + _ROUNDER with |v| < 2^22 is rounded to an integer n (to
# nearest even), and its bit pattern is 0x4B400000 + 254 + n: the low bits hold n + 254, the
# two exponent fields of _scale_by_pow2 added up, so no integer subtraction recovers n.
_ROUNDER = 12582912.0 + 254


# 1.5 * 2^23 alone, for the fast path: the pattern's low 9 bits are n itself (mod 2^9).
_ROUNDER_FAST = 12582912.0


def _split_rounded(b, big, rounder):
    """(n as a float, the bit pattern of big) from big = v + rounder (added by the caller,
    fused with the multiply that computes v where there is one): instead of rint and
    fptosi, whose result is poison for a NaN lane, which forced a select on the result."""
    t = big.type
    n = b.fsub(big, cg.const(t, rounder))
    return n, b.bitcast(big, cg.with_scalar(t, cg.I32))


def _scale_by_pow2(b, r, bits):
    """r * 2^q for the integer q in [-151, 129] whose _ROUNDER pattern is `bits`, rounded
    once: two multiplications by normal powers of two, 2^(q>>1) and 2^(q - (q>>1)), so that
    results down into the subnormals are rounded once and q = 128 does not overflow the
    exponent field early. With T = q + 254 (bits' low 9 bits; the pattern's other bits are
    at 22 and up, and a shift by 23 drops them), (q>>1) + 127 = T>>1 and q - (q>>1) + 127 =
    T - (T>>1): the exponent fields are (bits>>1)<<23 and (bits<<23) - that, in [51, 192].
    A NaN r stays NaN, whatever q is."""
    it = bits.type
    p1 = b.shl(b.lshr(bits, cg.const(it, 1)), cg.const(it, 23))
    p2 = b.sub(b.shl(bits, cg.const(it, 23)), p1)
    return b.fmul(b.fmul(r, b.bitcast(p1, r.type)), b.bitcast(p2, r.type))


def _scale_normal(b, r, bits):
    """r * 2^q for r in [0.5, 2) and the integer q whose _ROUNDER_FAST pattern is `bits`, when
    the result is a normal float: q added to r's exponent field (q << 23 keeps q's low 9
    bits, two's complement, and the add wraps alike)."""
    it = bits.type
    return b.bitcast(b.add(b.bitcast(r, it), b.shl(bits, cg.const(it, 23))), r.type)


def _fast_or_full(b, x, bound, emit):
    """emit(fast=True) when every lane of x has |x| <= bound, else emit(fast=False): one
    branch per vector (a compare, a mask reduction), weighted so that the fast path is the
    straight line."""
    t = x.type
    fabs = cg.call_intrinsic(b, "llvm.fabs", [t], t, [x])
    ok = b.fcmp_ordered("<=", fabs, cg.const(t, bound))  # false for NaN
    if isinstance(t, ir.VectorType):
        ok = cg.every_lane(b, ok)
    return cg.branch_value(b, ok, lambda: emit(True), lambda: emit(False), weights=(1 << 20, 1),
                           names=("fast", "full", "done"))


# |x| up to these keeps |q| <= 125 (exp: q = round(x log2 e)).
_EXP_FAST_BOUND = 86.5
_EXP2_FAST_BOUND = 125.0


def exp_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _fast_or_full(b, x, _EXP_FAST_BOUND, lambda fast: _exp_f32(b, x, fast))


def _exp_f32(b, x, fast):
    t = x.type
    # e^x is 0 below -103.97 (half the smallest subnormal) and infinite above 88.73.
    xc = x if fast else _clamp(b, x, -104.0, 89.0)
    rounder = _ROUNDER_FAST if fast else _ROUNDER
    q, bits = _split_rounded(b, _fmuladd(b, xc, cg.const(t, _LOG2E), cg.const(t, rounder)), rounder)
    # s = s_hi + c exactly, with s_hi exact and |c| < 2^-12: the polynomial's argument is s
    # rounded, but the linear term keeps both parts (e^s = 1 + s_hi + (c + s^2 P(s))), so
    # the rounding of s costs nothing and the result is rounded about 0.75 ulp at most.
    s_hi = _fmuladd(b, q, cg.const(t, -_LN2_HI), xc)
    c = b.fmul(q, cg.const(t, -_LN2_LO))
    s = b.fadd(s_hi, c)
    tail = _fmuladd(b, b.fmul(s, s), _horner(b, s, _EXP_POLY), c)
    es = b.fadd(b.fadd(s_hi, tail), cg.const(t, 1.0))
    return _scale_normal(b, es, bits) if fast else _scale_by_pow2(b, es, bits)


def exp2_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _fast_or_full(b, x, _EXP2_FAST_BOUND, lambda fast: _exp2_f32(b, x, fast))


def _exp2_f32(b, x, fast):
    t = x.type
    # 2^x is 0 from -150 down (ties to even) and infinite from 128 up.
    xc = x if fast else _clamp(b, x, -151.0, 129.0)
    rounder = _ROUNDER_FAST if fast else _ROUNDER
    q, bits = _split_rounded(b, b.fadd(xc, cg.const(t, rounder)), rounder)
    s = b.fsub(xc, q)  # exact
    es = _fmuladd(b, s, _horner(b, s, _EXP2_POLY), cg.const(t, 1.0))
    return _scale_normal(b, es, bits) if fast else _scale_by_pow2(b, es, bits)


# erf in three pieces, each a constant plus a polynomial whose value is small beside it, so
# that the polynomial's rounding errors stay far below the result's ulp:
# erf(x) = x + x P(x^2) on [0, 0.84] (2/sqrt(pi) split as 1 + c0: its rounding would bias
# small arguments);
_ERF_SMALL = _hex(
    "0x1.06eba8p-3", "-0x1.81273ep-2", "0x1.ce2c20p-4", "-0x1.b7c852p-6", "0x1.5011fap-8", "-0x1.585daap-11",
    "-0x1.5dad48p-14", "0x1.225ff6p-14")
# erf(x) = erf(1.25) + P(x - 1.25) on [0.84, 2];
_ERF_MID_AT, _ERF_MID_VALUE = 1.25, float.fromhex("0x1.d8865ep-1")
_ERF_MID = _hex(
    "-0x1.cd04f2p-27", "0x1.e46534p-3", "-0x1.2ebf2ep-2", "0x1.571bfcp-3", "-0x1.93fd56p-8", "-0x1.82393cp-5",
    "0x1.5d49b2p-6", "0x1.bc5888p-9", "-0x1.6b1a84p-8", "0x1.67eddep-10")
# erf(x) = 1 + P(x - 3) on [2, 4] (P = -erfc); from 3.92 the result rounds to 1.
_ERF_LARGE_AT = 3.0
_ERF_LARGE = _hex(
    "-0x1.72a442p-16", "0x1.23d250p-13", "-0x1.b5f4f4p-12", "0x1.9ecbcep-11", "-0x1.120860p-10", "0x1.076a4cp-10",
    "-0x1.80f2fcp-11", "0x1.b61624p-12", "-0x1.29c9b0p-13", "-0x1.d89690p-17", "0x1.78e804p-16")


def erf_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _fast_or_full(b, x, _ERF_FAST_BOUND, lambda fast: _erf_f32(b, x, fast))


# Below 2 the large piece is never selected.
_ERF_FAST_BOUND = float.fromhex("0x1.fffffep0")


def _erf_f32(b, x, fast):
    """The pieces evaluated for every lane and one selected (no branch per lane), on |x|
    clamped to 4, the sign copied back; NaN stays NaN through the clamp and the
    polynomials. The fast path (every lane below 2: no clamp, no large piece) selects
    what the full one would, so both give the same bits."""
    t = x.type
    ax = cg.call_intrinsic(b, "llvm.fabs", [t], t, [x])
    if not fast:
        ax = _clamp(b, ax, 0.0, 4.0)
    small = _fmuladd(b, ax, _horner(b, b.fmul(ax, ax), _ERF_SMALL), ax)
    r = b.fadd(cg.const(t, _ERF_MID_VALUE), _horner(b, b.fsub(ax, cg.const(t, _ERF_MID_AT)), _ERF_MID))
    if not fast:
        large = b.fadd(cg.const(t, 1.0), _horner(b, b.fsub(ax, cg.const(t, _ERF_LARGE_AT)), _ERF_LARGE))
        r = b.select(b.fcmp_ordered("<", ax, cg.const(t, 2.0)), r, large)
    r = b.select(b.fcmp_ordered("<", ax, cg.const(t, 0.84)), small, r)
    return cg.call_intrinsic(b, "llvm.copysign", [t], t, [r, x])


# tanh below 0.75: x + x^3 P(x^2);
_TANH_SMALL = _hex(
    "-0x1.55554ap-2", "0x1.110ddap-3", "-0x1.b98108p-5", "0x1.5f9082p-6", "-0x1.f662fep-8", "0x1.c89750p-10")
# from 0.75 to 1.875: tanh(1.25) + P(x - 1.25), |P| < 0.22;
_TANH_MID_AT, _TANH_MID_VALUE = 1.25, float.fromhex("0x1.b2523cp-1")
_TANH_MID = _hex(
    "-0x1.6c8e1ep-27", "0x1.1f250ep-2", "-0x1.e728eap-3", "0x1.bba81ep-4", "-0x1.9cca94p-7", "-0x1.3b5648p-6",
    "0x1.f5321ep-7", "-0x1.215a58p-8", "-0x1.630362p-10", "0x1.52789cp-10")
# and from 1.875 on: 1 - 2z / (1 + z) with z = e^(-2x).
_TANH_SMALL_END, _TANH_MID_END = 0.75, 1.875


def tanh_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """tanh on |x|, the sign copied back, in three pieces evaluated for every lane and one
    selected (like erf_f32). From 1.875, d = 2z / (1 + z) <= 0.046 with z = e^(-2|x|) from
    the inline exp (within 0.87 ulp): d's relative error, about 2.3e-7 with the two
    roundings, is under 0.2 ulp of the result 1 - d, which is rounded once more. Below, the
    two polynomials are each a constant (x, tanh(1.25)) plus a smaller term, like erf's.
    |x| - 1.25 is exact on the middle piece (Sterbenz). NaN takes the last piece and stays
    NaN; +-inf gives z = 0 and +-1; +-0 and subnormals come back unchanged from the first."""
    t = x.type
    ax = cg.call_intrinsic(b, "llvm.fabs", [t], t, [x])
    x2 = b.fmul(ax, ax)
    small = _fmuladd(b, ax, b.fmul(x2, _horner(b, x2, _TANH_SMALL)), ax)
    mid = b.fadd(cg.const(t, _TANH_MID_VALUE), _horner(b, b.fsub(ax, cg.const(t, _TANH_MID_AT)), _TANH_MID))
    z = exp_f32(b, b.fmul(ax, cg.const(t, -2.0)))
    d = b.fdiv(b.fadd(z, z), b.fadd(z, cg.const(t, 1.0)))
    large = b.fsub(cg.const(t, 1.0), d)
    r = b.select(b.fcmp_ordered("<", ax, cg.const(t, _TANH_MID_END)), mid, large)
    r = b.select(b.fcmp_ordered("<", ax, cg.const(t, _TANH_SMALL_END)), small, r)
    return cg.call_intrinsic(b, "llvm.copysign", [t], t, [r, x])


# libm name (double variant) -> {element type: emitter}.
INLINE = {"exp": {cg.F32: exp_f32}, "exp2": {cg.F32: exp2_f32}, "erf": {cg.F32: erf_f32},
          "tanh": {cg.F32: tanh_f32}}


def emitter(library: str, base: str, elem: ir.Type):
    """The inline emitter for `base` on `elem` under the math library `library`, or None:
    every mode but "scalar" (libm, the reference) inlines what INLINE has."""
    return INLINE.get(base, {}).get(elem) if library != "scalar" else None
