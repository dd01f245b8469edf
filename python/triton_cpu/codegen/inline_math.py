"""Math functions emitted inline as LLVM IR instead of called: fp32 `exp` and `exp2`.

They dominate softmax, attention, sigmoid/SiLU and cross-entropy, and a call into a vector
library costs there more than the function itself: the call clobbers every vector register
(the loop's live values are spilled around it), it is opaque to LLVM's scheduler and
unroller, and SLEEF 3.5's `expf_u10` measured at about half the throughput of this code.
Emitted inline, the loop keeps its values in registers and interleaves the polynomial
with the loads and reductions around it.

Both use the same scheme, at any vector width (and for scalars, so that a tail element
gets the same result as a vector lane):
  * clamp the argument to where the result is neither 0 nor infinity for every smaller /
    larger argument (NaN passes through the clamp and is returned as is at the end);
  * split x = q*ln2 + s (exp; exp2: x = q + s) with q an integer and |s| <= ln2/2 (1/2):
    ln2 is written as hi + lo with hi of 15 significant bits, so q*hi is exact for the
    |q| <= 151 the clamp allows and x - q*hi is exact too, with or without FMA;
  * e^s (2^s) by a polynomial fitted for the smallest maximum relative error of the
    function over the interval (scripts/fit_math_polys.py derives the coefficients; the
    rounded polynomial's error is 2^-28.3, far below the final rounding);
  * multiply by 2^q built from exponent bits, in two halves (2^(q>>1) * 2^(q - (q>>1))) so
    that results down into the subnormals are rounded once and q = 128 does not overflow
    the exponent field early.
Measured error (python -m triton_cpu.tools.math_accuracy): at most 1 ulp over the whole
domain, like SLEEF's u10 variants.
"""
import llvmlite.ir as ir

from triton_cpu.codegen import cgutils as cg

# libm name (double variant) -> emitter, for the element types it supports.
_LN2_HI = float.fromhex("0x1.62e4p-1")       # ln 2 rounded to 15 significant bits
_LN2_LO = float.fromhex("0x1.7f7d1cp-20")    # fp32(ln 2 - _LN2_HI)
_LOG2E = float.fromhex("0x1.715476p0")       # fp32(1 / ln 2)

# e^s = 1 + s + s^2 (c0 + c1 s + ... + c4 s^4) on [-ln2/2, ln2/2].
_EXP_POLY = [float.fromhex(h) for h in (
    "0x1.fffffcp-2", "0x1.555492p-3", "0x1.5558acp-5", "0x1.12397cp-7", "0x1.6a5198p-10")]
# 2^s = 1 + s (c0 + c1 s + ... + c5 s^5) on [-1/2, 1/2].
_EXP2_POLY = [float.fromhex(h) for h in (
    "0x1.62e430p-1", "0x1.ebfbdcp-3", "0x1.c6af7ap-5", "0x1.3b2dd2p-7", "0x1.5f0948p-10", "0x1.417a9cp-13")]


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


def _scale_by_pow2(b, r, q):
    """r * 2^q for the integer-valued float q in [-151, 129], rounded once."""
    it = cg.with_scalar(r.type, cg.I32)
    qi = b.fptosi(q, it)
    q1 = b.ashr(qi, cg.const(it, 1))
    q2 = b.sub(qi, q1)

    def pow2(k):  # k in [-76, 65]: a normal float
        return b.bitcast(b.shl(b.add(k, cg.const(it, 127)), cg.const(it, 23)), r.type)

    return b.fmul(b.fmul(r, pow2(q1)), pow2(q2))


def _nan_through(b, x, r):
    # Not only cosmetic: for a NaN lane fptosi in _scale_by_pow2 is poison, which LLVM may
    # turn into anything; the select keeps that lane from reaching the result.
    return b.select(b.fcmp_unordered("uno", x, x), x, r)


def exp_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    t = x.type
    # e^x is 0 below -103.97 (half the smallest subnormal) and infinite above 88.73.
    xc = _clamp(b, x, -104.0, 89.0)
    q = cg.call_intrinsic(b, "llvm.rint", [t], t, [b.fmul(xc, cg.const(t, _LOG2E))])
    # s = s_hi + c exactly, with s_hi exact and |c| < 2^-12: the polynomial's argument is s
    # rounded, but the linear term keeps both parts (e^s = 1 + s_hi + (c + s^2 P(s))), so
    # the rounding of s costs nothing and the result is rounded about 0.75 ulp at most.
    s_hi = _fmuladd(b, q, cg.const(t, -_LN2_HI), xc)
    c = b.fmul(q, cg.const(t, -_LN2_LO))
    s = b.fadd(s_hi, c)
    tail = _fmuladd(b, b.fmul(s, s), _horner(b, s, _EXP_POLY), c)
    es = b.fadd(b.fadd(s_hi, tail), cg.const(t, 1.0))
    return _nan_through(b, x, _scale_by_pow2(b, es, q))


def exp2_f32(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    t = x.type
    # 2^x is 0 from -150 down (ties to even) and infinite from 128 up.
    xc = _clamp(b, x, -151.0, 129.0)
    q = cg.call_intrinsic(b, "llvm.rint", [t], t, [xc])
    s = b.fsub(xc, q)  # exact
    es = _fmuladd(b, s, _horner(b, s, _EXP2_POLY), cg.const(t, 1.0))
    return _nan_through(b, x, _scale_by_pow2(b, es, q))


# libm name (double variant) -> {element type: emitter}.
INLINE = {"exp": {cg.F32: exp_f32}, "exp2": {cg.F32: exp2_f32}}
