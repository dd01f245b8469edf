"""
Vector addition on the CPU
==========================

The first Triton tutorial's kernel, unmodified, launched on CPU torch tensors.
The CPU backend compiles it to a vectorized loop (AVX2 / AVX-512 / SSE, the host's
widest) and runs the grid on an OpenMP thread pool.

    python python/tutorials/01-vector-add.py

prints the result check and a benchmark against `torch.add(x, y, out=o)`.
Threads: OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS (default: all cores).
Set TRITON_CPU_TUTORIAL_QUICK=1 for the check alone, without the benchmark.
"""
import os

import torch
import triton
import triton.language as tl

QUICK = os.environ.get("TRITON_CPU_TUTORIAL_QUICK", "0") == "1"


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, block_size: int = 4096):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]), )
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=block_size)
    return output


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["size"],
        x_vals=[2**i for i in range(12, 25, 2)],
        x_log=True,
        line_arg="provider",
        line_vals=["triton-cpu", "torch"],
        line_names=["Triton (CPU backend)", "torch.add(out=)"],
        styles=[("blue", "-"), ("green", "-")],
        ylabel="GB/s",
        plot_name="vector-add-cpu",
        args={},
    ))
def benchmark(size, provider):
    x = torch.rand(size, dtype=torch.float32)
    y = torch.rand(size, dtype=torch.float32)
    out = torch.empty_like(x)
    if provider == "torch":
        fn = lambda: torch.add(x, y, out=out)
    else:
        grid = (triton.cdiv(size, 4096), )
        fn = lambda: add_kernel[grid](x, y, out, size, BLOCK_SIZE=4096)
    ms, min_ms, max_ms = triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    gbps = lambda ms: 3 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
    return gbps(ms), gbps(max_ms), gbps(min_ms)


if __name__ == "__main__":
    torch.manual_seed(0)
    size = 98432
    x = torch.rand(size)
    y = torch.rand(size)
    output_torch = x + y
    output_triton = add(x, y)
    print(output_torch)
    print(output_triton)
    diff = torch.max(torch.abs(output_torch - output_triton)).item()
    print(f"The maximum difference between torch and triton is {diff}")
    assert torch.equal(output_torch, output_triton), "CPU backend result differs from torch"
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark.run(print_data=True, show_plots=False)
