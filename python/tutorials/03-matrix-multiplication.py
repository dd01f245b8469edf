"""
Matrix multiplication on the CPU
================================

A tiled GEMM, C = act(A @ B), where every program computes one BLOCK_M x BLOCK_N tile of C
by walking along K in steps of BLOCK_K and accumulating `tl.dot` products in fp32.

Three things from GPU practice carry over unchanged:

* **Grouped ordering.** Program ids are mapped to tiles column by column inside groups of
  GROUP_M tile rows, so that programs running close in time share rows of A and columns
  of B. The CPU launcher hands neighbouring program ids to the same thread, so a group's
  A panel stays in that core's cache.
* **Autotuning.** `@triton.autotune` times a few tile shapes and keeps the fastest per
  (M, N, K). On the CPU the tile should fit in L1/L2; `num_warps` and `num_stages` are
  accepted and ignored.
* **Fused epilogue.** An optional leaky ReLU is applied to the accumulator before the
  store, at no extra memory traffic.

The CPU backend lowers `tl.dot` to a register-blocked micro-kernel (FMAs on the host's
widest vectors); fp16 inputs are widened and accumulated in fp32.

    python python/tutorials/03-matrix-multiplication.py

prints the result checks and a benchmark against `torch.matmul`, for fp32 and fp16.
Threads: OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS (default: all cores).
Set TRITON_CPU_TUTORIAL_QUICK=1 for a tiny check without the benchmark.
"""
import os

import torch
import triton
import triton.language as tl

QUICK = os.environ.get("TRITON_CPU_TUTORIAL_QUICK", "0") == "1"


def cpu_configs():
    if QUICK:  # one config: the check should not spend its time tuning
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 4})]
    # Wider tiles read each row of A for more columns of B (fewer A packs and accumulator
    # reloads per FMA); on a 2-core Xeon 64x256x64 was the best at 1024^3 and 128x256x64 at
    # 2048^3, where 128x128x64 had been. The autotuner picks per host.
    shapes = [(64, 64, 32), (64, 128, 32), (128, 64, 64), (128, 128, 64), (64, 256, 64), (128, 256, 64)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8}) for m, n, k in shapes]


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.autotune(configs=cpu_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,  #
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,  #
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,  #
                  GROUP_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: a group is GROUP_M tile rows by all tile columns, walked
    # column-major so consecutive program ids reuse the same tile columns of B.
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    row0 = group * GROUP_M
    rows_in_group = min(tiles_m - row0, GROUP_M)
    tile_m = row0 + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    # Wrapping the edge rows/columns keeps every load of A and B in bounds without a mask
    # on M and N; the extra rows/columns are dropped by the masked store.
    rm_safe = rm % M
    rn_safe = rn % N
    a_tile = a_ptr + rm_safe[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn_safe[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(c_ptr.dtype.element_ty)
    c_tile = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_tile, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor, activation: str = "") -> torch.Tensor:
    assert a.shape[1] == b.shape[0], "inner dimensions differ"
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), )
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), ACTIVATION=activation)
    return c


def check():
    torch.manual_seed(0)
    # (M, N, K), dtype, activation, B column-major (only its strides differ)
    if QUICK:
        cases = [((70, 50, 90), torch.float32, "leaky_relu", False), ((64, 48, 40), torch.float16, "", True)]
    else:
        variants = [(torch.float32, "", False), (torch.float32, "leaky_relu", False), (torch.float32, "", True),
                    (torch.float16, "", False), (torch.float16, "leaky_relu", True)]
        cases = [(shape, *v) for shape in [(512, 512, 512), (333, 257, 129)] for v in variants]
    for (M, N, K), dtype, act, b_transposed in cases:
        a = torch.randn(M, K).to(dtype)
        b = torch.randn(N, K).to(dtype).t() if b_transposed else torch.randn(K, N).to(dtype)
        ref = a.float() @ b.float()
        if act == "leaky_relu":
            ref = torch.nn.functional.leaky_relu(ref, 0.01)
        tol = 1e-4 if dtype == torch.float32 else 1e-2
        torch.testing.assert_close(matmul(a, b, act), ref.to(dtype), rtol=tol, atol=tol * 4)
    print(f"matmul matches torch.matmul in {len(cases)} cases (fp32 and fp16, with and without leaky_relu, "
          f"row- and column-major B)")
    print(f"autotuner's choice for the last shape: {matmul_kernel.best_config}")


def benchmark_for(dtype, sizes):

    @triton.testing.perf_report(
        triton.testing.Benchmark(
            x_names=["M", "N", "K"],
            x_vals=sizes,
            line_arg="provider",
            line_vals=["triton-cpu", "torch"],
            line_names=["Triton (CPU backend)", "torch.matmul"],
            styles=[("blue", "-"), ("green", "-")],
            ylabel="GFLOP/s",
            plot_name=f"matmul-cpu-{str(dtype).split('.')[-1]}",
            args={},
        ))
    def benchmark(M, N, K, provider):
        a = torch.randn(M, K).to(dtype)
        b = torch.randn(K, N).to(dtype)
        if provider == "torch":
            fn = lambda: torch.matmul(a, b)
        else:
            fn = lambda: matmul(a, b)
        ms = triton.testing.do_bench(fn, warmup=10, rep=100)
        return 2 * M * N * K * 1e-9 / (ms * 1e-3)

    return benchmark


if __name__ == "__main__":
    check()
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark_for(torch.float32, [256, 512, 1024]).run(print_data=True, show_plots=False)
        # torch has no fast fp16 GEMM on most CPUs (it is far slower than fp32): small sizes only.
        benchmark_for(torch.float16, [256, 512]).run(print_data=True, show_plots=False)
