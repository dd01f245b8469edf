"""Accuracy and throughput of the kernels' math functions, per math library.

    python -m triton_cpu.tools.math_accuracy [--n 20000] [--libs sleef,libmvec,scalar] [--markdown]

For each function of FUNCTIONS, in fp32 and fp64, and each math library (the `math_lib`
compile option: SLEEF, glibc's libmvec, scalar libm), one Triton kernel applies the function
to the same inputs. Reported per cell:
  * max ulp: the largest error, in units in the last place of the result type, against
    float64 numpy for fp32 results and 100-bit mpmath for fp64 results, over `n` inputs:
    half in the function's common range, half spread over its whole domain (log-uniform
    magnitudes, both signs where defined), plus the edges (0, the smallest normal, the
    largest finite, the arguments where the result overflows);
  * throughput: elements per nanosecond on one thread, best of 50 launches on 2^18 inputs
    of the common range.
sqrt and rsqrt are the hardware square root (and a division) whatever the library.
python/test/test_math_lib.py checks the same errors against `bound` (MAX_ULP per library).
"""
import argparse
import functools
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

# Error bounds the tests enforce, per library (ulp of the result type). SLEEF's u10
# functions are documented to 1.0 ulp (erfc 1.5, hypot 0.5); 0.01 ulp of slack for the
# reference's own rounding. libmvec: glibc documents up to 4 ulp. libm: glibc's scalar
# functions are within 2 ulp for these.
MAX_ULP = {"sleef": 1.01, "libmvec": 4.0, "scalar": 2.0}


def inlined(lib: str, name: str, dtype) -> bool:
    """Is `name` emitted inline (codegen/inline_math.py) rather than called from `lib`?"""
    from triton_cpu.codegen import cgutils as cg, inline_math
    return inline_math.emitter(lib, name, cg.F32 if np.dtype(dtype) == np.float32 else cg.F64) is not None


def bound(lib: str, name: str, dtype=np.float32) -> float:
    """The error bound `lib` is held to for `name` in `dtype`."""
    if inlined(lib, name, dtype):
        return 1.0  # the inline functions are held to SLEEF's u10 bound in every mode
    if name == "rsqrt":
        return 1.5  # 1 / sqrt(x): two correctly rounded operations, whatever the library
    if lib == "sleef" and name in ("sinh", "cosh"):
        # Near the overflow threshold SLEEF 3.5 returns infinity; those lanes are recomputed
        # by libmvec (codegen/math_lib.py, SLEEF_OVERFLOW_CHECK) and have its accuracy.
        return MAX_ULP["libmvec"]
    return MAX_ULP[lib]


@dataclass(frozen=True)
class Function:
    arity: int
    numpy: Callable | None  # float64 reference for fp32 results (None: use mp)
    mp: Callable  # (mpmath module, mpf arguments...) -> reference for fp64 results
    common: tuple  # (lo, hi) uniform range of ordinary inputs
    domain: str  # "all", "positive", "above-1" (x >= -1)


def _mp():
    import mpmath
    mpmath.mp.prec = 100
    return mpmath


def _np_rsqrt(x):
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(x)


