"""Derives the polynomial coefficients of the inlined math functions
(python/triton_cpu/codegen/inline_math.py) and prints them as Python hex floats.

    python scripts/fit_math_polys.py

Each fit minimizes the largest relative error of the function (not of the polynomial) over
its reduced interval, by Lawson's iteratively reweighted least squares on a dense grid
(which converges to the minimax fit), in mpmath at 60 digits; coefficients are then rounded
to the target precision one at a time, refitting the rest after each rounding so the
later ones absorb the earlier ones' rounding error. The printed `max rel err` is that of the
rounded polynomial in exact arithmetic; the functions' measured errors in floating point are
in the README's "Math functions" table (python -m triton_cpu.tools.math_accuracy).
"""
import struct

import mpmath as mp

mp.mp.dps = 60


def round_to(x, bits):
    if bits == 64:
        return float(x)
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def lawson(basis, target, scale, lo, hi, n=600, iters=60):
    """Coefficients c minimizing max_i |sum_k c_k basis_k(x_i) - target(x_i)| / scale(x_i)."""
    xs = [lo + (hi - lo) * (1 - mp.cos(mp.pi * (i + 0.5) / n)) / 2 for i in range(n)]
    rows = [[b(x) / scale(x) for b in basis] for x in xs]
    ys = [target(x) / scale(x) for x in xs]
    w = [mp.mpf(1) / n] * n
    c = None
    for _ in range(iters):
        A = mp.matrix([[mp.sqrt(w[i]) * v for v in rows[i]] for i in range(n)])
        y = mp.matrix([mp.sqrt(w[i]) * ys[i] for i in range(n)])
        c = mp.qr_solve(A, y)[0]
        err = [abs(sum(c[k] * rows[i][k] for k in range(len(basis))) - ys[i]) for i in range(n)]
        w = [w[i] * err[i] for i in range(n)]
        total = sum(w)
        w = [v / total for v in w]
    return [c[k] for k in range(len(basis))], max(err)


def fit(name, degree_terms, target, scale, lo, hi, bits):
    """Rounds the coefficients one at a time (lowest power first), refitting the rest."""
    fixed = []
    for k in range(len(degree_terms)):
        free = degree_terms[k:]
        known = list(zip(degree_terms[:k], fixed))

        def residual_target(x, known=known):
            return target(x) - sum(c * t(x) for t, c in known)

        c, err = lawson(free, residual_target, scale, lo, hi)
        fixed.append(mp.mpf(round_to(c[0], bits)))
    # Error of the fully rounded polynomial.
    xs = [lo + (hi - lo) * i / 20000 for i in range(20001)]
    worst = max(abs(sum(c * t(x) for t, c in zip(degree_terms, fixed)) - target(x)) / scale(x) for x in xs)
    print(f"# {name}: max rel err {float(worst):.3g} (2^{float(mp.log(worst, 2)):.1f})")
    print("    " + ", ".join(float(c).hex() for c in fixed))


def main():
    half_ln2 = mp.log(2) / 2
    # e^s = 1 + s + s^2 (c0 + c1 s + ... + c4 s^4), s in [-ln2/2, ln2/2]: fp32 exp.
    fit("expf: e^s - 1 - s = s^2 * P(s)", [lambda s, k=k: s ** (k + 2) for k in range(5)],
        lambda s: mp.exp(s) - 1 - s, mp.exp, -half_ln2, half_ln2, 32)
    # 2^s = 1 + s (c0 + c1 s + ... + c5 s^5), s in [-1/2, 1/2]: fp32 exp2.
    fit("exp2f: 2^s - 1 = s * P(s)", [lambda s, k=k: s ** (k + 1) for k in range(6)],
        lambda s: mp.power(2, s) - 1, lambda s: mp.power(2, s), mp.mpf(-0.5), mp.mpf(0.5), 32)


if __name__ == "__main__":
    main()
