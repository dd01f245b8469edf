"""Which native function a `tt.extern_elementwise` calls on a CPU.

Kernels reach extern functions three ways:
  * `triton.language.extra.libdevice` (the portable module): the backend's module map
    replaces it by the CPU libdevice, which emits core ops or libm symbols;
  * a GPU vendor's module, `triton.language.extra.cuda.libdevice` or
    `triton.language.extra.hip.libdevice` (real libraries import these directly): the
    module map replaces them by the CPU libdevice too, function for function, so the
    calls compile to the same vectorized code;
  * a hand-written `core.extern_elementwise(lib, path, args, {types: (symbol, ret)})`
    naming a vendor symbol (`__nv_erff`, `__ocml_erf_f32`) or a C library symbol.

`resolve` maps the third kind: a vendor symbol whose function is a C99 libm function
becomes that libm symbol (`__nv_erff` -> `erff`, `__ocml_pow_f64` -> `pow`), with the
same signature; any other symbol is kept if the process's C libraries export it. What
resolves to nothing is reported at compile time (the caller names the kernel and line),
never left to fail when the kernel is loaded.
"""
import ctypes
import functools

# C99 <math.h> functions of floating-point arguments returning their argument's type,
# except ilogb (int result) and ldexp/scalbn (an int second argument), as in CUDA.
C99_MATH = frozenset("""
    acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp10 exp2
    expm1 fabs fdim floor fma fmax fmin fmod hypot ilogb j0 j1 jn ldexp lgamma log log10 log1p
    log2 logb nearbyint nextafter pow remainder rint round scalbn sin sinh sqrt tan tanh tgamma
    trunc y0 y1 yn
""".split())


def _vendor_to_libm(symbol: str) -> str | None:
    """The libm symbol for a CUDA (`__nv_`) or ROCm (`__ocml_`) math function, if any."""
    if symbol.startswith("__nv_"):
        name = symbol[len("__nv_"):]
        base = name[:-1] if name.endswith("f") and name[:-1] in C99_MATH else name
        return name if base in C99_MATH else None
    if symbol.startswith("__ocml_"):
        base, _, suffix = symbol[len("__ocml_"):].rpartition("_")
        if base in C99_MATH and suffix in ("f32", "f64"):
            return base + ("f" if suffix == "f32" else "")
    return None


@functools.lru_cache(maxsize=None)
def _exported(symbol: str) -> bool:
    """Does the process (Python links libm and libc, as the kernels do) export `symbol`?"""
    return hasattr(ctypes.CDLL(None), symbol)


def libm_base(symbol: str) -> str | None:
    """The C99 function `symbol` is, without its float suffix (`powf`, `__nv_powf`, `pow`:
    `pow`), or None."""
    name = _vendor_to_libm(symbol) if symbol.startswith(("__nv_", "__ocml_")) else symbol
    if name in C99_MATH:
        return name
    if name and name.endswith("f") and name[:-1] in C99_MATH:
        return name[:-1]
    return None


def resolve(symbol: str) -> str | None:
    """The symbol the kernel calls for `symbol`, or None when the CPU has no such function."""
    if symbol.startswith(("__nv_", "__ocml_")):
        return _vendor_to_libm(symbol)
    return symbol if _exported(symbol) else None