# The README table's functions (`python -m triton_cpu.tools.math_accuracy`).
FUNCTIONS = {
    "exp": Function(1, np.exp, lambda mp, x: mp.exp(x), (-10, 10), "all"),
    "exp2": Function(1, np.exp2, lambda mp, x: mp.power(2, x), (-10, 10), "all"),
    "log": Function(1, np.log, lambda mp, x: mp.log(x), (0.01, 100), "positive"),
    "log2": Function(1, np.log2, lambda mp, x: mp.log(x, 2), (0.01, 100), "positive"),
    "sin": Function(1, np.sin, lambda mp, x: mp.sin(x), (-10, 10), "all"),
    "cos": Function(1, np.cos, lambda mp, x: mp.cos(x), (-10, 10), "all"),
    "tan": Function(1, np.tan, lambda mp, x: mp.tan(x), (-1.5, 1.5), "all"),
    "tanh": Function(1, np.tanh, lambda mp, x: mp.tanh(x), (-5, 5), "all"),
    "erf": Function(1, None, lambda mp, x: mp.erf(x), (-4, 4), "all"),
    "pow": Function(2, np.power, lambda mp, x, y: mp.power(x, y), (0.01, 10), "positive"),
    "sqrt": Function(1, np.sqrt, lambda mp, x: mp.sqrt(x), (0.01, 100), "positive"),
    "rsqrt": Function(1, _np_rsqrt, lambda mp, x: 1 / mp.sqrt(x), (0.01, 100), "positive"),
    "atan2": Function(2, np.arctan2, lambda mp, y, x: mp.atan2(y, x), (-10, 10), "all"),
    "sinh": Function(1, np.sinh, lambda mp, x: mp.sinh(x), (-10, 10), "all"),
    "cosh": Function(1, np.cosh, lambda mp, x: mp.cosh(x), (-10, 10), "all"),
    "log1p": Function(1, np.log1p, lambda mp, x: mp.log1p(x), (-0.5, 10), "above-1"),
    "expm1": Function(1, np.expm1, lambda mp, x: mp.expm1(x), (-2, 2), "all"),
}
# Further functions the kernel computes (tests of SLEEF's edges), not in the table.
EXTRA_FUNCTIONS = {
    "asinh": Function(1, np.arcsinh, lambda mp, x: mp.asinh(x), (-10, 10), "all"),
    "acosh": Function(1, np.arccosh, lambda mp, x: mp.acosh(x), (1, 10), "positive"),
    "tgamma": Function(1, None, lambda mp, x: mp.gamma(x), (0.5, 10), "all"),
}


@functools.lru_cache(None)
def _kernel():
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    @triton.jit
    def apply(x_ptr, y_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m, other=1)
        y = tl.load(y_ptr + offs, mask=m, other=1)
        if FN == "exp":
            r = tl.exp(x)
        elif FN == "exp2":
            r = tl.exp2(x)
        elif FN == "log":
            r = tl.log(x)
        elif FN == "log2":
            r = tl.log2(x)
        elif FN == "sin":
            r = tl.sin(x)
        elif FN == "cos":
            r = tl.cos(x)
        elif FN == "tan":
            r = libdevice.tan(x)
        elif FN == "tanh":
            r = libdevice.tanh(x)
        elif FN == "erf":
            r = tl.erf(x)
        elif FN == "pow":
            r = libdevice.pow(x, y)
        elif FN == "sqrt":
            r = tl.sqrt(x)
        elif FN == "rsqrt":
            r = tl.rsqrt(x)
        elif FN == "atan2":
            r = libdevice.atan2(x, y)
        elif FN == "sinh":
            r = libdevice.sinh(x)
        elif FN == "cosh":
            r = libdevice.cosh(x)
        elif FN == "log1p":
            r = libdevice.log1p(x)
        elif FN == "expm1":
            r = libdevice.expm1(x)
        elif FN == "asinh":
            r = libdevice.asinh(x)
        elif FN == "acosh":
            r = libdevice.acosh(x)
        else:
            tl.static_assert(FN == "tgamma")
            r = libdevice.tgamma(x)
        tl.store(out_ptr + offs, r, mask=m)

    return apply


