"""
Fused softmax on the CPU
========================

A row-wise softmax in one pass over memory: each program loads a row, subtracts its
maximum (for numerical stability), exponentiates, divides by the sum and stores the row.
Eager torch code for the same formula reads and writes the matrix several times; the
kernel touches each element once on the way in and once on the way out.

The host code sizes a *persistent* grid the way GPU code does: it compiles the kernel
ahead of the launch (`kernel.warmup(...)`), asks the compiled kernel for its register and
shared-memory use and the driver for the device's limits, and launches just enough
programs to fill the machine; each program then strides over rows with `tl.range`.
On the CPU the driver reports one "multiprocessor" per thread of the launcher's pool, a
warp of one lane, no shared memory, and the number of architectural vector registers as
`n_regs`, so the same formula gives a finite, sensible answer.

    python python/tutorials/02-fused-softmax.py

prints the result check and a benchmark against `torch.softmax` (and `torch.compile`).
Threads: OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS (default: all cores).
Set TRITON_CPU_TUTORIAL_QUICK=1 for a tiny check without the benchmark.
"""
import os

import torch
import triton
import triton.language as tl
from triton.runtime import driver

QUICK = os.environ.get("TRITON_CPU_TUTORIAL_QUICK", "0") == "1"


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    # Program p handles rows p, p + P, p + 2P, ... where P is the grid size.
    first_row = tl.program_id(0)
    row_step = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)
    col_ok = cols < n_cols
    for row in tl.range(first_row, n_rows, row_step, num_stages=num_stages):
        # The padding lanes read -inf: they never win the max and add exp(-inf) = 0.
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=col_ok, other=-float("inf"))
        shifted = x - tl.max(x, axis=0)
        e = tl.exp(shifted)
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, y, mask=col_ok)


# What the device offers. On the CPU "device" is the host, and the properties describe the
# launcher's thread pool.
DEVICE = driver.active.get_current_device()
PROPS = driver.active.utils.get_device_properties(DEVICE)
NUM_SM = PROPS["multiprocessor_count"]
NUM_REGS = PROPS["max_num_regs"]
SIZE_SMEM = PROPS["max_shared_mem"]
WARP_SIZE = PROPS["warpSize"]

_last_launch = None  # (kernel, occupancy, programs), for the report in check()


def softmax(x: torch.Tensor) -> torch.Tensor:
    global _last_launch
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    num_warps = 4  # ignored by the CPU backend, but part of the occupancy formula
    num_stages = 4 if SIZE_SMEM > 200_000 else 2
    y = torch.empty_like(x)

    # Compile (or find in the JIT's cache: the arguments' specialization is part of the
    # key) without launching, then load the binary so that n_regs is filled in.
    kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE,
                                   num_stages=num_stages, num_warps=num_warps, grid=(1, ))
    kernel._init_handles()

    # How many programs fit on one "multiprocessor" at once: limited by registers and by
    # "shared memory" (on the CPU: the per-program buffer memory the kernel reports).
    occupancy = NUM_REGS // (kernel.n_regs * WARP_SIZE * num_warps)
    size_smem = kernel.metadata.shared
    if size_smem:  # 0 when the kernel needs no buffers
        occupancy = min(occupancy, SIZE_SMEM // size_smem)
    num_programs = min(NUM_SM * occupancy, n_rows)
    _last_launch = (kernel, occupancy, num_programs)

    kernel[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE, num_stages)
    return y


def check():
    torch.manual_seed(0)
    shapes = [(37, 1000), (130, 1000)] if QUICK else [(1823, 781), (4096, 1024), (513, 3000)]
    worst = 0.0
    for shape in shapes:
        x = torch.randn(*shape, dtype=torch.float32) * 4
        # A strided view: rows are not contiguous with each other.
        x = torch.cat([x, x], dim=1)[:, :shape[1]]
        y = softmax(x)
        ref = torch.softmax(x, dim=1)
        worst = max(worst, (y - ref).abs().max().item())
        torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6)
    print(f"softmax matches torch.softmax on {len(shapes)} shapes (max abs difference {worst:.2e})")
    kernel, occupancy, programs = _last_launch
    print(f"persistent grid for {shapes[-1]}: {programs} programs = min(rows, {NUM_SM} threads x occupancy "
          f"{occupancy}) with n_regs={kernel.n_regs}, shared={kernel.metadata.shared} bytes")


_torch_compiled = None


def compiled_softmax(x):
    global _torch_compiled
    if _torch_compiled is None:
        _torch_compiled = torch.compile(lambda t: torch.softmax(t, dim=-1))
    return _torch_compiled(x)


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],
        x_vals=[128 * i for i in (1, 2, 4, 8, 16, 32)],
        line_arg="provider",
        line_vals=["triton-cpu", "torch", "torch.compile"],
        line_names=["Triton (CPU backend)", "torch.softmax", "torch.compile"],
        styles=[("blue", "-"), ("green", "-"), ("red", "--")],
        ylabel="GB/s",
        plot_name="softmax-cpu",
        args={"M": 4096},
    ))
def benchmark(M, N, provider):
    x = torch.randn(M, N, dtype=torch.float32)
    if provider == "torch":
        fn = lambda: torch.softmax(x, dim=-1)
    elif provider == "torch.compile":
        fn = lambda: compiled_softmax(x)
    else:
        fn = lambda: softmax(x)
    ms = triton.testing.do_bench(fn, warmup=10, rep=100)
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


if __name__ == "__main__":
    check()
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark.run(print_data=True, show_plots=False)
