"""Tests for the CPU libdevice (`triton_cpu.language.libdevice`).

Four layers:

* ``test_api_*``: the module has every public function of the stock
  ``triton.language.extra.libdevice`` with the CUDA module's parameters, and the backend's
  module map points at it.
* ``test_ttir*``: every function, for every argument-type variant, compiles through the CPU
  backend's module map (`from triton.language.extra import libdevice` in the kernel) to TTIR
  that contains the expected libm symbol or math op (and no extern call where the function is
  implemented in Triton), with the expected result dtype (``tl.static_assert`` in the kernel).
* ``test_interpreter*``: numeric check of *this module's* implementations under Triton's
  interpreter.  The interpreter ignores the backend's module map (there ``libdevice.<fn>`` is
  the stock stub and returns None), so these kernels import ``triton_cpu.language.libdevice``
  directly; the builtins get the interpreter's semantic, and ``tt.extern_elementwise`` is
  evaluated by calling the glibc libm symbol through ctypes (which also checks that every
  symbol exists in libm).
* ``test_compiled``: the same numeric check on CPU tensors through the real backend (module
  map, compiler, launcher).  It is guarded by ``_compiler_ready()`` (a trivial kernel must
  compile and run), so it skips itself on a tree where the compiler cannot run kernels.

Tolerances are in ulps of the result type against references computed exactly (Fractions for
rounding-mode functions and conversions, Python integers for bit tricks) or with mpmath at 40
digits; "exact" means bit equality, including the sign of zero (NaN payloads are ignored).
Inputs are random but seeded (``LIBDEVICE_TEST_SEED``, default 1234) plus fixed edge cases.
"""
import ast
import ctypes
import ctypes.util
import functools
import importlib.util
import math
import os
import sys
import zlib
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Optional

import numpy as np
import pytest

import triton
import triton.language as tl
import triton_cpu.language.libdevice as L

mpmath = pytest.importorskip("mpmath")
mpmath.mp.dps = 40

# ---------------------------------------------------------------------------------------------
# The function table
# ---------------------------------------------------------------------------------------------

F16, BF16, F32, F64 = "fp16", "bf16", "fp32", "fp64"
I32, U32, I64, U64 = "i32", "u32", "i64", "u64"
_TL = {F16: "tl.float16", BF16: "tl.bfloat16", F32: "tl.float32", F64: "tl.float64", I32: "tl.int32",
       U32: "tl.uint32", I64: "tl.int64", U64: "tl.uint64"}
_STORE = {F16: "fp16", BF16: "bf16", F32: "fp32", F64: "fp64", I32: "i32", U32: "i32", I64: "i64", U64: "i64"}
_NP = {F16: np.float16, F32: np.float32, F64: np.float64, I32: np.int32, U32: np.uint32, I64: np.int64,
       U64: np.uint64}
_NP_STORE = {F16: np.float16, F32: np.float32, F64: np.float64, I32: np.int32, U32: np.int32, I64: np.int64,
             U64: np.int64}


@dataclass
class Case:
    name: str
    variants: list  # [(arg kinds, result kind)]
    gen: Optional[Callable] = None  # (arg kinds, rng) -> [np arrays]
    ref: Optional[Callable] = None  # (python scalars..., result kind) -> python/mpmath value
    tol: dict = field(default_factory=dict)  # result kind -> max ulps; missing/None: exact
    ttir: Optional[Callable] = None  # arg kinds -> [substrings that must appear]; None: no extern
    rtol: Optional[float] = None  # relative tolerance instead of ulps
    atol: dict = field(default_factory=dict)  # result kind -> absolute tolerance added to the ulp bound


CASES = {}


def case(name, variants, **kw):
    CASES[name] = Case(name, variants, **kw)


N = 64
_RNG_SEED = int(os.environ.get("LIBDEVICE_TEST_SEED", "1234"))

# ----- input generators -----------------------------------------------------------------------


def _specials(kind):
    if kind == F32:
        tiny = np.float32(1e-40)
        return [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, np.finfo(np.float32).max]
    return [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-310, np.finfo(np.float64).max]


def uni(lo, hi, extra=(), specials=False, log=False):
    """Uniform (or log-uniform for positive ranges) samples plus fixed values."""

    def gen(kind, rng):
        dt = _NP[kind] if kind != BF16 else np.float32
        fixed = list(extra) + (_specials(kind) if specials else [])
        n = N - len(fixed)
        if log:
            v = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
        else:
            v = rng.uniform(lo, hi, n)
        return np.concatenate([np.array(fixed, dtype=np.float64), v]).astype(dt)

    return gen


def ints(lo, hi, extra=()):

    def gen(kind, rng):
        fixed = list(extra)
        v = rng.integers(lo, hi, N - len(fixed), dtype=np.int64, endpoint=True).tolist()
        vals = [int(x) for x in fixed + v]
        bits = {I32: 32, U32: 32, I64: 64, U64: 64}[kind]
        vals = [x % (1 << bits) for x in vals]  # as unsigned bit patterns
        arr = np.array(vals, dtype=np.uint64 if bits == 64 else np.uint32)
        return arr.view(_NP[kind])

    return gen