def _launch(name, x, y, out, lib, threads=0, vector_bits=0, block=1024):
    _kernel()[(max(1, -(-x.numel() // block)),)](x, y, out, x.numel(), FN=name, BLOCK=block, math_lib=lib,
                                                  num_threads=threads, vector_bits=vector_bits)


def run(name: str, args, lib: str, threads: int = 0, vector_bits: int = 0):
    """The kernel's results for `name` on numpy `args` (one array per argument)."""
    import torch
    xs = [torch.from_numpy(np.ascontiguousarray(a)) for a in args]
    out = torch.empty_like(xs[0])
    _launch(name, xs[0], xs[-1], out, lib, threads, vector_bits)
    return out.numpy()


def _overflow_edge(name, dtype):
    """Arguments around which the function's result leaves the finite range."""
    top = math.log(float(np.finfo(dtype).max))
    return {"exp": [top], "expm1": [top], "sinh": [top + math.log(2), -top - math.log(2)],
            "cosh": [top + math.log(2), -top - math.log(2)], "exp2": [top / math.log(2)]}.get(name, [])


def sample(name: str, dtype, n: int, seed: int = 0):
    """`n` inputs (per argument) for `name`: common range, whole domain, edges."""
    f = FUNCTIONS[name]
    rng = np.random.default_rng(seed)
    fi = np.finfo(dtype)
    lo, hi = f.common

    def spread(k):
        mags = np.exp(rng.uniform(math.log(float(fi.tiny)), math.log(float(fi.max)), k))
        if f.domain == "positive":
            return mags
        if f.domain == "above-1":
            return np.where(rng.random(k) < 0.5, mags, -rng.random(k))
        signs = np.where(rng.random(k) < 0.5, -1.0, 1.0)
        return signs * mags

    def one_arg():
        k = n // 2
        edges = [float(fi.tiny), float(fi.max), 1.0]
        if f.domain != "positive":
            edges += [0.0, -float(fi.tiny), -float(fi.max) if f.domain == "all" else -1.0, -1.0]
        for e in _overflow_edge(name, dtype):
            edges += list(e + np.linspace(-1.5, 1.5, 64))
        v = np.concatenate([rng.uniform(lo, hi, k), spread(max(0, n - k - len(edges))), edges])
        return v.astype(dtype)

    if f.arity == 1:
        return [one_arg()]
    if name == "pow":
        x = one_arg()
        k = n // 2
        y = np.concatenate([rng.uniform(-8, 8, k), rng.uniform(-200, 200, n - k)]).astype(dtype)
        return [x, y[:len(x)]]
    y = one_arg()
    return [one_arg(), y[rng.permutation(len(y))]]


def reference(name: str, args, dtype):
    """(hi, lo): the exact result as a float64 pair (lo = 0 for fp32 results, where the
    float64 reference is exact enough), NaN where the result is undefined."""
    f = FUNCTIONS.get(name) or EXTRA_FUNCTIONS[name]
    wide = [a.astype(np.float64) for a in args]
    if dtype == np.float32 and f.numpy is not None:
        with np.errstate(all="ignore"):
            return f.numpy(*wide), np.zeros(len(wide[0]))
    mp = _mp()
    hi = np.empty(len(wide[0]))
    lo = np.zeros(len(wide[0]))
    for i, xs in enumerate(zip(*wide)):
        try:
            v = f.mp(mp, *[mp.mpf(float(x)) for x in xs])
        except (ValueError, ZeroDivisionError, OverflowError):
            v = mp.nan
        if isinstance(v, mp.mpc) or mp.isnan(v):
            hi[i] = math.nan
            continue
        if mp.isinf(v) or abs(v) > mp.mpf(2) ** 1100:
            hi[i] = math.inf if v > 0 else -math.inf
            continue
        hi[i] = float(v)
        lo[i] = float(v - mp.mpf(hi[i])) if math.isfinite(hi[i]) else 0.0
    return hi, lo


def ulp_errors(got, ref, dtype):
    """|got - exact| in ulp of the exact value's binade in `dtype` (subnormals: of the
    smallest normal binade). NaN where NaN was due counts 0; a NaN, infinity or finite value
    where the other was due counts inf; a result that must overflow and does counts 0."""
    hi, lo = ref
    fi = np.finfo(dtype)
    g = got.astype(np.float64)
    err = np.zeros(len(g))
    with np.errstate(all="ignore"):
        nan_ref = np.isnan(hi)
        limit = float(fi.max) * (1 + float(fi.eps) / 2)  # round-to-nearest overflows from here
        overflow = ~nan_ref & (np.abs(hi) >= limit)
        finite = ~nan_ref & ~overflow
        exponent = np.maximum(np.floor(np.log2(np.abs(np.where(finite & (hi != 0), hi, 1.0)))), fi.minexp)
        ulp = np.exp2(exponent - fi.nmant)
        err[finite] = (np.abs((g - hi) - lo) / ulp)[finite]
        err[finite & ~np.isfinite(g)] = np.inf
        err[nan_ref & ~np.isnan(g)] = np.inf
        err[overflow & ~(np.isinf(g) & (np.sign(g) == np.sign(hi)))] = np.inf
    return err


def throughput(name: str, dtype, lib: str, n: int = 1 << 18, repeats: int = 50) -> float:
    """Elements per nanosecond on one thread (best of `repeats` launches), inputs from the
    common range, 2^18 of them: a few MB that stay in the L2/L3 caches between launches."""
    import torch
    f = FUNCTIONS[name]
    rng = np.random.default_rng(1)
    xs = [torch.from_numpy(rng.uniform(*f.common, n).astype(dtype)) for _ in range(f.arity)]
    out = torch.empty_like(xs[0])
    best = math.inf
    for i in range(repeats + 1):
        t = time.perf_counter()
        _launch(name, xs[0], xs[-1], out, lib, threads=1)
        if i:  # the first launch compiles
            best = min(best, time.perf_counter() - t)
    return n / (best * 1e9)


def measure(libs, dtypes=(np.float32, np.float64), n=20000, speed=True, names=None):
    """{(name, dtype name, lib): (max ulp, worst input, elements per ns or None)}."""
    rows = {}
    for name in names or FUNCTIONS:
        for dt in dtypes:
            args = sample(name, dt, n)
            ref = reference(name, args, dt)
            for lib in libs:
                err = ulp_errors(run(name, args, lib), ref, dt)
                i = int(np.argmax(err))
                worst = tuple(float(a[i]) for a in args)
                rows[name, np.dtype(dt).name, lib] = (float(err[i]), worst, throughput(name, dt, lib) if speed else None)
    return rows


def markdown(rows, libs) -> str:
    heads = {"sleef": "SLEEF", "libmvec": "libmvec", "scalar": "libm"}
    out = []
    for dt in ("float32", "float64"):
        names = sorted({k[0] for k in rows if k[1] == dt}, key=list(FUNCTIONS).index)
        if not names:
            continue
        out.append(f"| {dt} | " + " | ".join(f"{heads[l]} max ulp" for l in libs) + " | "
                   + " | ".join(f"{heads[l]} elem/ns" for l in libs) + " |")
        out.append("|---" * (1 + 2 * len(libs)) + "|")
        for name in names:
            cells = [rows[name, dt, l] for l in libs]
            ulps = [("inf" if math.isinf(c[0]) else f"{c[0]:.2f}") for c in cells]
            speeds = [("-" if c[2] is None else f"{c[2]:.2f}") for c in cells]
            label = name + ("*" if any(inlined(l, name, dt) for l in libs) else "")
            out.append(f"| {label} | " + " | ".join(ulps) + " | " + " | ".join(speeds) + " |")
        out.append("")
    if any(inlined(l, k[0], k[1]) for k in rows for l in libs):
        out.append("\\* emitted inline (codegen/inline_math.py) in the sleef and libmvec modes: "
                   "the same code in both columns.\n")
    return "\n".join(out)


def main(argv=None):
    from triton_cpu import llvm, sleef
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000, help="inputs per function and type")
    p.add_argument("--libs", default=None, help="comma-separated (default: sleef if found, libmvec, scalar)")
    p.add_argument("--only", default=None, help="comma-separated function names")
    p.add_argument("--no-speed", action="store_true", help="skip the throughput columns")
    args = p.parse_args(argv)
    libs = args.libs.split(",") if args.libs else [l for l in ("sleef", "libmvec", "scalar")
                                                     if l != "sleef" or sleef.available()]
    names = args.only.split(",") if args.only else None
    rows = measure(libs, n=args.n, speed=not args.no_speed, names=names)
    h = llvm.host()
    print(f"host: {h.cpu}, {h.vector_bits}-bit vectors; SLEEF: {sleef.status()}; {args.n} inputs per cell\n")
    print(markdown(rows, libs))
    bad = [(k, v) for k, v in rows.items() if v[0] > bound(k[2], k[0], k[1])]
    for (name, dt, lib), (u, worst, _) in bad:
        print(f"above the {lib} bound: {name} {dt}: {u:.3g} ulp at {worst}")


if __name__ == "__main__":
    main()
