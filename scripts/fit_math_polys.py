"""Derives the polynomial coefficients of the inlined fp32 math functions
(python/triton_cpu/codegen/inline_math.py) and prints them as hex floats.

    python scripts/fit_math_polys.py

Each fit minimizes the largest error (relative or absolute, as the function's scheme needs)
of the function, not of the polynomial, over its interval: Lawson's iteratively reweighted
least squares on 3000 Chebyshev-spaced points, which converges to the minimax fit, in
float64 (ample for fp32 coefficients; the references are scipy's float64 functions, written
without cancellation). The coefficients are rounded to fp32 one at a time, lowest power
first, refitting the rest after each rounding so that the later ones absorb the earlier
ones' rounding. Centers are exact fp32 values: the kernel computes x - center exactly.

The printed error is that of the rounded polynomial in exact arithmetic, in units of 2^-24
(half an ulp of a result in [1, 2)); the functions' measured errors in fp32 arithmetic are
in the README's "Math functions" table (python -m triton_cpu.tools.math_accuracy) and held
by python/test/test_math_lib.py.
"""
import numpy as np
from scipy.special import erf, erfc

N = 3000


def lawson(basis, target, scale, iters=300):
    w = np.full(len(target), 1.0 / len(target))
    for _ in range(iters):
        sw = np.sqrt(w)
        c = np.linalg.lstsq(basis / scale[:, None] * sw[:, None], target / scale * sw, rcond=None)[0]
        err = np.abs(basis @ c - target) / scale
        w = w * err
        w /= w.sum()
    return c


def fit(name, lo, hi, terms, basis, target, scale):
    """basis(x) -> matrix of the terms; target(x) and scale(x): the error is (p - target) / scale."""
    x = lo + (hi - lo) * (1 - np.cos(np.pi * (np.arange(N) + 0.5) / N)) / 2
    B, y, s = basis(x)[:, :terms], target(x), scale(x)
    fixed = []
    for k in range(terms):
        rest = y - B[:, :k] @ np.array(fixed) if fixed else y
        fixed.append(float(np.float32(lawson(B[:, k:], rest, s)[0])))
    worst = np.abs(B @ np.array(fixed) - y) / s
    print(f"# {name} on [{lo}, {hi}]: max error {worst.max() / 2.0 ** -24:.3f} x 2^-24")
    print("    " + ", ".join(f'"{c.hex()}"' for c in fixed))


def powers(x, first, n=16, center=0.0):
    """Columns (x - center)^first, ..., (x - center)^(first + n - 1); fit() keeps the first
    `terms` of them."""
    return np.stack([(x - center) ** k for k in range(first, first + n)], axis=1)


def main():
    half_ln2 = np.log(2) / 2
    # exp: e^s = 1 + s + s^2 P(s); relative error of e^s.
    fit("exp: e^s - 1 - s = s^2 P(s)", -half_ln2, half_ln2, 5, lambda s: powers(s, 2),
        lambda s: np.expm1(s) - s, np.exp)
    # exp2: 2^s = 1 + s P(s); relative error of 2^s.
    fit("exp2: 2^s - 1 = s P(s)", -0.5, 0.5, 6, lambda s: powers(s, 1),
        lambda s: np.expm1(s * np.log(2)), lambda s: np.exp2(s))
    # erf, three pieces; absolute error (the result is below 1, its ulp at most 2^-24).
    fit("erf small: erf(x) - x = x P(x^2)", 1e-4, 0.84, 8, lambda x: x[:, None] * powers(x * x, 0),
        lambda x: erf(x) - x, erf)
    e_mid = np.float32(erf(1.25))
    print(f"# erf middle constant: erf(1.25) in fp32 = {float(e_mid).hex()}")
    fit("erf middle: erf(x) - E = P(x - 1.25)", 0.84, 2.0, 10, lambda x: powers(x, 0, center=1.25),
        lambda x: erf(x) - float(e_mid), lambda x: np.ones_like(x))
    fit("erf large: erf(x) - 1 = -erfc(x) = P(x - 3)", 2.0, 4.0, 11, lambda x: powers(x, 0, center=3.0),
        lambda x: -erfc(x), lambda x: np.ones_like(x))
    # tanh, two pieces below 1.875 (from there 1 - 2z/(1+z), z = e^(-2|x|), no fit).
    fit("tanh small: tanh(x) - x = x^3 P(x^2)", 1e-4, 0.75, 6, lambda x: x[:, None] * powers(x * x, 1),
        lambda x: np.tanh(x) - x, np.tanh)
    t_mid = np.float32(np.tanh(1.25))
    print(f"# tanh middle constant: tanh(1.25) in fp32 = {float(t_mid).hex()}")
    fit("tanh middle: tanh(x) - T = P(x - 1.25)", 0.75, 1.875, 10, lambda x: powers(x, 0, center=1.25),
        lambda x: np.tanh(x) - float(t_mid), lambda x: np.ones_like(x))


if __name__ == "__main__":
    main()
