"""Elementwise kernels on the CPU backend against torch eager, torch.compile and Triton's
interpreter, in one run. Prints a table of times and ratios (>1: the CPU backend is faster).

    python benchmarks/bench_elementwise.py [--threads 2] [--size 16777216]

Kernels: vector add (the tutorial's) and a 10-op fused elementwise kernel. The interpreter
is timed on a smaller size (it runs numpy per program) and its ratio is per element.
"""
import argparse
import os
import time

import torch
import triton
from triton.runtime.interpreter import InterpretedFunction
from triton.testing import do_bench

from kernels import add_kernel, fused_kernel


def fused_torch(x, y):
    z = x * y + 1.0
    z = torch.clamp_min(z, 0.0) - x / (y * y + 1.0)
    z = torch.exp(z * 0.1) + torch.sqrt(torch.abs(z)) * 0.5
    return torch.where(z > 1.0, z, -z)


def bench(fn, reps=200):
    return do_bench(fn, warmup=25, rep=reps)


def time_once(fn, n=3):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=1 << 24)
    ap.add_argument("--block", type=int, default=4096)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["TRITON_CPU_NUM_THREADS"] = str(args.threads)
    n, block = args.size, args.block
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    grid = (triton.cdiv(n, block),)
    small = 1 << 18
    xs, ys, outs = x[:small].clone(), y[:small].clone(), torch.empty(small)

    rows = []
    compiled_fused = torch.compile(fused_torch)
    compiled_add = torch.compile(lambda a, b: torch.add(a, b))
    for name, kernel, eager, compiled in [
        ("vector add", add_kernel, lambda: torch.add(x, y, out=out), lambda: compiled_add(x, y)),
        ("10-op fused", fused_kernel, lambda: fused_torch(x, y), lambda: compiled_fused(x, y)),
    ]:
        t_cpu = bench(lambda: kernel[grid](x, y, out, n, BLOCK=block))
        t_eager = bench(eager)
        t_comp = bench(compiled)
        interp = InterpretedFunction(kernel.fn)
        t_interp = time_once(lambda: interp[(triton.cdiv(small, block),)](xs, ys, outs, small, BLOCK=block))
        t_interp_scaled = t_interp * n / small
        rows.append((name, t_cpu, t_eager, t_comp, t_interp_scaled))

    print(f"n = {n}, BLOCK = {block}, threads = {args.threads}, host = {triton.runtime.driver.active.get_current_target().arch}")
    print(f"{'kernel':<12} {'triton-cpu ms':>14} {'eager ms':>10} {'compile ms':>11} {'interp ms*':>11}"
          f" {'vs eager':>9} {'vs compile':>11} {'vs interp':>10}")
    for name, c, e, k, i in rows:
        print(f"{name:<12} {c:14.3f} {e:10.3f} {k:11.3f} {i:11.1f} {e / c:9.2f}x {k / c:10.2f}x {i / c:9.0f}x")
    print(f"* interpreter timed at n = {small} and scaled to n")


if __name__ == "__main__":
    main()