def randbits(kind, rng):
    bits = {I32: 32, U32: 32, I64: 64, U64: 64}[kind]
    v = rng.integers(0, 1 << 62, N, dtype=np.int64).astype(np.uint64)
    v = (v << np.uint64(2)) ^ rng.integers(0, 4, N, dtype=np.int64).astype(np.uint64)
    fixed = np.array([0, 1, (1 << bits) - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1, 0x80, 3, 12], dtype=np.uint64)
    v = np.concatenate([fixed, v[:N - len(fixed)]])
    if bits == 32:
        v = (v & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        # mix in some small-magnitude values
        v[8:24] = (rng.integers(0, 1 << 12, 16) << rng.integers(0, 20, 16)).astype(np.uint32)
    return v.view(_NP[kind])


def fbits(kind, rng):
    """Random float bit patterns (all exponents) plus specials."""
    if kind in (F32, F16):
        v = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        v = (rng.integers(0, 1 << 63, N, dtype=np.uint64) * 2 + 1).view(np.float64)
    sp = _specials(kind if kind in (F32, F64) else F32)
    v[:len(sp)] = sp
    return v.astype(_NP[kind])


def per_arg(*gens):
    """Argument generators, one per argument (arg kind passed to each)."""

    def gen(kinds, rng):
        return [g(k, rng) for g, k in zip(gens, kinds)]

    return gen


def same(g, n):
    return per_arg(*([g] * n))


# ----- references -----------------------------------------------------------------------------

_FMT = {F32: (24, -126, 127), F64: (53, -1022, 1023), F16: (11, -14, 15)}


def _round_exact(cmp, approx, kind, mode):
    """Round the exact value x to `kind` in `mode`, where cmp(Fraction f) = sign(f - x) and
    approx is a float near x.  Returns a Python float (signed zeros follow x's sign)."""
    dt = _NP[kind]
    inf = dt(np.inf)
    mx = np.finfo(dt).max
    BIG = Fraction(2)**3000

    def fr(v):
        if np.isinf(v):
            return BIG if v > 0 else -BIG
        return Fraction(float(v))

    f = dt(approx) if np.isfinite(approx) else dt(mx if approx > 0 else -mx)
    while f > -inf and cmp(fr(f)) > 0:
        f = np.nextafter(f, -inf)
    while f < inf and cmp(fr(np.nextafter(f, inf))) <= 0:
        f = np.nextafter(f, inf)
    lo = f
    exact = cmp(fr(lo)) == 0
    hi = lo if exact else np.nextafter(lo, inf)
    pos = cmp(Fraction(0)) < 0  # x > 0
    if exact:
        r = lo
    elif mode == "rd":
        r = lo
    elif mode == "ru":
        r = hi
    elif mode == "rz":
        r = lo if pos else hi
    else:
        if np.isinf(hi):
            mid = Fraction(float(mx)) + Fraction(float(mx) - float(np.nextafter(mx, dt(0)))) / 2
        elif np.isinf(lo):
            mid = -(Fraction(float(mx)) + Fraction(float(mx) - float(np.nextafter(mx, dt(0)))) / 2)
        else:
            mid = (fr(lo) + fr(hi)) / 2
        c = cmp(mid)
        if c < 0:
            r = hi
        elif c > 0:
            r = lo
        else:  # tie: even significand
            r = lo if (int(np.array(lo).view(np.uint64 if kind == F64 else np.uint32)) & 1) == 0 else hi
    r = float(r)
    if r == 0.0:
        r = 0.0 if pos else -0.0
    return r


def round_frac(q, kind, mode):
    try:
        approx = float(q)
    except OverflowError:
        approx = math.inf if q > 0 else -math.inf
    return _round_exact(lambda f: (f > q) - (f < q), approx, kind, mode)


def _zero_sum_sign(a_neg, b_neg, mode):
    if a_neg and b_neg:
        return -0.0
    if not a_neg and not b_neg:
        return 0.0
    return -0.0 if mode == "rd" else 0.0


def ref_add(mode, sub=False):

    def ref(a, b, kind):
        if sub:
            b = -b
        if not (math.isfinite(a) and math.isfinite(b)):
            return a + b
        q = Fraction(a) + Fraction(b)
        if q == 0:
            return _zero_sum_sign(math.copysign(1, a) < 0, math.copysign(1, b) < 0, mode)
        return round_frac(q, kind, mode)

    return ref


def ref_mul(mode):

    def ref(a, b, kind):
        if not (math.isfinite(a) and math.isfinite(b)):
            return a * b
        q = Fraction(a) * Fraction(b)
        if q == 0:
            return math.copysign(0.0, a) * math.copysign(1.0, b)
        return round_frac(q, kind, mode)

    return ref


def ref_div(mode):

    def ref(a, b, kind):
        if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
            with np.errstate(all="ignore"):
                return float(np.float64(a) / np.float64(b))
        q = Fraction(a) / Fraction(b)
        if q == 0:
            return math.copysign(0.0, a) * math.copysign(1.0, b)
        return round_frac(q, kind, mode)

    return ref


def ref_rcp(mode):
    return lambda a, kind: ref_div(mode)(1.0, a, kind)


def ref_sqrt(mode):

    def ref(a, kind):
        if a < 0 or a != a:
            return math.nan
        if a == 0 or math.isinf(a):
            return a
        x = Fraction(a)

        def cmp(f):
            v = f * abs(f) - x
            return (v > 0) - (v < 0)

        return _round_exact(cmp, math.sqrt(a), kind, mode)

    return ref


def ref_fma(mode):

    def ref(a, b, c, kind):
        if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
            return float(np.float64(a) * np.float64(b) + np.float64(c))
        q = Fraction(a) * Fraction(b) + Fraction(c)
        if q == 0:
            p_neg = (math.copysign(1, a) * math.copysign(1, b)) < 0
            return _zero_sum_sign(p_neg, math.copysign(1, c) < 0, mode)
        return round_frac(q, kind, mode)

    return ref


def mp1(f):
    """Reference from an mpmath function of one argument (None: NaN)."""

    def ref(x, kind):
        if x != x:
            return math.nan
        try:
            return f(mpmath.mpf(x))
        except (ValueError, ZeroDivisionError):
            return math.nan

    return ref


def mp2(f):

    def ref(x, y, kind):
        if x != x or y != y:
            return math.nan
        return f(mpmath.mpf(x), mpmath.mpf(y))

    return ref


def py1(f):
    return lambda x, kind: f(x)


# ----- the cases --------------------------------------------------------------------------------

FV = [((F32, ), F32), ((F64, ), F64)]
FV2 = [((F32, F32), F32), ((F64, F64), F64)]
FV3 = [((F32, F32, F32), F32), ((F64, F64, F64), F64)]
FV4 = [((F32, ) * 4, F32), ((F64, ) * 4, F64)]


def ext(s32, s64):
    """TTIR must call libm symbol s32 for fp32 and s64 for fp64 variants."""
    return lambda kinds: [f'symbol = "{s64 if F64 in kinds else s32}"']


def ops(*names):
    return lambda kinds: list(names)


def ops_by_type(op32, op64):
    return lambda kinds: [op64 if F64 in kinds else op32]


def _mp_cbrt(x):
    return mpmath.sign(x) * mpmath.cbrt(abs(x))


def _mp_logb(x):
    if x == 0:
        return -mpmath.inf
    if mpmath.isinf(x):
        return mpmath.inf
    return mpmath.floor(mpmath.log(abs(x), 2))


def _lgamma(x):
    if x == 0 or (x < 0 and x == int(x)):
        return mpmath.inf
    return mpmath.log(abs(mpmath.gamma(x)))


_LIBM1 = {  # name: (fp32 symbol, fp64 symbol, reference, generator, tolerance fp32/fp64)
    "tan": ("tanf", "tan", mpmath.tan, uni(-1.5, 1.5, specials=True), 2),
    "fast_tanf": ("tanf", "tan", mpmath.tan, uni(-1.5, 1.5), 2),
    "sinh": ("sinhf", "sinh", mpmath.sinh, uni(-10, 10, specials=True), 2),
    "cosh": ("coshf", "cosh", mpmath.cosh, uni(-10, 10, specials=True), 2),
    "tanh": ("tanhf", "tanh", mpmath.tanh, uni(-5, 5, specials=True), 2),
    "fast_tanhf": ("tanhf", "tanh", mpmath.tanh, uni(-5, 5), 2),
    "asin": ("asinf", "asin", mpmath.asin, uni(-1, 1, extra=[1.0, -1.0, 0.0, -0.0]), 2),
    "acos": ("acosf", "acos", mpmath.acos, uni(-1, 1, extra=[1.0, -1.0]), 2),
    "atan": ("atanf", "atan", mpmath.atan, uni(-10, 10, specials=True), 2),
    "asinh": ("asinhf", "asinh", mpmath.asinh, uni(-10, 10, specials=True), 2),
    "acosh": ("acoshf", "acosh", mpmath.acosh, uni(1, 10, extra=[1.0, np.inf]), 2),
    "atanh": ("atanhf", "atanh", mpmath.atanh, uni(-0.99, 0.99, extra=[0.0, -0.0]), 2),
    "log10": ("log10f", "log10", mpmath.log10, uni(1e-3, 1e3, log=True, extra=[1.0, 10.0, np.inf]), 2),
    "log1p": ("log1pf", "log1p", mpmath.log1p, uni(-0.9, 10, extra=[0.0, -0.0, 1e-10, np.inf]), 2),
    "expm1": ("expm1f", "expm1", mpmath.expm1, uni(-5, 5, extra=[0.0, -0.0, 1e-10, np.inf, -np.inf]), 2),
    "exp10": ("exp10f", "exp10", lambda x: mpmath.power(10, x), uni(-10, 10, extra=[0.0, 1.0, 2.0]), 2),
    "cbrt": ("cbrtf", "cbrt", _mp_cbrt, uni(-100, 100, specials=True), 2),
    "erfc": ("erfcf", "erfc", mpmath.erfc, uni(-3, 8, extra=[np.inf, -np.inf, 0.0]), 4),
    "lgamma": ("lgammaf", "lgamma", _lgamma, uni(0.1, 20, extra=[1.0, 2.0, 0.5, 3.5]), 4),
    "tgamma": ("tgammaf", "tgamma", mpmath.gamma, uni(0.1, 10, extra=[1.0, 2.0, 0.5, 5.0]), 4),
    "j0": ("j0f", "j0", lambda x: mpmath.besselj(0, x), uni(0.1, 2), 8),
    "j1": ("j1f", "j1", lambda x: mpmath.besselj(1, x), uni(0.1, 2), 8),
    "y0": ("y0f", "y0", lambda x: mpmath.bessely(0, x), uni(0.1, 0.8), 8),
    "y1": ("y1f", "y1", lambda x: mpmath.bessely(1, x), uni(0.1, 2), 8),
}
for _n, (_s32, _s64, _f, _g, _tol) in _LIBM1.items():
    case(_n, FV, gen=same(_g, 1), ref=mp1(_f), tol={F32: max(_tol, 4), F64: max(_tol, 4)}, ttir=ext(_s32, _s64))
for _n in ("j0", "j1", "y0", "y1"):  # absolute error near the functions' zeros
    CASES[_n].atol = {F32: 2e-7, F64: 4e-16}

_HALVES = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 1e30, -1e30, 8388609.0, 0.0, -0.0]
_ROUNDING = {
    "trunc": ("truncf", "trunc", lambda x: math.copysign(float(math.trunc(x)), x)),
    "round": ("roundf", "round", lambda x: math.copysign(float(math.floor(abs(x) + 0.5)), x)),
    "rint": ("rintf", "rint", lambda x: math.copysign(float(round(x)), x)),
    "nearbyint": ("nearbyintf", "nearbyint", lambda x: math.copysign(float(round(x)), x)),
}


