"""Vectorized math: SLEEF or glibc's libmvec, LLVM intrinsics for what the hardware does
natively, scalar libm per lane for what neither library has.

`MathLib.call` applies a libm function (named by its double variant: "exp", "atan2") to
f32/f64 scalars or vectors. The library is the kernel's `math_lib` option (sleef.py):
  * "sleef": `Sleef_<fn><f|d><lanes>_<ulp><isa>`, the 1.0-ulp variant (`u10`; `u05` or
    `u15` where SLEEF has no u10: hypot, erfc), at the lowered vector width capped by the
    host's registers (avx512f, avx2 / avx, avx2128 / sse4 / sse2); scalars call SLEEF's
    one-lane `purecfma`/`purec` variant, so a value gets the same result in a vector lane
    and in a scalar tail. What SLEEF lacks falls back to libmvec, then libm;
  * "libmvec": glibc's vector ABI (`_ZGV{b,c,d,e}N<lanes>v_<fn>`), up to 4 ulp as glibc
    documents; what it lacks is scalar libm per lane;
  * "scalar": libm per lane (the reference the others are measured against).
In the "sleef" and "libmvec" modes, fp32 exp, exp2, erf and tanh are not called but emitted
inline (inline_math.py: as accurate as SLEEF's u10, faster, and no call in the loop).
Vectors narrower than the chosen width are padded to it (the extra lanes are discarded);
vectors wider are split. sqrt/floor/ceil/fma/fabs are exact LLVM intrinsics in every mode.
fp16 and bf16 inputs are computed in fp32 by the callers and rounded once.
"""
import llvmlite.ir as ir

from triton_cpu import sleef
from triton_cpu.codegen import cgutils as cg
from triton_cpu.codegen import inline_math

# libm name (double variant) -> number of vector arguments, for functions libmvec has.
LIBMVEC = {
    "exp": 1, "log": 1, "sin": 1, "cos": 1, "pow": 2, "exp2": 1, "log2": 1, "log10": 1, "exp10": 1,
    "expm1": 1, "log1p": 1, "tan": 1, "tanh": 1, "sinh": 1, "cosh": 1, "asin": 1, "acos": 1, "atan": 1,
    "asinh": 1, "acosh": 1, "atanh": 1, "atan2": 2, "erf": 1, "erfc": 1, "cbrt": 1, "hypot": 2,
}

# libm name -> (arguments, SLEEF's accuracy suffix: its most accurate variant; "" for exact
# functions, which have none).
SLEEF = {
    **{f: (1, "u10") for f in (
        "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh",
        "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "erf", "cbrt", "lgamma",
        "tgamma")},
    "erfc": (1, "u15"), "pow": (2, "u10"), "atan2": (2, "u10"), "hypot": (2, "u05"), "fmod": (2, ""),
}

# SLEEF 3.5's results that need a second opinion, by function and precision (measured
# against mpmath by tools/math_accuracy.py and by bisecting the overflow thresholds): these
# return an infinity for finite arguments before the true overflow - sinh/cosh from |x| >
# 88.7 in fp32 and 709.8 in fp64, asinh/acosh from 1.8e19 / 1.3e154, log1p from 1e38 /
# 1e307, fp64 exp (and pow, which shares its threshold) 1.7e-6 before log(DBL_MAX). exp2,
# exp10, expm1 and fp32 exp overflow exactly where they should. A vector whose result has
# such a lane is recomputed with the fallback library, which also handles the true
# overflows; the check is a few compares and a branch not taken on ordinary input.
SLEEF_OVERFLOW_CHECK = {
    **{f: (32, 64) for f in ("sinh", "cosh", "asinh", "acosh", "log1p", "pow", "tgamma")},
    "exp": (64,),
}
# tgamma's subnormal results (fp32 x < -34, fp64 x < -170) are off by up to hundreds of ulp:
# recomputed the same way.
SLEEF_SUBNORMAL_CHECK = frozenset(("tgamma",))

