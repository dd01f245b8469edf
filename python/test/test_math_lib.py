"""The math library option: SLEEF, libmvec and scalar libm, each held to its error bound.

Errors are measured against float64 numpy (fp32 results) and 100-bit mpmath (fp64 results)
by triton_cpu.tools.math_accuracy, the module that also writes the README's table. The
libmvec and scalar cases are the fallbacks a machine without SLEEF uses (forced here with
the `math_lib` option; TRITON_CPU_MATH_LIB does the same for a whole process).
"""
import functools
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from triton_cpu import llvm, sleef
from triton_cpu.tools import math_accuracy as acc

pytest.importorskip("mpmath")

LIBS = [pytest.param("sleef", marks=pytest.mark.skipif(not sleef.available(), reason="SLEEF not installed "
                                                        "(apt-get install libsleef-dev, then reinstall)")),
        "libmvec", "scalar"]


@functools.lru_cache(None)
def _case(name, dtype):
    args = acc.sample(name, dtype, 3000, seed=7)
    return args, acc.reference(name, args, dtype)


@pytest.mark.parametrize("name", list(acc.FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("lib", LIBS)
def test_accuracy(lib, dtype, name):
    args, ref = _case(name, dtype)
    err = acc.ulp_errors(acc.run(name, args, lib), ref, dtype)
    i = int(np.argmax(err))
    assert err[i] <= acc.bound(lib, name, dtype), \
        f"{name} {np.dtype(dtype).name} with {lib}: {err[i]:.3g} ulp at {[float(a[i]) for a in args]}"


EDGES = {
    # SLEEF 3.5 returns infinity for these finite results (or, for tgamma, subnormal results
    # off by hundreds of ulp); the backend recomputes such lanes with libmvec.
    "asinh": ([3e19, -1e30, 3e38, 2.0], [1e155, -1e300, 1.7e308, 2.0]),
    "acosh": ([3e19, 1e30, 3e38, 2.0], [1e155, 1e300, 1.7e308, 2.0]),
    "log1p": ([2e38, 3.4e38, 1e37, 0.5], [1e307, 1.7e308, 1e300, 0.5]),
    "tgamma": ([-37.9995, -35.5, -39.5, 3.5], [-171.97, -172.5, -174.5, 3.5]),
    "exp": ([88.7, 88.72, 88.0, -103.0], [709.7827120, 709.78271289, 709.78, -745.0]),
}


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["fp32", "fp64"])
@pytest.mark.parametrize("fn", list(EDGES))
def test_edges(fn, dtype, lib):
    dt = np.float32 if dtype == torch.float32 else np.float64
    x = np.array(EDGES[fn][dt == np.float64] * 4, dtype=dt)  # 16 lanes: a full vector and more
    got = acc.run(fn, [x], lib)
    err = acc.ulp_errors(got, acc.reference(fn, [x], dt), dt)
    assert err.max() <= acc.MAX_ULP["libmvec"], f"{fn} with {lib}: {list(zip(x.tolist(), got.tolist(), err))}"


@triton.jit
def _log_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # log, not exp: fp32 exp is inlined in every mode but "scalar" (inline_math.py).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.log(tl.load(x_ptr + offs, mask=m)), mask=m)


@pytest.mark.skipif(not sleef.available(), reason="SLEEF not installed")
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_sleef_variant_for_the_host(vector_bits):
    """The ISA variant follows the lowered width, capped by the host: 512-bit lowering on an
    AVX2 host calls the AVX2 variant (an AVX-512 one would be an illegal instruction)."""
    x = torch.rand(4096) * 100
    out = torch.empty_like(x)
    k = _log_kernel[(4,)](x, out, x.numel(), BLOCK=1024, vector_bits=vector_bits, math_lib="sleef")
    torch.testing.assert_close(out, torch.log(x), rtol=2e-7, atol=0)
    h = llvm.host()
    if vector_bits == 512 and h.has("avx512f"):
        assert "Sleef_logf16_u10avx512f" in k.asm["asm"]
    else:
        assert "Sleef_logf8_u10avx2" in k.asm["asm"] and "avx512f" not in k.asm["asm"]


def test_library_is_part_of_the_cache_key():
    x = torch.rand(1000) * 20
    asm = {}
    for lib in ("libmvec", "scalar") + (("sleef",) if sleef.available() else ()):
        out = torch.empty_like(x)
        k = _log_kernel[(1,)](x, out, x.numel(), BLOCK=1024, math_lib=lib)
        torch.testing.assert_close(out, torch.log(x), rtol=5e-7, atol=0)
        asm[lib] = k.asm["asm"]
    assert "_ZGV" in asm["libmvec"] and "Sleef_" not in asm["libmvec"]
    assert "_ZGV" not in asm["scalar"] and "Sleef_" not in asm["scalar"]
    if "sleef" in asm:
        assert "Sleef_logf" in asm["sleef"]


def _around(v, k=3):
    """v and its k float32 neighbours on each side."""
    out = [np.float32(v)]
    for direction in (np.inf, -np.inf):
        x = np.float32(v)
        for _ in range(k):
            x = np.nextafter(x, np.float32(direction))
            out.append(x)
    return out


# fp32 arguments where the inline exp/exp2 change regime: overflow, the subnormal results
# and where they round to 0, the split of the reduced argument, and the special values.
INLINE_EDGES = {
    "exp": [86.5, 88.72283935546875, 88.0, -87.33654, -103.27893, -103.97208, -104.0, -110.0, 0.34657359, -0.34657359,
            1e-30, -1e-30, 1e-8, 0.0, -0.0, 89.5, 1e10, -1e10, np.inf, -np.inf, np.nan],
    "exp2": [125.0, 128.0, 127.99999, -126.0, -149.0, -149.5, -150.0, -151.0, 0.5, -0.5, 1e-30, 0.0, -0.0, 129.0, 1e10,
             -1e10, np.inf, -np.inf, np.nan],
    # erf's pieces meet at 0.84 and 2; from 3.92 it rounds to 1; the clamp is at 4.
    "erf": [0.84, 2.0, 3.92, 4.0, 1.25, 1e-30, 1e-40, 0.5, 1.0, 3.0, 10.0, 0.0, -0.0, np.inf, -np.inf, np.nan],
    # tanh's pieces meet at 0.75 and 1.875 (the middle one is centered on 1.25); from 9.01
    # it rounds to 1; from 43.25 its exp(-2|x|) takes exp's full path.
    "tanh": [0.75, 1.875, 1.25, 9.01, 43.25, 0.5, 3.0, 1e-30, 1e-40, 10.0, 1e10, 0.0, -0.0, np.inf, -np.inf, np.nan],
}


@triton.jit
def _inline_scalar_kernel(x_ptr, out_ptr, FN: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0))
    if FN == "exp":
        r = tl.exp(x)
    elif FN == "exp2":
        r = tl.exp2(x)
    elif FN == "tanh":
        r = libdevice.tanh(x)
    else:
        r = tl.math.erf(x)
    tl.store(out_ptr + tl.program_id(0), r)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("lib", [p for p in LIBS if p != "scalar"])
