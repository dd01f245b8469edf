"""
Fused attention (forward) on the CPU
====================================

softmax(Q K^T * scale) V for every (batch, head), without ever holding the N_CTX x N_CTX
score matrix: a program owns BLOCK_M query rows and streams K and V through in blocks of
BLOCK_N keys. For each block it computes the scores with `tl.dot(q, tl.trans(k))`, and
keeps, per query row, the running maximum m and the running softmax denominator l. When
a new block raises the maximum, what was accumulated so far is rescaled by
exp(m_old - m_new) ("online softmax"), so a single pass gives the exact result.

Causal masking (a query attends to keys at or before its position) ends the key loop at
the program's last query row and masks the diagonal block.

The CPU backend runs both `tl.dot`s on its register-blocked micro-kernel and keeps the
loop-carried accumulator, maximum and denominator in per-thread buffers updated in place.

    python python/tutorials/06-fused-attention.py

prints the check against `torch.nn.functional.scaled_dot_product_attention` and a small
benchmark. Threads: OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS (default: all cores).
Set TRITON_CPU_TUTORIAL_QUICK=1 for a tiny check without the benchmark.
"""
import math
import os

import torch
import triton
import triton.language as tl

QUICK = os.environ.get("TRITON_CPU_TUTORIAL_QUICK", "0") == "1"


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale,  #
                         stride_z, stride_h, stride_n, stride_d,  # shared by q, k, v and o
                         H, N_CTX,  #
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr):
    block_m = tl.program_id(0)
    zh = tl.program_id(1)
    base = (zh // H) * stride_z + (zh % H) * stride_h
    rows = block_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    keys = tl.arange(0, BLOCK_N)

    q = tl.load(q_ptr + base + rows[:, None] * stride_n + dims[None, :] * stride_d, mask=rows[:, None] < N_CTX,
                other=0.0)
    # Work in base 2: exp(s * scale) = exp2(s * scale * log2(e)).
    q_scale = scale * 1.4426950408889634

    row_max = tl.full((BLOCK_M, ), -float("inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M, ), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    if CAUSAL:
        end = tl.minimum((block_m + 1) * BLOCK_M, N_CTX)
    else:
        end = N_CTX
    for start in range(0, end, BLOCK_N):
        cols = start + keys
        in_range = cols < N_CTX
        k = tl.load(k_ptr + base + cols[:, None] * stride_n + dims[None, :] * stride_d, mask=in_range[:, None],
                    other=0.0)
        s = tl.dot(q, tl.trans(k)) * q_scale
        allowed = in_range[None, :]
        if CAUSAL:
            allowed = allowed & (rows[:, None] >= cols[None, :])
        s = tl.where(allowed, s, -float("inf"))

        new_max = tl.maximum(row_max, tl.max(s, axis=1))
        p = tl.math.exp2(s - new_max[:, None])
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(p, axis=1)

        v = tl.load(v_ptr + base + cols[:, None] * stride_n + dims[None, :] * stride_d, mask=in_range[:, None],
                    other=0.0)
        acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = new_max

    out = acc / row_sum[:, None]
    tl.store(o_ptr + base + rows[:, None] * stride_n + dims[None, :] * stride_d, out.to(o_ptr.dtype.element_ty),
             mask=rows[:, None] < N_CTX)


def attention(q, k, v, causal, scale=None, BLOCK_M=64, BLOCK_N=64):
    Z, H, N_CTX, D = q.shape
    assert k.shape == q.shape and v.shape == q.shape, "this kernel expects equal shapes for q, k and v"
    assert D in (16, 32, 64, 128), "head dimension must be a power of two"
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H)
    attention_fwd_kernel[grid](q, k, v, o, scale, q.stride(0), q.stride(1), q.stride(2), q.stride(3), H, N_CTX,
                               HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal)
    return o


def check():
    torch.manual_seed(0)
    if QUICK:
        cases = [(1, 2, 100, 32, torch.float32)]
    else:
        cases = [(1, 2, 128, 64, torch.float32), (1, 2, 300, 64, torch.float32), (2, 2, 512, 64, torch.float32),
                 (1, 2, 256, 64, torch.float16)]
    for Z, H, N, D, dtype in cases:
        q, k, v = (torch.randn(Z, H, N, D).to(dtype) for _ in range(3))
        for causal in (False, True):
            out = attention(q, k, v, causal)
            ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                                   is_causal=causal).to(dtype)
            tol = 2e-5 if dtype == torch.float32 else 1e-2
            torch.testing.assert_close(out, ref, rtol=tol, atol=tol,
                                       msg=lambda m: f"Z={Z} H={H} N_CTX={N} D={D} {dtype} causal={causal}: {m}")
    print(f"attention matches torch scaled_dot_product_attention in {2 * len(cases)} cases (causal and not)")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N_CTX"],
        x_vals=[128, 256, 512],
        line_arg="provider",
        line_vals=["triton-cpu", "torch"],
        line_names=["Triton (CPU backend)", "torch SDPA"],
        styles=[("blue", "-"), ("green", "-")],
        ylabel="GFLOP/s",
        plot_name="fused-attention-fwd-cpu",
        args={"Z": 1, "H": 2, "D": 64, "causal": False},
    ))
def benchmark(Z, H, N_CTX, D, causal, provider):
    q, k, v = (torch.randn(Z, H, N_CTX, D) for _ in range(3))
    if provider == "torch":
        fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    else:
        fn = lambda: attention(q, k, v, causal)
    ms = triton.testing.do_bench(fn, warmup=10, rep=100)
    flops = 4 * Z * H * N_CTX * N_CTX * D * (0.5 if causal else 1.0)
    return flops * 1e-9 / (ms * 1e-3)


if __name__ == "__main__":
    check()
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark.run(print_data=True, show_plots=False)