def _guard_nonfinite(f):
    return lambda x: x if not math.isfinite(x) else f(x)


for _n, (_s32, _s64, _f) in _ROUNDING.items():
    case(_n, FV, gen=same(uni(-10, 10, extra=_HALVES + [np.inf, -np.inf, np.nan]), 1),
         ref=py1(_guard_nonfinite(_f)), ttir=ext(_s32, _s64))
# round(x) for |x| near 2**52..2**53 must not use x + 0.5; the sample set avoids that regime in fp32.

case("logb", FV, gen=same(uni(-1e5, 1e5, specials=True), 1), ref=mp1(_mp_logb), ttir=ext("logbf", "logb"))
case("ilogb", [((F32, ), I32), ((F64, ), I32)], gen=same(uni(-1e5, 1e5, extra=[1.0, 3.0, 1e-40, -1e-310]), 1),
     ref=lambda x, k: -2**31 if x == 0 else int(mpmath.floor(mpmath.log(abs(mpmath.mpf(x)), 2))),
     ttir=ext("ilogbf", "ilogb"))

case("atan2", FV2, gen=same(uni(-10, 10, extra=[0.0, -0.0, 1.0, -1.0]), 2),
     ref=lambda y, x, k: math.atan2(y, x) if y == 0 or x != x or y != y else mpmath.atan2(y, x),
     tol={F32: 2, F64: 2}, ttir=ext("atan2f", "atan2"))
case("hypot", FV2, gen=same(uni(-1e3, 1e3, extra=[0.0, 3.0]), 2), ref=mp2(lambda x, y: mpmath.sqrt(x * x + y * y)),
     tol={F32: 1, F64: 1}, ttir=ext("hypotf", "hypot"))
case("pow", FV2 + [((F32, I32), F32), ((F64, I32), F64)],
     gen=lambda kinds, rng: [uni(0.1, 10, extra=[1.0, 2.0])(kinds[0], rng),
                             uni(-5, 5, extra=[0.0, 0.5, 2.0])(kinds[1], rng) if kinds[1] != I32 else ints(-8, 8)(
                                 I32, rng)], ref=lambda x, y, k: mpmath.power(mpmath.mpf(x), mpmath.mpf(int(y) if (
                                     isinstance(y, int)) else y)), tol={F32: 2, F64: 2}, ttir=ext("powf", "pow"))
case("fmod", FV2, gen=same(uni(-100, 100, extra=[5.5, -5.5]), 2), ref=lambda x, y, k: math.fmod(x, y),
     ttir=ext("fmodf", "fmod"))
case("remainder", FV2, gen=same(uni(-100, 100, extra=[5.5, -5.5]), 2), ref=lambda x, y, k: math.remainder(x, y),
     ttir=ext("remainderf", "remainder"))


def _nextafter_ref(x, y, kind):
    return float(np.nextafter(_NP[kind](x), _NP[kind](y)))


case("nextafter", FV2, gen=same(uni(-3, 3, extra=[0.0, -0.0, 1.0]), 2), ref=_nextafter_ref,
     ttir=ext("nextafterf", "nextafter"))
case("fdim", FV2, gen=same(uni(-10, 10, extra=[1.0, 1.0]), 2), ref=lambda x, y, k: x - y if x > y else 0.0,
     tol={F32: 0.51, F64: 0.51}, ttir=ext("fdimf", "fdim"))
case("copysign", FV2, gen=same(uni(-10, 10, specials=True), 2), ref=lambda x, y, k: math.copysign(x, y),
     ttir=ext("copysignf", "copysign"))
case("ldexp", [((F32, I32), F32), ((F64, I32), F64)],
     gen=lambda kinds, rng: [uni(-10, 10, specials=True)(kinds[0], rng), ints(-40, 40)(I32, rng)],
     ref=lambda x, n, k: float(np.ldexp(_NP[k](x), int(n))), ttir=ext("ldexpf", "ldexp"))
case("scalbn", [((F32, I32), F32), ((F64, I32), F64)],
     gen=lambda kinds, rng: [uni(-10, 10, specials=True)(kinds[0], rng), ints(-40, 40)(I32, rng)],
     ref=lambda x, n, k: float(np.ldexp(_NP[k](x), int(n))), ttir=ext("scalbnf", "scalbn"))
case("jn", [((I32, F32), F32), ((I32, F64), F64)],
     gen=lambda kinds, rng: [ints(0, 4)(I32, rng), uni(0.5, 2)(kinds[1], rng)],
     ref=lambda n, x, k: mpmath.besselj(int(n), x), tol={F32: 16, F64: 16}, atol={F32: 2e-7, F64: 4e-16},
     ttir=ext("jnf", "jn"))
case("yn", [((I32, F32), F32), ((I32, F64), F64)],
     gen=lambda kinds, rng: [ints(0, 4)(I32, rng), uni(0.5, 2)(kinds[1], rng)],
     ref=lambda n, x, k: mpmath.bessely(int(n), x), tol={F32: 16, F64: 16}, atol={F32: 2e-7, F64: 4e-16},
     ttir=ext("ynf", "yn"))

# core Triton ops
_OPS1 = {
    "floor": ("math.floor", py1(_guard_nonfinite(lambda x: math.copysign(float(math.floor(x)), x))),
              uni(-10, 10, extra=_HALVES, specials=True), None),
    "ceil": ("math.ceil", py1(_guard_nonfinite(lambda x: math.copysign(float(math.ceil(x)), x))),
             uni(-10, 10, extra=_HALVES, specials=True), None),
    "sqrt": ("math.sqrt", ref_sqrt("rn"), uni(0, 100, specials=True), None),
    "rsqrt": ("math.rsqrt", mp1(lambda x: 1 / mpmath.sqrt(x)), uni(1e-3, 1e3, log=True), 2),
    "exp": ("math.exp", mp1(mpmath.exp), uni(-20, 20, specials=True), 2),
    "exp2": ("math.exp2", mp1(lambda x: mpmath.power(2, x)), uni(-20, 20, specials=True), 1),
    "log": ("math.log", mp1(mpmath.log), uni(1e-3, 1e3, log=True, extra=[1.0]), 1),
    "log2": ("math.log2", mp1(lambda x: mpmath.log(x, 2)), uni(1e-3, 1e3, log=True, extra=[1.0, 8.0]), 1),
    "sin": ("math.sin", mp1(mpmath.sin), uni(-10, 10, extra=[0.0, -0.0]), 1),
    "cos": ("math.cos", mp1(mpmath.cos), uni(-10, 10, extra=[0.0]), 1),
    "erf": ("math.erf", mp1(mpmath.erf), uni(-3, 3, extra=[0.0, -0.0, np.inf, -np.inf]), 2),
    "fast_sinf": ("math.sin", mp1(mpmath.sin), uni(-10, 10), 1),
    "fast_cosf": ("math.cos", mp1(mpmath.cos), uni(-10, 10), 1),
    "fast_log2f": ("math.log2", mp1(lambda x: mpmath.log(x, 2)), uni(1e-3, 1e3, log=True), 1),
    "fast_logf": ("math.log", mp1(mpmath.log), uni(1e-3, 1e3, log=True), 1),
    "fast_expf": ("math.exp", mp1(mpmath.exp), uni(-20, 20), 2),
    "fast_exp10f": ("math.exp2", mp1(lambda x: mpmath.power(10, x)), uni(-10, 10), 64),
    "fast_log10f": ("math.log2", mp1(mpmath.log10), uni(1e-3, 1e3, log=True), 4),
}
for _n, (_op, _ref, _g, _tol) in _OPS1.items():
    # math ops: the vector math the compiler uses (libmvec, SLEEF, ...) is documented to <= 4 ulp
    _tol = _tol and max(_tol, 4)
    case(_n, FV, gen=same(_g, 1), ref=_ref, tol={F32: _tol, F64: _tol} if _tol else {}, ttir=ops(_op))