@pytest.mark.parametrize("fn", list(INLINE_EDGES))
def test_inline_edges(fn, lib, vector_bits):
    """fp32 exp/exp2/erf/tanh are emitted inline (codegen/inline_math.py): within 1 ulp of float64
    numpy at every regime change, NaN/inf/0 as libm has them, and a scalar (one program per
    element) gets the same result as a vector lane."""
    args = np.array([a for v in INLINE_EDGES[fn] for a in (_around(v) if np.isfinite(v) else [np.float32(v)])],
                    dtype=np.float32)
    args = np.concatenate([args, -args[np.isfinite(args)]])
    got = acc.run(fn, [args], lib, vector_bits=vector_bits)
    err = acc.ulp_errors(got, acc.reference(fn, [args], np.float32), np.float32)
    assert err.max() <= 1.0, f"{fn}: {[(float(a), float(g), e) for a, g, e in zip(args, got, err) if e > 1]}"
    x = torch.from_numpy(args)
    one_by_one = torch.empty_like(x)
    _inline_scalar_kernel[(x.numel(),)](x, one_by_one, FN=fn, math_lib=lib, vector_bits=vector_bits)
    np.testing.assert_array_equal(one_by_one.numpy(), got)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("fn", ["exp", "exp2", "erf"])
def test_inline_fast_path_matches_full_path(fn, vector_bits):
    """exp/exp2 take a shorter path for a vector whose every lane is within the bound where
    the result is a normal float, erf for one whose every lane is below 2, where its last
    piece is never selected (inline_math._fast_or_full). Arguments dense over that
    range, first alone (every vector fast), then with a NaN in every 4th lane (every vector
    takes the full path): the same bits, within 1 ulp of float64 numpy; and past the bound
    (full path) the result is still within 1 ulp."""
    from triton_cpu.codegen import inline_math
    bound = {"exp": inline_math._EXP_FAST_BOUND, "exp2": inline_math._EXP2_FAST_BOUND,
             "erf": inline_math._ERF_FAST_BOUND}[fn]
    rng = np.random.default_rng(3)
    x = np.concatenate([np.linspace(-bound, bound, 1 << 15), rng.uniform(-1, 1, 1 << 13) * 2.0 ** rng.integers(
        -30, 1, 1 << 13), rng.uniform(-bound, bound, 1 << 13)]).astype(np.float32)
    fast = acc.run(fn, [x], "libmvec", vector_bits=vector_bits)
    err = acc.ulp_errors(fast, acc.reference(fn, [x], np.float32), np.float32)
    assert err.max() <= 1.0, f"{fn}: {err.max():.3g} ulp at {x[np.argmax(err)]}"
    poisoned = x.copy()
    poisoned[::4] = np.nan
    full = acc.run(fn, [poisoned], "libmvec", vector_bits=vector_bits)
    assert np.isnan(full[::4]).all()
    keep = np.ones(x.size, bool)
    keep[::4] = False
    np.testing.assert_array_equal(full[keep], fast[keep])
    beyond = np.float32(bound) * np.linspace(1.0, 1.2, 4096, dtype=np.float32)
    beyond = np.concatenate([beyond, -beyond])
    got = acc.run(fn, [beyond], "libmvec", vector_bits=vector_bits)
    err = acc.ulp_errors(got, acc.reference(fn, [beyond], np.float32), np.float32)
    assert err.max() <= 1.0, f"{fn}: {err.max():.3g} ulp at {beyond[np.argmax(err)]}"


