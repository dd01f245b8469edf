"""
Low-memory dropout on the CPU
=============================

Dropout zeroes each element with probability p and scales the survivors by 1 / (1 - p).
The classic implementation draws a random keep-mask, stores it, and reads it again in the
backward pass: one extra tensor the size of the input. A *seeded* dropout stores nothing:
the kernel regenerates the same random numbers from (seed, element index) whenever it
needs them, with Triton's counter-based Philox generator (`tl.rand`).

This tutorial shows that on the CPU backend

* the seeded kernel agrees bit for bit with a NumPy transcription of Philox-4x32-10, the
  generator Triton uses on every backend, so a seed gives the same mask on a CPU and a GPU;
* the same seed reproduces the same mask, another seed gives another one;
* it computes exactly what the mask-based kernel computes when that kernel is handed the
  same mask, without the mask in memory.

    python python/tutorials/04-low-memory-dropout.py

prints the checks and a benchmark against the mask-based kernel and torch's dropout.
Threads: OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS (default: all cores).
Set TRITON_CPU_TUTORIAL_QUICK=1 for a tiny check without the benchmark.
"""
import os

import numpy as np
import torch
import triton
import triton.language as tl

QUICK = os.environ.get("TRITON_CPU_TUTORIAL_QUICK", "0") == "1"
BLOCK = 1024


@triton.jit
def masked_dropout_kernel(x_ptr, keep_ptr, out_ptr, n, p, BLOCK: tl.constexpr):
    """Dropout driven by a keep-mask that lives in memory (one byte per element)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    keep = tl.load(keep_ptr + offs, mask=inside) != 0
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=inside)


@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    """Dropout whose mask is recomputed from (seed, index): nothing to store."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    # A uniform number in [0, 1) per element; the element is kept when it exceeds p.
    u = tl.rand(seed, offs)
    tl.store(out_ptr + offs, tl.where(u > p, x / (1 - p), 0.0), mask=inside)


def masked_dropout(x, keep, p):
    out = torch.empty_like(x)
    n = x.numel()
    masked_dropout_kernel[(triton.cdiv(n, BLOCK), )](x, keep, out, n, p, BLOCK=BLOCK)
    return out


def seeded_dropout(x, p, seed):
    out = torch.empty_like(x)
    n = x.numel()
    seeded_dropout_kernel[(triton.cdiv(n, BLOCK), )](x, out, n, p, seed, BLOCK=BLOCK)
    return out


def philox_uniform(seed: int, n: int) -> np.ndarray:
    """Reference for `tl.rand(seed, arange(n))`: Philox-4x32-10 with counter (i, 0, 0, 0)
    and key (low, high 32 bits of seed); the first output word becomes a float in [0, 1)."""
    M32 = np.uint64(0xFFFFFFFF)
    c0 = np.arange(n, dtype=np.uint64)
    c1 = np.zeros(n, np.uint64)
    c2 = np.zeros(n, np.uint64)
    c3 = np.zeros(n, np.uint64)
    k0 = np.uint64(seed & 0xFFFFFFFF)
    k1 = np.uint64((seed >> 32) & 0xFFFFFFFF)
    mul_a, mul_b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        prod_a = mul_a * c0  # 32 x 32 -> 64 bits: exact in uint64
        prod_b = mul_b * c2
        c0, c1, c2, c3 = ((prod_b >> np.uint64(32)) ^ c1 ^ k0, prod_b & M32, (prod_a >> np.uint64(32)) ^ c3 ^ k1,
                          prod_a & M32)
        k0 = (k0 + np.uint64(0x9E3779B9)) & M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & M32
    signed = c0.astype(np.uint32).view(np.int32)
    signed = np.where(signed < 0, ~signed, signed)  # fold the sign bit away: [0, 2^31)
    return signed.astype(np.float32) * np.float32(4.6566127342e-10)


def check():
    torch.manual_seed(0)
    n = 3000 if QUICK else 1_000_003
    p = 0.3
    x = torch.randn(n)

    # 1. The CPU stream is Triton's Philox stream.
    seed = 1234567
    keep = torch.from_numpy(philox_uniform(seed, n)) > p
    expected = torch.where(keep, x / (1 - p), torch.zeros(()))
    out = seeded_dropout(x, p, seed)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)

    # 2. Reproducible per seed; another seed gives another mask.
    again = seeded_dropout(x, p, seed)
    other = seeded_dropout(x, p, seed + 1)
    assert torch.equal(out, again), "the same seed must give the same output"
    assert not torch.equal(out != 0, other != 0), "another seed must give another mask"

    # 3. Same result as the kernel that reads its mask from memory.
    from_mask = masked_dropout(x, keep.to(torch.int8), p)
    assert torch.equal(out, from_mask), "seeded and mask-based dropout differ"

    kept = (out != 0).float().mean().item()
    assert abs(kept - (1 - p)) < 0.05, f"kept fraction {kept} is far from {1 - p}"
    print(f"seeded dropout matches the Philox reference bit for bit on {n} elements, reproduces per seed, "
          f"equals the mask-based kernel; kept {kept:.3f} (expected {1 - p})")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["size"],
        x_vals=[2**i for i in range(14, 23, 2)],
        x_log=True,
        line_arg="provider",
        line_vals=["seeded", "mask", "torch"],
        line_names=["Triton seeded (tl.rand)", "Triton with mask (incl. torch.rand mask)", "torch dropout"],
        styles=[("blue", "-"), ("orange", "-"), ("green", "-")],
        ylabel="GB/s",
        plot_name="dropout-cpu",
        args={"p": 0.5},
    ))
def benchmark(size, p, provider):
    x = torch.randn(size)
    if provider == "seeded":
        fn = lambda: seeded_dropout(x, p, 42)
    elif provider == "mask":
        fn = lambda: masked_dropout(x, torch.rand(size) > p, p)
    else:
        fn = lambda: torch.nn.functional.dropout(x, p, training=True)
    ms = triton.testing.do_bench(fn, warmup=10, rep=100)
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)  # input read + output written


if __name__ == "__main__":
    check()
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark.run(print_data=True, show_plots=False)
