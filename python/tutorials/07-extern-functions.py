"""
Calling libdevice functions on the CPU
======================================

`triton.language.extra.libdevice` is the portable name of a backend's math library: on
NVIDIA GPUs it is CUDA's libdevice bitcode, on AMD GPUs the ROCm device libraries. A
backend says which module stands behind the name (`BaseBackend.get_module_map`); the CPU
backend maps it to `triton_cpu.language.libdevice`, which implements the same functions
with the same signatures on top of glibc's libm/libmvec and Triton IR. A kernel that
imports `libdevice` therefore runs unchanged on the CPU.

The kernels below call `asin` (unary), `pow` (binary), `erfinv` (a function libm lacks,
implemented by the CPU libdevice itself), and `lgamma`, in fp32 and fp64, and compare with
torch.

    python python/tutorials/07-extern-functions.py

prints the checks and a benchmark of the asin kernel against `torch.asin`.
Threads: OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS (default: all cores).
Set TRITON_CPU_TUTORIAL_QUICK=1 for a tiny check without the benchmark.
"""
import os

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

QUICK = os.environ.get("TRITON_CPU_TUTORIAL_QUICK", "0") == "1"
BLOCK = 1024


@triton.jit
def asin_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, libdevice.asin(x), mask=m)


@triton.jit
def special_kernel(x_ptr, e_ptr, pow_ptr, erfinv_ptr, lgamma_ptr, n, BLOCK: tl.constexpr):
    """Several libdevice calls in one kernel, fused with ordinary arithmetic."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.5)  # x in (0, 1)
    e = tl.load(e_ptr + offs, mask=m, other=1.0)
    tl.store(pow_ptr + offs, libdevice.pow(x, e), mask=m)
    tl.store(erfinv_ptr + offs, libdevice.erfinv(2 * x - 1), mask=m)
    tl.store(lgamma_ptr + offs, libdevice.lgamma(x * 10), mask=m)


def asin(x):
    y = torch.empty_like(x)
    asin_kernel[(triton.cdiv(x.numel(), BLOCK), )](x, y, x.numel(), BLOCK=BLOCK)
    return y


def special(x, e):
    outs = [torch.empty_like(x) for _ in range(3)]
    special_kernel[(triton.cdiv(x.numel(), BLOCK), )](x, e, *outs, x.numel(), BLOCK=BLOCK)
    return outs


def check():
    torch.manual_seed(0)
    n = 5000 if QUICK else 1_000_000
    n_checks = 0
    dtypes = (torch.float32, ) if QUICK else (torch.float32, torch.float64)
    for dtype in dtypes:
        tol = dict(rtol=2e-6, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
        x = torch.rand(n, dtype=dtype) * 2 - 1
        torch.testing.assert_close(asin(x), torch.asin(x), **tol, msg=lambda m: f"asin {dtype}: {m}")
        # Keep x away from 0 and 1 where erfinv and lgamma are steep.
        u = torch.rand(n, dtype=dtype) * 0.98 + 0.01
        e = torch.rand(n, dtype=dtype) * 6 - 3
        p, ei, lg = special(u, e)
        torch.testing.assert_close(p, torch.pow(u, e), **tol, msg=lambda m: f"pow {dtype}: {m}")
        # torch's fp32 erfinv is itself a few ulp off: compare with the fp64 value.
        ref_erfinv = torch.special.erfinv((2 * u - 1).double()).to(dtype)
        torch.testing.assert_close(ei, ref_erfinv, **tol, msg=lambda m: f"erfinv {dtype}: {m}")
        torch.testing.assert_close(lg, torch.lgamma((u * 10).double()).to(dtype), **tol,
                                   msg=lambda m: f"lgamma {dtype}: {m}")
        n_checks += 4
    names = ", ".join(str(d).split(".")[-1] for d in dtypes)
    print(f"libdevice asin, pow, erfinv and lgamma match torch in {n_checks} checks ({names}, n={n})")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["size"],
        x_vals=[2**i for i in range(12, 23, 2)],
        x_log=True,
        line_arg="provider",
        line_vals=["triton-cpu", "torch"],
        line_names=["Triton libdevice.asin", "torch.asin"],
        styles=[("blue", "-"), ("green", "-")],
        ylabel="GB/s",
        plot_name="libdevice-asin-cpu",
        args={},
    ))
def benchmark(size, provider):
    x = torch.rand(size) * 2 - 1
    out = torch.empty_like(x)
    if provider == "torch":
        fn = lambda: torch.asin(x, out=out)
    else:
        fn = lambda: asin(x)
    ms = triton.testing.do_bench(fn, warmup=10, rep=100)
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


if __name__ == "__main__":
    check()
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark.run(print_data=True, show_plots=False)
