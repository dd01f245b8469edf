"""
Grouped GEMM on the CPU
=======================

Many independent products C_g = A_g @ B_g of different shapes (M_g, N_g, K_g) in a single
launch. The host passes, per problem, the *addresses* of A_g, B_g and C_g as int64 tensors,
and their sizes and leading dimensions as int32 tensors. In the kernel an address becomes
a typed pointer again with `.to(tl.pointer_type(tl.float16))`.

The grid is *persistent*: it has one program per thread of the CPU launcher (the driver's
`multiprocessor_count`), and program p computes tiles p, p + P, p + 2P, ... of the list
obtained by laying the problems' tile grids one after another. Small and large problems
thus share the threads evenly, with no launch per problem.

    python python/tutorials/08-grouped-gemm.py

prints the check of every product against `torch.matmul` and a benchmark against a loop
of `torch.matmul` calls. Threads: OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS (default: all
cores). Set TRITON_CPU_TUTORIAL_QUICK=1 for a tiny check without the benchmark.
"""
import os

import torch
import triton
import triton.language as tl
from triton.runtime import driver

QUICK = os.environ.get("TRITON_CPU_TUTORIAL_QUICK", "0") == "1"
NUM_PROGRAMS = driver.active.utils.get_device_properties(driver.active.get_current_device())["multiprocessor_count"]

_TL_DTYPES = {torch.float16: tl.float16, torch.float32: tl.float32}


@triton.jit
def grouped_matmul_kernel(a_addrs, b_addrs, c_addrs,  # int64 [G]: where each problem's matrices live
                          sizes,  # int32 [G, 3]: M, N, K
                          lds,  # int32 [G, 3]: row strides of A, B, C (elements; columns are contiguous)
                          G, NUM_PROGRAMS: tl.constexpr, DTYPE: tl.constexpr,  #
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tile = tl.program_id(0)
    first_tile = 0  # global index of problem g's first tile
    for g in range(G):
        M = tl.load(sizes + g * 3)
        N = tl.load(sizes + g * 3 + 1)
        K = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(N, BLOCK_N)
        n_tiles = tl.cdiv(M, BLOCK_M) * tiles_n
        # This program's tiles that fall inside problem g.
        while tile < first_tile + n_tiles:
            a_ptr = tl.load(a_addrs + g).to(tl.pointer_type(DTYPE))
            b_ptr = tl.load(b_addrs + g).to(tl.pointer_type(DTYPE))
            c_ptr = tl.load(c_addrs + g).to(tl.pointer_type(DTYPE))
            lda = tl.load(lds + g * 3)
            ldb = tl.load(lds + g * 3 + 1)
            ldc = tl.load(lds + g * 3 + 2)

            local = tile - first_tile
            rm = (local // tiles_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = (local % tiles_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            a_tile = a_ptr + rm[:, None] * lda + rk[None, :]
            b_tile = b_ptr + rk[:, None] * ldb + rn[None, :]
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, K, BLOCK_K):
                a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] < K - k0), other=0.0)
                b = tl.load(b_tile, mask=(rk[:, None] < K - k0) & (rn[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)
                a_tile += BLOCK_K
                b_tile += BLOCK_K * ldb
            c_tile = c_ptr + rm[:, None] * ldc + rn[None, :]
            tl.store(c_tile, acc.to(DTYPE), mask=(rm[:, None] < M) & (rn[None, :] < N))
            tile += NUM_PROGRAMS
        first_tile += n_tiles


def grouped_matmul(As, Bs, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32):
    assert len(As) == len(Bs) and len(As) > 0
    dtype = As[0].dtype
    Cs, sizes, lds = [], [], []
    for a, b in zip(As, Bs):
        assert a.dtype == dtype and b.dtype == dtype, "one dtype for the whole group"
        assert a.shape[1] == b.shape[0], "inner dimensions differ"
        assert a.stride(1) == 1 and b.stride(1) == 1, "rows must be contiguous"
        c = torch.empty((a.shape[0], b.shape[1]), dtype=dtype)
        Cs.append(c)
        sizes += [a.shape[0], b.shape[1], a.shape[1]]
        lds += [a.stride(0), b.stride(0), c.stride(0)]
    addrs = lambda ts: torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
    grouped_matmul_kernel[(NUM_PROGRAMS, )](addrs(As), addrs(Bs), addrs(Cs), torch.tensor(sizes, dtype=torch.int32),
                                            torch.tensor(lds, dtype=torch.int32), len(As), NUM_PROGRAMS=NUM_PROGRAMS,
                                            DTYPE=_TL_DTYPES[dtype], BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                            BLOCK_K=BLOCK_K)
    # The kernel only saw addresses: As, Bs and Cs had to stay alive until here.
    return Cs


def check():
    torch.manual_seed(0)
    if QUICK:
        shapes = [(70, 40, 50), (16, 130, 33), (64, 64, 64)]
        dtypes = [torch.float16]
    else:
        shapes = [(1024, 1024, 1024), (512, 512, 512), (256, 256, 256), (128, 128, 128), (300, 77, 1000),
                  (1, 513, 65)]
        dtypes = [torch.float16, torch.float32]
    for dtype in dtypes:
        As = [torch.randn(m, k).to(dtype) for m, n, k in shapes]
        Bs = [torch.randn(k, n).to(dtype) for m, n, k in shapes]
        # A row-strided view: leading dimension larger than the row length.
        As[0] = torch.randn(shapes[0][0], shapes[0][2] + 8).to(dtype)[:, :shapes[0][2]]
        Cs = grouped_matmul(As, Bs)
        tol = 1e-4 if dtype == torch.float32 else 1e-2
        for i, (a, b, c) in enumerate(zip(As, Bs, Cs)):
            ref = (a.float() @ b.float()).to(dtype)
            torch.testing.assert_close(c, ref, rtol=tol, atol=tol * 8, msg=lambda m: f"problem {i} {dtype}: {m}")
    print(f"grouped GEMM: all {len(shapes)} products match torch.matmul "
          f"({', '.join(str(d).split('.')[-1] for d in dtypes)}; {NUM_PROGRAMS} persistent programs)")


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],
        x_vals=[128, 256, 512],
        line_arg="provider",
        line_vals=["triton-cpu", "torch"],
        line_names=["Triton grouped GEMM", "loop of torch.matmul"],
        styles=[("blue", "-"), ("green", "-")],
        ylabel="GFLOP/s",
        plot_name="grouped-gemm-cpu",
        args={"groups": 4},
    ))
def benchmark(N, groups, provider):
    # fp32: torch has no fast fp16 GEMM on most CPUs, which would make the comparison moot.
    As = [torch.randn(N, N) for _ in range(groups)]
    Bs = [torch.randn(N, N) for _ in range(groups)]
    if provider == "torch":
        fn = lambda: [torch.matmul(a, b) for a, b in zip(As, Bs)]
    else:
        fn = lambda: grouped_matmul(As, Bs)
    ms = triton.testing.do_bench(fn, warmup=10, rep=100)
    return groups * 2 * N**3 * 1e-9 / (ms * 1e-3)


if __name__ == "__main__":
    check()
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark.run(print_data=True, show_plots=False)
