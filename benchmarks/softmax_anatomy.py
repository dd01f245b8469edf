"""Where tutorial 02's softmax spends its time: the tutorial's row loop with parts of its work
taken out or replaced, timed interleaved with torch.softmax and a plain copy of the same bytes.

    python benchmarks/softmax_anatomy.py [--rows 4096] [--rounds 5] [--warm]

Variants (each the tutorial's persistent loop over rows of 1024 fp32, on 1024 programs, the
grid the tutorial picks on these hosts):

  row copy          load the row, store it: the loop's memory floor
  reductions        max, subtract, sum, multiply by 1/sum: no exp, no division
  + division        the same with `x / sum` (the backend's fp32 division: vdivps, or the
                    reciprocal with two FMA corrections where reciprocal_division picks it)
  + exp, 1/sum      the real exp, then a multiply by the rounded reciprocal (not IEEE division)
  softmax           the tutorial's kernel body: exp, then `e / sum`
  exp2 form         `exp2(x * log2 e)` (the GPU backends' tl.exp: one rounding of x * log2 e)
                    and a multiply by 1/sum: what a GPU's accuracy contract would allow

`--warm` times small row counts back to back without the cache flush of do_bench (compute
per row); otherwise do_bench's flush makes the rows come from memory. Ratios are torch time /
variant time. This is an investigation aid, not a benchmark with floors.
"""
import argparse
import statistics
import time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

from kernels import copy


@triton.jit
def _softmax_variant(out_ptr, in_ptr, n_rows, N: tl.constexpr, VARIANT: tl.constexpr):
    cols = tl.arange(0, N)
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x = tl.load(in_ptr + row * N + cols)
        if VARIANT == "row copy":
            y = x
        else:
            shifted = x - tl.max(x, axis=0)
            if VARIANT == "exp2 form":
                e = tl.math.exp2(shifted * 1.4426950408889634)
            elif VARIANT == "softmax" or VARIANT == "+ exp, 1/sum":
                e = tl.exp(shifted)
            else:
                e = shifted
            if VARIANT == "softmax" or VARIANT == "+ division":
                y = e / tl.sum(e, axis=0)
            else:
                y = e * (1.0 / tl.sum(e, axis=0))
        tl.store(out_ptr + row * N + cols, y)


VARIANTS = ("row copy", "reductions", "+ division", "+ exp, 1/sum", "softmax", "exp2 form")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warm", action="store_true", help="back to back, no cache flush")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    x = torch.randn(args.rows, 1024)
    y = torch.empty_like(x)
    grid = (min(1024, args.rows),)
    fns = {"torch.softmax": lambda: torch.softmax(x, -1),
           "flat copy": lambda: copy(x, y)}
    for v in VARIANTS:
        fns[v] = lambda v=v: _softmax_variant[grid](y, x, args.rows, N=1024, VARIANT=v)
    _softmax_variant[grid](y, x, args.rows, N=1024, VARIANT="softmax")
    torch.testing.assert_close(y, torch.softmax(x, -1))
    for f in fns.values():
        f()

    def warm_ms(f, reps=200):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        return (time.perf_counter() - t) / reps * 1e3

    times = {k: [] for k in fns}
    for _ in range(args.rounds):
        for k, f in fns.items():
            times[k].append(warm_ms(f) if args.warm else do_bench(f, warmup=20, rep=100, return_mode="median"))
    ref = times["torch.softmax"]
    rows_per_thread = args.rows / args.threads
    print(f"{args.rows} x 1024 fp32, {args.threads} threads, {'warm' if args.warm else 'after a cache flush'}, "
          f"medians of {args.rounds} interleaved rounds")
    print(f"{'variant':16s} {'ms':>8s} {'ns/row/thread':>14s} {'torch / this':>13s}")
    for k, t in times.items():
        ms = statistics.median(t)
        ratio = statistics.median(r / v for r, v in zip(ref, t))
        print(f"{k:16s} {ms:8.3f} {ms * 1e6 / rows_per_thread:14.0f} {ratio:12.2f}x")


if __name__ == "__main__":
    main()