case("abs", FV + [((I32, ), I32), ((I64, ), I64), ((F16, ), F16)],
     gen=lambda kinds, rng: [uni(-10, 10, specials=True)(kinds[0], rng) if kinds[0] in (F32, F64, F16) else ints(
         -2**31 if kinds[0] == I32 else -2**62, 2**31 - 1 if kinds[0] == I32 else 2**62,
         extra=[0, -1, -2**31 if kinds[0] == I32 else -2**63])(kinds[0], rng)],
     ref=lambda x, k: builtins_abs(x, k),
     ttir=lambda kinds: ["math.absf" if kinds[0] in (F16, F32, F64) else "math.absi"])


def builtins_abs(x, k):
    if isinstance(x, float):
        return math.fabs(x)
    bits = 32 if k == I32 else 64
    r = -x if x < 0 else x
    return ((r + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))


case("fast_powf", FV2, gen=per_arg(uni(0.5, 4), uni(-4, 4)), ref=mp2(mpmath.power), tol={F32: 32, F64: 32},
     ttir=ops("math.exp2", "math.log2"))
case("fast_dividef", FV2, gen=same(uni(-10, 10, extra=[1.0, 3.0]), 2), ref=ref_div("rn"), ttir=ops("arith.divf"))
case("fma", FV3, gen=same(uni(-10, 10, extra=[1.0, 3.0]), 3), ref=ref_fma("rn"), ttir=ops("math.fma"))
case("saturatef", FV, gen=same(uni(-2, 2, specials=True, extra=[1.0, 0.5]), 1),
     ref=py1(lambda x: 0.0 if not (x > 0) else min(x, 1.0)), ttir=None)
case("rcp64h", [((F64, ), F64)], gen=same(uni(-10, 10, extra=[1.0, 3.0]), 1), ref=py1(lambda x: 1.0 / x),
     rtol=2.0**-19)
case("rsqrt_rn", FV, gen=same(uni(1e-3, 1e3, log=True, extra=[4.0, 2.0]), 1), ref=mp1(lambda x: 1 / mpmath.sqrt(x)),
     tol={F32: 0.5 + 1e-6, F64: 1.5}, ttir=ops("math.sqrt"))

# directed rounding: half moderate values (cancellation, ties), half random bit patterns
# (every exponent: subnormal results, overflow, specials)