def test_inline_tanh_every_float_where_pieces_meet():
    """Every fp32 in [0.5, 2), the two binades where tanh's pieces meet (0.75, 1.875) and
    where the last one's error is largest (its rounding errors shrink with 1 - tanh(x)):
    within 1 ulp of float64 numpy. (Every fp32 from 0 to 10 was checked once the same way:
    0.871 ulp at most.)"""
    x = np.arange(np.float32(0.5).view(np.uint32), np.float32(2.0).view(np.uint32), dtype=np.uint32).view(np.float32)
    got = acc.run("tanh", [x], "sleef")
    err = acc.ulp_errors(got, acc.reference("tanh", [x], np.float32), np.float32)
    assert err.max() <= 1.0, f"{err.max():.3f} ulp at {x[np.argmax(err)]!r}"


def test_environment_knob_and_errors(monkeypatch):
    monkeypatch.setenv("TRITON_CPU_MATH_LIB", "scalar")
    assert sleef.resolve(None) == "scalar"
    assert sleef.resolve("libmvec") == "libmvec"  # the option wins over the environment
    monkeypatch.setenv("TRITON_CPU_MATH_LIB", "fastest")
    with pytest.raises(ValueError, match="must be one of auto, sleef, libmvec, scalar; got 'fastest'"):
        sleef.resolve(None)
    monkeypatch.delenv("TRITON_CPU_MATH_LIB")
    assert sleef.resolve(None) == ("sleef" if sleef.available() else "libmvec")


def test_without_sleef(monkeypatch):
    """A build that did not find SLEEF: auto means libmvec, asking for SLEEF is an error."""
    monkeypatch.setattr(sleef, "build_config", lambda: {"sleef_library": None})
    monkeypatch.setattr(sleef, "_handle", lambda: None)
    assert sleef.resolve(None) == "libmvec"
    with pytest.raises(ValueError, match="SLEEF is not found when the package was built"):
        sleef.resolve("sleef")


@triton.jit
def _libdevice_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if FN == "exp":
        r = libdevice.exp(x)
    else:
        tl.static_assert(FN == "tanh")
        r = libdevice.tanh(x)
    tl.store(out_ptr + offs, r, mask=m)


@pytest.mark.parametrize("fn", ["exp", "tanh"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_half_precision_rounds_once(dtype, fn):
    """fp16/bf16 math (libdevice accepts them) is computed in fp32 and rounded once: within
    one ulp of torch's fp32 result rounded, and equal to it nearly everywhere."""
    x = (torch.rand(4096) * 20 - 10).to(dtype)
    out = torch.empty_like(x)
    _libdevice_kernel[(4,)](x, out, x.numel(), FN=fn, BLOCK=1024)
    ref = getattr(torch, fn)(x.float()).to(dtype)
    spacing = torch.finfo(dtype).eps * ref.float().abs().clamp(min=torch.finfo(dtype).tiny)
    assert ((out.float() - ref.float()).abs() <= spacing).all()
    assert (out == ref).float().mean() > 0.99


def test_diagnostic_command():
    out = subprocess.run([sys.executable, "-m", "triton_cpu"], capture_output=True, text=True, check=True,
                         env={**os.environ, "TRITON_CPU_MATH_LIB": "libmvec"}).stdout
    assert "math library        libmvec (TRITON_CPU_MATH_LIB" in out
    assert ("version" in out) == sleef.available()
    assert f"{llvm.host().vector_bits}-bit vectors" in out