# Functions with a vector variant in some library: callers route these through `call`.
VECTOR_FUNCTIONS = frozenset(LIBMVEC) | frozenset(SLEEF)

# MLIR math op -> libm double name.
MATH_OPS = {
    "math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.log10": "log10",
    "math.sin": "sin", "math.cos": "cos", "math.tan": "tan", "math.tanh": "tanh", "math.sinh": "sinh",
    "math.cosh": "cosh", "math.asin": "asin", "math.acos": "acos", "math.atan": "atan", "math.asinh": "asinh",
    "math.acosh": "acosh", "math.atanh": "atanh", "math.erf": "erf", "math.expm1": "expm1",
    "math.log1p": "log1p", "math.cbrt": "cbrt", "math.powf": "pow", "math.atan2": "atan2",
}

# Native LLVM intrinsics (one instruction or an exact expansion).
INTRINSICS = {
    "math.sqrt": "llvm.sqrt", "math.floor": "llvm.floor", "math.ceil": "llvm.ceil", "math.absf": "llvm.fabs",
    "math.fma": "llvm.fma", "math.trunc": "llvm.trunc", "math.roundeven": "llvm.roundeven",
    "math.round": "llvm.round", "math.copysign": "llvm.copysign",
}


class MathLib:
    """Math calls for one kernel: `library` is "sleef", "libmvec" or "scalar"; vector calls
    are at most `vector_bits` wide and never wider than what `features` (an LLVM feature
    string, default the host's) can run: a kernel lowered for 512-bit vectors on an AVX2
    host calls the 256-bit variants."""

    def __init__(self, vector_bits: int, library: str = "libmvec", features: str | None = None):
        if features is None:
            from triton_cpu import llvm
            features = llvm.host().features
        feats = set(features.split(","))
        self.has = lambda f: f"+{f}" in feats
        native = 512 if self.has("avx512f") else 256 if self.has("avx") else 128
        self.vector_bits = min(vector_bits, native)
        self.library = library
        if library == "sleef":
            self._fallback = MathLib(vector_bits, "libmvec", features)

    def call(self, builder: ir.IRBuilder, base: str, args, ret_elem: ir.Type | None = None):
        """`base` (a libm double name) applied elementwise to f32/f64 scalars or vectors."""
        elem = cg.scalar_of(args[0].type)
        ret_elem = ret_elem or elem
        vector = isinstance(args[0].type, ir.VectorType)
        inline = inline_math.emitter(self.library, base, elem) if ret_elem == elem else None
        if inline is not None:
            return inline(builder, *args)
        if ret_elem == elem and elem in (cg.F32, cg.F64):
            fn, width = self._variant(builder.module, base, len(args), elem, cg.lanes(args[0].type) if vector else 1)
            if fn is not None:
                r = self._apply(builder, fn, width, args, vector)
                if fn.name.startswith("Sleef_") and (32 if elem == cg.F32 else 64) in SLEEF_OVERFLOW_CHECK.get(base, ()):
                    r = self._recheck(builder, base, args, r)
                return r
        name = base + "f" if elem == cg.F32 else base
        fn = cg.declare(builder.module, name, ret_elem, [elem] * len(args))
        fn.attributes.add("nounwind")
        return cg.map_lanes(builder, lambda *xs: builder.call(fn, list(xs)), args, ret_elem)

    # -- choosing a variant ----------------------------------------------------
    def _variant(self, module, base, nargs, elem, n):
        """(declared function, lanes) of the vector or one-lane function to call for `n`
        lanes, or (None, 0) when the lanes go to scalar libm."""
        bits = 32 if elem == cg.F32 else 64
        if n > 1 and n & (n - 1):
            return None, 0  # not a power of two: no chunking scheme; libm per lane
        widest = self.vector_bits // bits
        w = min(widest, max(n, 128 // bits)) if n > 1 else 1
        name = next(self._names(base, nargs, elem, bits, w), None)
        if name is None:
            return None, 0
        t = ir.VectorType(elem, w) if w > 1 else elem
        fn = cg.declare(module, name, t, [t] * nargs)
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
        return fn, w

    def _names(self, base, nargs, elem, bits, w):
        """Candidate symbols for `w` lanes, best first."""
        suffix = "f" if elem == cg.F32 else "d"
        if self.library == "sleef" and SLEEF.get(base, (0,))[0] == nargs:
            isa = self._sleef_isa(w * bits) if w > 1 else ("purecfma" if self.has("fma") else "purec")
            ulp = SLEEF[base][1]
            name = f"Sleef_{base}{suffix}{w}_{ulp}{isa}" if ulp else f"Sleef_{base}{suffix}{w}_{isa}"
            if isa and sleef.exports(name):
                yield name
        if self.library in ("sleef", "libmvec") and LIBMVEC.get(base) == nargs and w > 1:
            isa = self._libmvec_isa(w * bits)
            if isa:
                yield f"_ZGV{isa}N{w}{'v' * nargs}_{base}{'f' if elem == cg.F32 else ''}"

    def _sleef_isa(self, width):
        fma = self.has("fma")
        if width == 512:
            return "avx512f" if self.has("avx512f") else None
        if width == 256:
            return "avx2" if self.has("avx2") and fma else "avx" if self.has("avx") else None
        return "avx2128" if self.has("avx2") and fma else "sse4" if self.has("sse4.1") else "sse2"

    def _libmvec_isa(self, width):
        # x86 vector ABI letters: b = SSE, c = AVX, d = AVX2, e = AVX-512.
        if width == 512:
            return "e" if self.has("avx512f") else None
        if width == 256:
            return "d" if self.has("avx2") else "c" if self.has("avx") else None
        return "b"

    def _recheck(self, builder, base, args, r):
        """`r`, with the lanes SLEEF may have got wrong (SLEEF_OVERFLOW_CHECK) recomputed by
        libmvec / libm in a branch taken only when some lane needs it."""
        b = builder
        t = r.type
        inf = cg.const(t, float("inf"))
        fabs = lambda v: cg.call_intrinsic(b, "llvm.fabs", [t], t, [v])  # noqa: E731
        bad = b.fcmp_ordered("==", fabs(r), inf)
        for a in args:
            bad = b.and_(bad, b.fcmp_ordered("!=", fabs(a), inf))
        if base in SLEEF_SUBNORMAL_CHECK:
            tiny = cg.const(t, float.fromhex("0x1p-126") if cg.scalar_of(t) == cg.F32 else float.fromhex("0x1p-1022"))
            ar = fabs(r)
            bad = b.or_(bad, b.and_(b.fcmp_ordered("<", ar, tiny), b.fcmp_ordered("!=", ar, cg.const(t, 0.0))))
        any_bad = bad
        if isinstance(t, ir.VectorType):
            any_bad = cg.call_intrinsic(b, "llvm.vector.reduce.or", [bad.type], cg.I1, [bad])
        return cg.branch_value(b, any_bad, lambda: b.select(bad, self._fallback.call(b, base, args), r), r,
                               names=(f"{base}.recheck", None, f"{base}.checked"))

    # -- calling it --------------------------------------------------------------
    @staticmethod
    def _apply(builder, fn, w, args, vector):
        if not vector:
            return builder.call(fn, list(args))
        n = cg.lanes(args[0].type)
        if n < w:
            # Pad to the variant's width; lanes n.. are zeros and discarded.
            zero = ir.Constant(args[0].type, None)
            widen = ir.Constant(ir.VectorType(cg.I32, w), list(range(n)) + [n] * (w - n))
            r = builder.call(fn, [builder.shuffle_vector(a, zero, widen) for a in args])
            return builder.shuffle_vector(r, cg.undef(r.type),
                                          ir.Constant(ir.VectorType(cg.I32, n), list(range(n))))
        chunks = [cg.split(builder, a, w) for a in args]
        return cg.concat(builder, [builder.call(fn, list(parts)) for parts in zip(*chunks)])