def mix(g1, g2):

    def gen(kind, rng):
        return np.concatenate([g1(kind, rng)[:N // 2], g2(kind, rng)[:N - N // 2]])

    return gen


_DIR_GEN = mix(uni(-10, 10, extra=[1.0, 1e-30, 3.0, 1e30, 0.1, -0.0, 0.0]), fbits)
_BIG_GEN = mix(uni(-1e30, 1e30, extra=[3.4e38, -3.4e38, 1e-38, 1e-44, 1.0]), fbits)
for _mode in ("rn", "rz", "rd", "ru"):
    rn_op = lambda op32, op64, m=_mode: (ops_by_type(op32, op64) if m == "rn" else None)
    case(f"add_{_mode}", FV2, gen=same(_DIR_GEN, 2), ref=ref_add(_mode), ttir=rn_op("arith.addf", "arith.addf"))
    case(f"sub_{_mode}", FV2, gen=same(_DIR_GEN, 2), ref=ref_add(_mode, sub=True),
         ttir=rn_op("arith.subf", "arith.subf") if _mode != "rn" else ops("arith.addf"))
    case(f"mul_{_mode}", FV2, gen=same(_BIG_GEN, 2), ref=ref_mul(_mode), ttir=rn_op("arith.mulf", "arith.mulf"))
    case(f"div_{_mode}", FV2, gen=same(_BIG_GEN, 2), ref=ref_div(_mode),
         ttir=ops_by_type("tt.precise_divf", "arith.divf"))
    case(f"rcp_{_mode}", FV, gen=same(_BIG_GEN, 1), ref=ref_rcp(_mode),
         ttir=ops_by_type("tt.precise_divf", "arith.divf"))
    case(f"sqrt_{_mode}", FV, gen=same(mix(uni(0, 1e3, extra=[2.0, 1e-40, 1e-30, 4.0], specials=True), fbits), 1),
         ref=ref_sqrt(_mode), ttir=ops_by_type("tt.precise_sqrt", "math.sqrt"))
    case(f"fma_{_mode}", FV3, gen=same(_DIR_GEN, 3), ref=ref_fma(_mode), ttir=ops("math.fma"))
# sub_rn is a - b through arith.subf (or add of the negation); accept either.
CASES["sub_rn"].ttir = lambda kinds: []

# conversions
_INT_RANGE = {"int": (-2**31, 2**31 - 1, I32), "uint": (0, 2**32 - 1, I32), "ll": (-2**63, 2**63 - 1, I64),
              "ull": (0, 2**64 - 1, I64)}


def ref_f2i(kind_name, mode):
    lo, hi, rk = _INT_RANGE[kind_name]

    def ref(x, k):
        if x != x:
            return 0
        if math.isinf(x):
            v = hi if x > 0 else lo
        else:
            q = Fraction(x)
            v = {"rn": round(q), "rz": math.trunc(q), "rd": math.floor(q), "ru": math.ceil(q)}[mode]
            v = min(max(v, lo), hi)
        bits = 32 if rk == I32 else 64
        return ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))  # result's bit pattern, signed

    return ref


_F2I_GEN = uni(-5e9, 5e9, extra=_HALVES + [2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0,
                                           4294967295.0, 4294967296.0, 9.3e18, -9.3e18, 1.9e19, 1.8e19, -1.0,
                                           np.inf, -np.inf, np.nan, 123.75, -123.75])
for _mode in ("rn", "rz", "rd", "ru"):
    for _kn in ("int", "uint", "ll", "ull"):
        for _src, _sk in (("float", F32), ("double", F64)):
            _name = f"{_src}2{_kn}_{_mode}"
            case(_name, [((_sk, ), _INT_RANGE[_kn][2])], gen=same(_F2I_GEN, 1), ref=ref_f2i(_kn, _mode),
                 ttir=ext("rintf", "rint") if _mode == "rn" else None)
    case(f"double2float_{_mode}", [((F64, ), F32)], gen=same(fbits, 1),
         ref=lambda x, k, m=_mode: x if not math.isfinite(x) else round_frac(Fraction(x), F32, m) if x != 0 else x)


def ref_i2f(kind, mode):

    def ref(x, k):
        return round_frac(Fraction(int(x)), k, mode) if x != 0 else 0.0

    return ref


def _i2f_gen(kind, rng):
    v = randbits(kind, rng)
    if kind in (I64, U64):  # values around 2**63 / 2**64 and random magnitudes
        extra = np.array([2**63 - 1, 2**64 - 1 if kind == U64 else -2**63, 2**53 + 1, 2**24 + 1, 2**62 + 2**38 + 1],
                         dtype=object)
        for i, e in enumerate(extra):
            v[N - 1 - i] = np.array(int(e) % 2**64, dtype=np.uint64).view(_NP[kind])
    return v


for _mode in ("rn", "rz", "rd", "ru"):
    for _name, _sk, _dk in (("int2float", I32, F32), ("uint2float", U32, F32), ("ll2float", I64, F32),
                            ("ull2float", U64, F32), ("ll2double", I64, F64), ("ull2double", U64, F64)):
        case(f"{_name}_{_mode}", [((_sk, ), _dk)], gen=same(_i2f_gen, 1), ref=ref_i2f(_sk, _mode))
case("int2double_rn", [((I32, ), F64)], gen=same(_i2f_gen, 1), ref=ref_i2f(I32, "rn"))
case("uint2double_rn", [((U32, ), F64)], gen=same(_i2f_gen, 1), ref=ref_i2f(U32, "rn"))
case("llrint", [((F32, ), I64), ((F64, ), I64)], gen=same(_F2I_GEN, 1), ref=ref_f2i("ll", "rn"),
     ttir=ext("rintf", "rint"))


def _llround_ref(x, k):
    if x != x:
        return 0
    if math.isinf(x):
        return 2**63 - 1 if x > 0 else -2**63
    v = int(math.copysign(math.floor(abs(Fraction(x)) + Fraction(1, 2)), x))
    return min(max(v, -2**63), 2**63 - 1)


case("llround", [((F32, ), I64), ((F64, ), I64)], gen=same(_F2I_GEN, 1), ref=_llround_ref,
     ttir=ext("roundf", "round"))


def _s32(v):
    return ((v + 2**31) % 2**32) - 2**31


def _s64(v):
    return ((v + 2**63) % 2**64) - 2**63


def _float_of(bits, kind):
    return float(np.array(bits % (2**32 if kind == F32 else 2**64),
                          dtype=np.uint32 if kind == F32 else np.uint64).view(_NP[kind]))


_RAW_BITS = ("float_as_int", "float_as_uint", "double_as_longlong", "double2loint", "double2hiint")
case("float_as_int", [((F32, ), I32)], gen=same(fbits, 1), ref=lambda b, k: _s32(b))
case("float_as_uint", [((F32, ), I32)], gen=same(fbits, 1), ref=lambda b, k: _s32(b))
case("int_as_float", [((I32, ), F32)], gen=same(randbits, 1), ref=lambda x, k: _float_of(int(x), F32))
case("uint_as_float", [((U32, ), F32)], gen=same(randbits, 1), ref=lambda x, k: _float_of(int(x), F32))
case("double_as_longlong", [((F64, ), I64)], gen=same(fbits, 1), ref=lambda b, k: _s64(b))
case("longlong_as_double", [((I64, ), F64)], gen=same(randbits, 1), ref=lambda x, k: _float_of(int(x), F64))
case("double2loint", [((F64, ), I32)], gen=same(fbits, 1), ref=lambda b, k: _s32(b & 0xFFFFFFFF))
case("double2hiint", [((F64, ), I32)], gen=same(fbits, 1), ref=lambda b, k: _s32(b >> 32))
case("hiloint2double", [((I32, I32), F64)], gen=same(randbits, 2),
     ref=lambda h, l, k: _float_of(((int(h) % 2**32) << 32) | (int(l) % 2**32), F64))

# classification (int32 results)
for _n, _f in (("isnan", lambda x: int(x != x)), ("isinf", lambda x: int(math.isinf(x))),
               ("signbit", lambda x: int(math.copysign(1.0, x) < 0)), ("finitef", lambda x: int(math.isfinite(x))),
               ("isfinited", lambda x: int(math.isfinite(x)))):
    case(_n, [((F32, ), I32), ((F64, ), I32)], gen=same(uni(-10, 10, specials=True, extra=[-np.nan]), 1),
         ref=py1(_f))

# integer functions


def _u(x, bits):
    return int(x) % (1 << bits)


def _kbits(k):
    return 32 if k in (I32, U32) else 64


def _wrap(v, k):
    bits = _kbits(k)
    v %= 1 << bits
    if k in (I32, I64) and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


IV = [((I32, ), I32), ((I64, ), I32)]
case("clz", IV, gen=same(randbits, 1), ref=None)  # integer references: _int_ref below
case("popc", IV, gen=same(randbits, 1), ref=None)
case("ffs", IV, gen=same(randbits, 1), ref=None)
case("brev", [((I32, ), I32), ((I64, ), I64)], gen=same(randbits, 1), ref=None)
case("mulhi", [((I32, I32), I32), ((U32, U32), U32), ((I64, I64), I64), ((U64, U64), U64)], gen=same(randbits, 2),
     ref=None, ttir=lambda kinds: ["tt.mulhiui"] if kinds[0] in (U32, U64, I64) else [])
case("mul24", [((I32, I32), I32), ((U32, U32), U32)], gen=same(randbits, 2), ref=None)
case("hadd", [((I32, I32), I32), ((U32, U32), U32)], gen=same(randbits, 2), ref=None)
case("rhadd", [((I32, I32), I32), ((U32, U32), U32)], gen=same(randbits, 2), ref=None)
case("sad", [((I32, I32, U32), I32), ((U32, U32, U32), U32)], gen=same(randbits, 3), ref=None)
case("byte_perm", [((I32, I32, I32), I32)], gen=same(randbits, 3), ref=None)

# Integer references take the argument kinds (from the variant) through `kinds` set by the runner.


def _int_ref(name, args, kinds, out):
    b = _kbits(kinds[0])
    ua = [_u(a, _kbits(k)) for a, k in zip(args, kinds)]
    if name == "clz":
        return b - ua[0].bit_length()
    if name == "popc":
        return bin(ua[0]).count("1")
    if name == "ffs":
        return (ua[0] & -ua[0]).bit_length()
    if name == "brev":
        return _wrap(int(format(ua[0], f"0{b}b")[::-1], 2), out)
    if name == "mulhi":
        sa = [_wrap(a, kinds[0]) for a in args]
        return _wrap((sa[0] * sa[1]) >> b, out)
    if name == "mul24":
        if kinds[0] == I32:
            s24 = [((a & 0xFFFFFF) ^ 0x800000) - 0x800000 for a in ua]
        else:
            s24 = [a & 0xFFFFFF for a in ua]
        return _wrap(s24[0] * s24[1], out)
    if name in ("hadd", "rhadd"):
        sa = [_wrap(a, kinds[0]) for a in args]
        s = sa[0] + sa[1] + (1 if name == "rhadd" else 0)
        return _wrap(s >> 1, out)
    if name == "sad":
        sa = [_wrap(a, kinds[0]) for a in args[:2]]
        return _wrap(builtins_abs_int(sa[0] - sa[1]) + ua[2], out)
    if name == "byte_perm":
        v = (ua[1] << 32) | ua[0]
        r = 0
        for i in range(4):
            sel = (ua[2] >> (4 * i)) & 7
            r |= ((v >> (8 * sel)) & 0xFF) << (8 * i)
        return _wrap(r, out)
    raise AssertionError(name)


def builtins_abs_int(v):
    return -v if v < 0 else v


_INT_FUNCS = ("clz", "popc", "ffs", "brev", "mulhi", "mul24", "hadd", "rhadd", "sad", "byte_perm")

# special functions implemented in Triton
case("sinpi", FV, gen=same(uni(-10, 10, extra=[0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, 1e-30, -3.0, 1e20], specials=True),
                           1), ref=mp1(lambda x: mpmath.sinpi(x)), tol={F32: 1, F64: 4})
case("cospi", FV, gen=same(uni(-10, 10, extra=[0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, 1e-30, -3.0, 1e20], specials=True),
                           1), ref=mp1(lambda x: mpmath.cospi(x)), tol={F32: 1, F64: 4})


def _norm_ref(*xs):
    kind = xs[-1]
    xs = xs[:-1]
    if any(math.isinf(x) for x in xs):
        return math.inf
    if any(x != x for x in xs):
        return math.nan
    return mpmath.sqrt(mpmath.fsum(mpmath.mpf(x)**2 for x in xs))


def _rnorm_ref(*xs):
    n = _norm_ref(*xs)
    if n != n:
        return n
    return 0.0 if n == math.inf else (math.inf if n == 0 else 1 / n)


_NORM_GEN = uni(-1e3, 1e3, extra=[0.0, 3.0, 1e-30, 1e30, np.inf, np.nan])
_NORM_GEN64 = uni(-1e3, 1e3, extra=[0.0, 3.0, 1e-300, 1e300, 1e-320, 1.7e308])
case("rhypot", FV2, gen=per_arg(_NORM_GEN, _NORM_GEN64), ref=_rnorm_ref, tol={F32: 1, F64: 2},
     ttir=lambda kinds: ['symbol = "hypot"'] if F64 in kinds else [])
case("norm3d", FV3, gen=per_arg(_NORM_GEN, _NORM_GEN64, _NORM_GEN), ref=_norm_ref, tol={F32: 1, F64: 2})
case("rnorm3d", FV3, gen=per_arg(_NORM_GEN, _NORM_GEN64, _NORM_GEN), ref=_rnorm_ref, tol={F32: 1, F64: 2})
case("norm4d", FV4, gen=per_arg(_NORM_GEN, _NORM_GEN64, _NORM_GEN, _NORM_GEN64), ref=_norm_ref, tol={F32: 1, F64: 2})
case("rnorm4d", FV4, gen=per_arg(_NORM_GEN, _NORM_GEN64, _NORM_GEN, _NORM_GEN64), ref=_rnorm_ref,
     tol={F32: 1, F64: 2})
case("rcbrt", FV, gen=same(uni(-100, 100, specials=True), 1),
     ref=lambda x, k: math.copysign(math.inf, x) if x == 0 else mp1(lambda v: 1 / _mp_cbrt(v))(x, k),
     tol={F32: 1, F64: 4},
     ttir=lambda kinds: ['symbol = "cbrt"'])


def _mp_besseli(nu):

    def f(x):
        if mpmath.isinf(x):
            return mpmath.inf if nu == 0 or x > 0 else -mpmath.inf
        return mpmath.besseli(nu, x)

    return f


_BESSEL_GEN = uni(-40, 40, extra=[0.0, -0.0, 19.99, 20.0, 20.01, 1e-20, 700.0, -700.0, 713.0, np.inf, -np.inf])
case("cyl_bessel_i0", FV, gen=same(_BESSEL_GEN, 1), ref=mp1(_mp_besseli(0)), tol={F32: 2, F64: 8})
case("cyl_bessel_i1", FV, gen=same(_BESSEL_GEN, 1), ref=mp1(_mp_besseli(1)), tol={F32: 2, F64: 8})


def _mp_erfinv(y):
    if y == 1:
        return mpmath.inf
    if y == -1:
        return -mpmath.inf
    if abs(y) > 1:
        return mpmath.nan
    if y == 0:
        return y
    w = 1 - abs(y)
    if w < mpmath.mpf("1e-30"):  # erfinv(1 - w): solve erfc(x) = w in the far tail
        x = mpmath.findroot(lambda t: mpmath.log(mpmath.erfc(t)) - mpmath.log(w), mpmath.sqrt(-mpmath.log(w)))
        return x if y > 0 else -x
    return mpmath.erfinv(y)


def _mp_erfcinv(z):
    if z == 0:
        return mpmath.inf
    if z == 2:
        return -mpmath.inf
    if z < 0 or z > 2:
        return mpmath.nan
    if z < mpmath.mpf("0.5"):
        return mpmath.findroot(lambda t: mpmath.log(mpmath.erfc(t)) - mpmath.log(z), mpmath.sqrt(-mpmath.log(z)))
    return -_mp_erfcinv(2 - z) if z > mpmath.mpf("1.5") else mpmath.erfinv(1 - z)


_ERFINV_GEN = uni(-1, 1, extra=[0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.9999999, -0.999999, 1e-30, 1.5, np.nan])
_ERFCINV_GEN = uni(0, 2, extra=[0.0, 2.0, 1.0, 0.5, 1.5, 1e-30, 1e-38, 1e-44, 1.9999999, -0.5, 2.5, np.nan])
_ERFCINV_GEN64 = uni(0, 2, extra=[0.0, 2.0, 1.0, 0.5, 1.5, 1e-30, 1e-300, 5e-324, 1e-310, 1.9999999999999998])
case("erfinv", FV, gen=same(_ERFINV_GEN, 1), ref=mp1(_mp_erfinv), tol={F32: 2, F64: 8},
     ttir=lambda kinds: ["math.erf", 'symbol = "erfc"'])
case("erfcinv", [((F32, ), F32)], gen=same(_ERFCINV_GEN, 1), ref=mp1(_mp_erfcinv), tol={F32: 2},
     ttir=lambda kinds: ['symbol = "erfc"'])
CASES["erfcinv"].variants.append(((F64, ), F64))
CASES["erfcinv"].gen = lambda kinds, rng: [(_ERFCINV_GEN if kinds[0] == F32 else _ERFCINV_GEN64)(kinds[0], rng)]
CASES["erfcinv"].tol[F64] = 8
case("normcdfinv", FV, gen=same(uni(0, 1, extra=[0.0, 1.0, 0.5, 1e-30, 1e-38, 0.999999, -0.1, 1.1]), 1),
     ref=mp1(lambda p: -mpmath.sqrt(2) * _mp_erfcinv(2 * p)), tol={F32: 2, F64: 8},
     ttir=lambda kinds: ['symbol = "erfc"'])
case("normcdf", FV, gen=same(uni(-30, 10, extra=[0.0, -0.0, 1.0, -38.0, -8.0, np.inf, -np.inf, 40.0]), 1),
     ref=mp1(lambda x: mpmath.ncdf(x)), tol={F32: 2, F64: 8}, ttir=lambda kinds: ['symbol = "erfc"'])
case("erfcx", FV, gen=same(uni(-5, 50, extra=[0.0, -0.0, 25.9, 26.0, 26.1, 1e5, -26.0, -30.0, np.inf, -np.inf]), 1),
     ref=mp1(lambda x: mpmath.exp(x * x) * mpmath.erfc(x) if not mpmath.isinf(x) else
             (0 if x > 0 else mpmath.inf)), tol={F32: 2, F64: 8}, ttir=lambda kinds: ['symbol = "erfc"'])

assert set(CASES) == set(L.__all__), sorted(set(L.__all__) ^ set(CASES))

# ---------------------------------------------------------------------------------------------
# Kernel generation
# ---------------------------------------------------------------------------------------------


def _variant_id(name, kinds, out):
    return f"{name}__{'_'.join(kinds)}__{out}"


def _kernel_src(name, kinds, out):
    args = ", ".join(f"X{i}" for i in range(len(kinds)))
    lines = [f"def {_variant_id(name, kinds, out)}({args}, Y, N: tl.constexpr):", "    o = tl.arange(0, N)"]
    for i, k in enumerate(kinds):
        load = f"tl.load(X{i} + o)"
        if k in (U32, U64):
            load += f".to({_TL[k]}, bitcast=True)"
        lines.append(f"    a{i} = {load}")
    call_args = ", ".join(f"a{i}" for i in range(len(kinds)))
    lines.append(f"    r = libdevice.{name}({call_args})")
    lines.append(f"    tl.static_assert(r.dtype == {_TL[out]})")
    if out in (U32, U64):
        lines.append(f"    r = r.to({_TL[I32 if out == U32 else I64]}, bitcast=True)")
    lines.append("    tl.store(Y + o, r)")
    return "\n".join(lines) + "\n"


# Extra kernels: Python scalar arguments and fp16/bf16 inputs.
EXTRA_KERNELS = {
    "pow_int_const": ("def pow_int_const(X0, Y, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
                      "    r = libdevice.pow(tl.load(X0 + o), 3)\n    tl.static_assert(r.dtype == tl.float32)\n"
                      "    tl.store(Y + o, r)\n", ['symbol = "powf"']),
    "pow_float_const_f64": ("def pow_float_const_f64(X0, Y, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
                            "    r = libdevice.pow(tl.load(X0 + o).to(tl.float64), 0.5)\n"
                            "    tl.static_assert(r.dtype == tl.float64)\n    tl.store(Y + o, r)\n",
                            ['symbol = "pow"']),
    "ldexp_const": ("def ldexp_const(X0, Y, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
                    "    r = libdevice.ldexp(tl.load(X0 + o), 3)\n    tl.store(Y + o, r)\n", ['symbol = "ldexpf"']),
    "jn_const": ("def jn_const(X0, Y, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
                 "    r = libdevice.jn(2, tl.load(X0 + o))\n    tl.store(Y + o, r)\n", ['symbol = "jnf"']),
    "fp16_math": ("def fp16_math(X0, Y, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
                  "    x = tl.load(X0 + o).to(tl.float16)\n"
                  "    r = libdevice.sinh(x) + libdevice.exp(x) + libdevice.add_rd(x, x) + libdevice.sinpi(x)\n"
                  "    tl.static_assert(r.dtype == tl.float16)\n"
                  "    tl.static_assert(libdevice.isnan(x).dtype == tl.int32)\n"
                  "    tl.store(Y + o, r.to(tl.float32))\n", ['symbol = "sinhf"', "math.exp"]),
    "bf16_math": ("def bf16_math(X0, Y, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
                  "    x = tl.load(X0 + o).to(tl.bfloat16)\n    r = libdevice.tanh(x) * libdevice.erf(x)\n"
                  "    tl.static_assert(r.dtype == tl.bfloat16)\n    tl.store(Y + o, r.to(tl.float32))\n",
                  ['symbol = "tanhf"', "math.erf"]),
    "mixed_f32_f64": ("def mixed_f32_f64(X0, Y, N: tl.constexpr):\n    o = tl.arange(0, N)\n"
                      "    x = tl.load(X0 + o)\n    r = libdevice.atan2(x, x.to(tl.float64))\n"
                      "    tl.static_assert(r.dtype == tl.float64)\n    tl.store(Y + o, r.to(tl.float32))\n",
                      ['symbol = "atan2"']),
    "scalar_arg": ("def scalar_arg(X0, Y, N: tl.constexpr):\n    x = tl.load(X0)\n"
                   "    r = libdevice.expm1(x) + libdevice.fma_rz(x, 2.0, 1.0) + libdevice.clz(7).to(tl.float32)\n"
                   "    tl.store(Y, r)\n", ['symbol = "expm1f"']),
}


def _all_variants():
    for name in L.__all__:
        for kinds, out in CASES[name].variants:
            yield name, kinds, out


def _module_source(import_line):
    parts = ["import triton\nimport triton.language as tl\n" + import_line + "\n"]
    for name, kinds, out in _all_variants():
        parts.append(_kernel_src(name, kinds, out))
    for src, _ in EXTRA_KERNELS.values():
        parts.append(src)
    return "\n\n".join(parts)


@functools.lru_cache(None)
def _generated_module(flavour):
    """Import a module of undecorated kernel functions, one per function variant.

    flavour "mapped": the kernels use `from triton.language.extra import libdevice` (resolved by the
    backend's module map); "direct": they import this package's libdevice (interpreter).
    """
    import tempfile
    line = ("from triton.language.extra import libdevice"
            if flavour == "mapped" else "from triton_cpu.language import libdevice")
    d = tempfile.mkdtemp(prefix="libdevice_kernels_")
    path = os.path.join(d, f"libdevice_kernels_{flavour}.py")
    with open(path, "w") as f:
        f.write(_module_source(line))
    spec = importlib.util.spec_from_file_location(f"libdevice_kernels_{flavour}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@functools.lru_cache(None)
def _jit(flavour, kid):
    return triton.jit(getattr(_generated_module(flavour), kid))


@functools.lru_cache(None)
def _interp(kid):
    from triton.runtime.interpreter import InterpretedFunction
    return InterpretedFunction(getattr(_generated_module("direct"), kid))


# ---------------------------------------------------------------------------------------------
# API
# ---------------------------------------------------------------------------------------------


def _stock_signatures(path):
    tree = ast.parse(open(path).read())
    return {f.name: [a.arg for a in f.args.args] for f in tree.body if isinstance(f, ast.FunctionDef)}


def test_api_matches_stock():
    import triton.language.extra as extra
    base = os.path.dirname(extra.__file__)
    stock = _stock_signatures(os.path.join(base, "libdevice.py"))
    cuda = _stock_signatures(os.path.join(base, "cuda", "libdevice.py"))
    assert set(stock) == set(L.__all__)
    for name, params in stock.items():
        fn = getattr(L, name)
        assert core_is_builtin(fn), name
        mine = list(fn.signature.parameters)
        assert mine[:-1] == params and mine[-1] == "_semantic", (name, mine)
        if name in cuda:
            assert mine == cuda[name], (name, mine, cuda[name])


def core_is_builtin(fn):
    return getattr(fn, "__triton_builtin__", False)


def test_module_map():
    target = triton.runtime.driver.active.get_current_target()
    backend = triton.backends.backends["cpu"].compiler(target)
    assert backend.get_module_map()["triton.language.extra.libdevice"] is L


# ---------------------------------------------------------------------------------------------
# TTIR
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(None)
def _backend():
    from triton.compiler.compiler import make_backend
    target = triton.runtime.driver.active.get_current_target()
    backend = make_backend(target)
    return target, backend, backend.parse_options({})


def _to_ttir(fn, kinds_store):
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource
    target, backend, opts = _backend()
    sig = {f"X{i}": f"*{k}" for i, k in enumerate(kinds_store)}
    sig.update({"Y": "*fp32", "N": "constexpr"})
    src = ASTSource(fn, sig, {"N": 16})
    ctx = ir.context()
    ir.load_dialects(ctx)
    backend.load_dialects(ctx)
    mod = src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
    mod = backend.make_ttir(mod, {}, opts)
    return str(mod)


def _ttir_params():
    for name, kinds, out in _all_variants():
        yield pytest.param(name, kinds, out, id=_variant_id(name, kinds, out))


@pytest.mark.parametrize("name,kinds,out", list(_ttir_params()))
def test_ttir(name, kinds, out):
    kid = _variant_id(name, kinds, out)
    fn = _jit("mapped", kid)
    # the output pointer type only matters for the final store's implicit cast
    ttir = _to_ttir(fn, [_STORE[k] for k in kinds])
    assert "tt.call" not in ttir
    expect = CASES[name].ttir
    if expect is None:
        assert "tt.extern_elementwise" not in ttir, f"{name} should not call libm:\n{ttir}"
    else:
        for s in expect(kinds):
            assert s in ttir, f"{name}{kinds}: expected {s!r} in TTIR:\n{ttir}"
        for line in ttir.splitlines():  # every extern is a plain libm symbol
            if "tt.extern_elementwise" in line:
                assert 'libname = ""' in line and 'libpath = ""' in line and "pure = true" in line, line
                assert "__nv_" not in line and "__ocml" not in line, line


@pytest.mark.parametrize("kid", list(EXTRA_KERNELS))
def test_ttir_extra(kid):
    fn = _jit("mapped", kid)
    ttir = _to_ttir(fn, ["fp32"])
    for s in EXTRA_KERNELS[kid][1]:
        assert s in ttir, f"expected {s!r} in TTIR:\n{ttir}"


# ---------------------------------------------------------------------------------------------
# Numeric checks (interpreter now, compiled backend later)
# ---------------------------------------------------------------------------------------------


def _inputs(name, kinds):
    rng = np.random.default_rng(zlib.crc32(f"{_RNG_SEED}-{name}-{kinds}".encode()))
    return CASES[name].gen(kinds, rng)


def _py(v, kind):
    if kind in (F32, F64, F16):
        return float(v)
    return int(v)


def _ulps(got, ref, kind):
    """|got - ref| in ulps of `kind` at ref (ref: exact/high-precision value)."""
    prec, emin, _ = _FMT[kind]
    ref = mpmath.mpf(ref)
    if ref == 0:
        e = emin
    else:
        e = max(int(mpmath.floor(mpmath.log(abs(ref), 2))), emin)
    ulp = mpmath.ldexp(1, e - prec + 1)
    return float(abs(mpmath.mpf(got) - ref) / ulp)


def _check(name, kinds, out, args, got):
    c = CASES[name]
    bad = []
    for i in range(N):
        if name in _RAW_BITS:  # bit patterns as integers (a NaN through a Python float loses its payload)
            pargs = [int(a[i:i + 1].view(np.uint32 if k == F32 else np.uint64)[0]) for a, k in zip(args, kinds)]
        else:
            pargs = [_py(a[i], k) for a, k in zip(args, kinds)]
        if name in _INT_FUNCS:
            ref = _int_ref(name, pargs, kinds, out)
        else:
            ref = c.ref(*pargs, out)
        g = got[i]
        if out in (I32, U32, I64, U64):
            ok = int(g) == int(ref) if out in (I32, I64) else int(g) % 2**_kbits(out) == int(ref) % 2**_kbits(out)
            if not ok:
                bad.append((pargs, int(g), int(ref)))
            continue
        g = float(g)
        if isinstance(ref, mpmath.mpf):
            rnan, rinf = mpmath.isnan(ref), mpmath.isinf(ref)
        else:
            ref = float(ref)
            rnan, rinf = ref != ref, math.isinf(ref)
        if rnan or g != g:
            if not (rnan and g != g):
                bad.append((pargs, g, ref))
            continue
        tol = c.tol.get(out)
        maxf = float(np.finfo(_NP[out]).max)
        if rinf or math.isinf(g):
            # a finite reference beyond the format's range may round to inf
            if not (math.isinf(g) and (rinf or abs(float(ref)) > maxf) and (g > 0) == (ref > 0)):
                bad.append((pargs, g, ref))
            continue
        if c.rtol is not None:
            if abs(g - float(ref)) > c.rtol * abs(float(ref)):
                bad.append((pargs, g, ref))
        elif tol is None:  # exact, including the sign of zero
            rf = float(ref)
            if g != rf or math.copysign(1, g) != math.copysign(1, rf):
                bad.append((pargs, g, rf))
        elif _ulps(g, ref, out) > tol and abs(g - float(ref)) > c.atol.get(out, 0.0):
            bad.append((pargs, g, ref, _ulps(g, ref, out)))
    assert not bad, f"{name}{kinds}: {len(bad)} mismatches (args, got, ref[, ulps]): {bad[:6]}"


def _run(kernel, name, kinds, out):
    import torch
    args = _inputs(name, kinds)
    xs = [torch.from_numpy(np.ascontiguousarray(a.view(_NP_STORE[k]))) for a, k in zip(args, kinds)]
    y = torch.empty(N, dtype={F16: torch.float16, F32: torch.float32, F64: torch.float64, I32: torch.int32,
                              U32: torch.int32, I64: torch.int64, U64: torch.int64}[out])
    kernel[(1, )](*xs, y, N)
    got = y.numpy()
    if out in (U32, U64):
        got = got.view(_NP[out])
    return args, got


# ----- interpreter harness ---------------------------------------------------------------------

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_CT = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double,
       np.dtype(np.int32): ctypes.c_int}


def _extern_via_ctypes(self, lib_name, lib_path, symbol, arg_list, ret_type, is_pure):
    """InterpreterBuilder.create_extern_elementwise: call glibc's libm symbol per element."""
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype
    fn = getattr(_LIBM, symbol)  # AttributeError: no such libm symbol
    arrays = np.broadcast_arrays(*[a.data for a in arg_list])
    fn.argtypes = [_CT[a.dtype] for a in arrays]
    rdt = _get_np_dtype(ret_type)
    fn.restype = _CT[rdt]
    flat = [a.reshape(-1).tolist() for a in arrays]
    res = np.array([fn(*vals) for vals in zip(*flat)], dtype=rdt).reshape(arrays[0].shape)
    scalar = ret_type.scalar if hasattr(ret_type, "scalar") else ret_type
    return TensorHandle(res, scalar)


@pytest.fixture
def interpreter(monkeypatch):
    """Per test (the compiled path must see the unpatched builtins): the builtins get the
    interpreter's semantic, extern calls go to libm through ctypes."""
    from triton.runtime import interpreter as I

    def bind(fn):
        return lambda *a, **k: fn(*a, **{**k, "_semantic": I.interpreter_semantic})

    for name in L.__all__:
        monkeypatch.setattr(L, name, bind(getattr(L, name)))
    monkeypatch.setattr(I.InterpreterBuilder, "create_extern_elementwise", _extern_via_ctypes)


def _num_params():
    for name, kinds, out in _all_variants():
        yield pytest.param(name, kinds, out, id=_variant_id(name, kinds, out))


@pytest.mark.parametrize("name,kinds,out", list(_num_params()))
def test_interpreter(interpreter, name, kinds, out):
    kid = _variant_id(name, kinds, out)
    with np.errstate(all="ignore"):
        args, got = _run(_interp(kid), name, kinds, out)
    _check(name, kinds, out, args, got)


def test_interpreter_fp16(interpreter):
    import torch
    x = torch.linspace(-2, 2, N, dtype=torch.float32)
    y = torch.empty(N, dtype=torch.float32)
    with np.errstate(all="ignore"):
        _interp("fp16_math")[(1, )](x, y, N)
    h = x.to(torch.float16).double()
    ref = (torch.sinh(h).half().double() + torch.exp(h).half().double()).half().double()
    ref = (ref + (2 * h).half().double()).half().double()  # add_rd of exact values = 2x (exact in fp16)
    ref = (ref + torch.sin(math.pi * h).half().double()).half()
    torch.testing.assert_close(y.half(), ref, atol=1e-2, rtol=1e-2)


# ----- compiled backend ------------------------------------------------------------------------


@functools.lru_cache(None)
def _compiler_ready():
    """True once the CPU backend can compile and launch a trivial kernel."""
    try:
        import torch

        @triton.jit
        def _probe(X, Y, N: tl.constexpr):
            o = tl.arange(0, N)
            tl.store(Y + o, tl.load(X + o) + 1.0)

        x = torch.arange(16, dtype=torch.float32)
        y = torch.empty_like(x)
        _probe[(1, )](x, y, 16)
        return bool(torch.equal(y, x + 1))
    except Exception:
        return False


# Numeric end-to-end test on the real backend.  It skips itself while `_compiler_ready()` is False
# (a tree where the ttcir -> llir -> so pipeline cannot run kernels); otherwise it runs every
# function variant on CPU tensors through the backend (module map included) with the same
# references and tolerances as the interpreter test above.
@pytest.mark.skipif(not _compiler_ready(), reason="CPU compiler pipeline cannot run kernels yet")
@pytest.mark.parametrize("name,kinds,out", list(_num_params()))
def test_compiled(name, kinds, out):
    kid = _variant_id(name, kinds, out)
    args, got = _run(_jit("mapped", kid), name, kinds, out)
    _check(name, kinds, out, args, got)
