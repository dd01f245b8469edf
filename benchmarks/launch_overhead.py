"""Per-call launch overhead of a 1024-element kernel (one program), against torch.add.

    python benchmarks/launch_overhead.py
"""
import time

import torch

from kernels import add_kernel


def best_us(fn, reps=20000, rounds=5):
    fn()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t) / reps * 1e6)
    return best


def main():
    n = 1024
    x, y, o = torch.randn(n), torch.randn(n), torch.empty(n)
    compiled = add_kernel[(1,)](x, y, o, n, BLOCK=1024)
    launch = lambda: add_kernel[(1,)](x, y, o, n, BLOCK=1024)
    # The launcher alone: what remains below Triton's Python dispatch (JITFunction.run).
    run = compiled.run
    # The launcher takes every bound argument, constexprs included (it drops them).
    args = (1, 1, 1, 0, compiled.function, compiled.packed_metadata, None, None, None, x, y, o, n, 1024)
    print(f"kernel[grid](...) call:       {best_us(launch):6.2f} us")
    print(f"launcher only (CompiledKernel.run): {best_us(lambda: run(*args)):6.2f} us")
    print(f"torch.add(x, y, out=o):       {best_us(lambda: torch.add(x, y, out=o)):6.2f} us")


if __name__ == "__main__":
    main()
