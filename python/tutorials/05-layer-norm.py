"""
Layer normalization on the CPU
==============================

y = (x - mean(x)) / sqrt(var(x) + eps) * w + b over the last dimension, forward and
backward, wrapped in a `torch.autograd.Function` so that `loss.backward()` runs the
Triton kernels.

* Forward: one program per row; it keeps the row in registers/scratch, reduces it twice
  (mean, then variance), writes y, and saves mean and 1/std for the backward pass.
* Backward, input gradient: one program per row, from the saved statistics.
* Backward, weight and bias gradients: dw = sum over rows of dy * x_hat, db = sum of dy.
  Instead of one partial row per input row (M x N floats), programs add their partial
  rows into GROUP buffers; program r uses buffer r % GROUP. A buffer is guarded by a spin
  lock taken with `tl.atomic_cas` and released with `tl.atomic_xchg`, next to a flag that
  says whether the buffer already holds data. A second kernel then sums the GROUP
  partial rows. The CPU backend lowers the atomics to LLVM `cmpxchg`/`atomicrmw xchg`,
  atomic across the launcher's threads, so the lock works as on a GPU.

    python python/tutorials/05-layer-norm.py

prints the forward and gradient checks against torch and a forward benchmark.
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
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, N, eps,
                          BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    valid = cols < N
    x = tl.load(x_ptr + row * row_stride + cols, mask=valid, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    # Padding lanes must not contribute (x - mean) to the variance.
    centered = tl.where(valid, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=valid)
    b = tl.load(b_ptr + cols, mask=valid)
    y = centered * rstd * w + b
    tl.store(y_ptr + row * row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=valid)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@triton.jit
def layer_norm_bwd_dx_kernel(x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr,  #
                             partial_dw_ptr, partial_db_ptr, locks_ptr,  #
                             row_stride, N, GROUP: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    valid = cols < N
    x = tl.load(x_ptr + row * row_stride + cols, mask=valid, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + row * row_stride + cols, mask=valid, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=valid, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + row)
    rstd = tl.load(rstd_ptr + row)

    # dx = rstd * (w*dy - mean(w*dy) - x_hat * mean(w*dy*x_hat))
    x_hat = tl.where(valid, (x - mean) * rstd, 0.0)
    wdy = w * dy
    mean_wdy = tl.sum(wdy, axis=0) / N
    mean_wdy_xhat = tl.sum(wdy * x_hat, axis=0) / N
    dx = (wdy - mean_wdy - x_hat * mean_wdy_xhat) * rstd
    tl.store(dx_ptr + row * row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=valid)

    # This row's share of dw and db, added into buffer `row % GROUP` under its lock.
    dw = dy * x_hat
    db = dy
    slot = row % GROUP
    lock = locks_ptr + slot
    filled = locks_ptr + GROUP + slot
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    buf_dw = partial_dw_ptr + slot * N + cols
    buf_db = partial_db_ptr + slot * N + cols
    if tl.load(filled) == 0:
        tl.atomic_xchg(filled, 1)  # first writer: the buffer held garbage
    else:
        dw += tl.load(buf_dw, mask=valid)
        db += tl.load(buf_db, mask=valid)
    tl.store(buf_dw, dw, mask=valid)
    tl.store(buf_db, db, mask=valid)
    tl.atomic_xchg(lock, 0)


@triton.jit
def layer_norm_bwd_dwdb_kernel(partial_dw_ptr, partial_db_ptr, dw_ptr, db_ptr, GROUP, N,  #
                               BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    # Program j sums columns [j*BLOCK_N, (j+1)*BLOCK_N) of the GROUP partial rows.
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc_dw = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    acc_db = tl.zeros((BLOCK_G, BLOCK_N), dtype=tl.float32)
    for g0 in range(0, GROUP, BLOCK_G):
        rows = g0 + tl.arange(0, BLOCK_G)
        m = (rows[:, None] < GROUP) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        acc_dw += tl.load(partial_dw_ptr + offs, mask=m, other=0.0)
        acc_db += tl.load(partial_db_ptr + offs, mask=m, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(acc_dw, axis=0), mask=cols < N)
    tl.store(db_ptr + cols, tl.sum(acc_db, axis=0), mask=cols < N)


def _group_count(M):
    # Enough buffers that the launcher's threads rarely wait for the same lock, few enough
    # that the final reduction is cheap.
    threads = driver.active.utils.get_device_properties(driver.active.get_current_device())["multiprocessor_count"]
    return max(1, min(M, 8 * threads))


class LayerNorm(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x, normalized_shape, weight, bias, eps):
        x2d = x.reshape(-1, x.shape[-1]).contiguous()
        M, N = x2d.shape
        BLOCK_N = triton.next_power_of_2(N)
        if N * x.element_size() > 65536:
            raise RuntimeError("this layer norm keeps a row in one block: feature dimension too large")
        y = torch.empty_like(x2d)
        mean = torch.empty(M, dtype=torch.float32)
        rstd = torch.empty(M, dtype=torch.float32)
        layer_norm_fwd_kernel[(M, )](x2d, y, weight, bias, mean, rstd, x2d.stride(0), N, eps, BLOCK_N=BLOCK_N)
        ctx.save_for_backward(x2d, weight, bias, mean, rstd)
        ctx.BLOCK_N = BLOCK_N
        ctx.in_shape = x.shape
        return y.view(x.shape)

    @staticmethod
    def backward(ctx, dy):
        x2d, w, b, mean, rstd = ctx.saved_tensors
        M, N = x2d.shape
        GROUP = _group_count(M)
        dy2d = dy.reshape(-1, N).contiguous()
        dx = torch.empty_like(dy2d)
        # Locks and "filled" flags must start at zero; the partial buffers need not.
        locks = torch.zeros(2 * GROUP, dtype=torch.int32)
        partial_dw = torch.empty((GROUP, N), dtype=torch.float32)
        partial_db = torch.empty((GROUP, N), dtype=torch.float32)
        layer_norm_bwd_dx_kernel[(M, )](x2d, dy2d, dx, w, mean, rstd, partial_dw, partial_db, locks, x2d.stride(0), N,
                                        GROUP=GROUP, BLOCK_N=ctx.BLOCK_N)
        dw = torch.empty((N, ), dtype=w.dtype)
        db = torch.empty((N, ), dtype=w.dtype)
        BLOCK_COLS = 128
        layer_norm_bwd_dwdb_kernel[(triton.cdiv(N, BLOCK_COLS), )](partial_dw, partial_db, dw, db, GROUP, N,
                                                                   BLOCK_G=16, BLOCK_N=BLOCK_COLS)
        return dx.view(ctx.in_shape), None, dw, db, None


layer_norm = LayerNorm.apply


def check():
    torch.manual_seed(0)
    shapes = [(70, 100)] if QUICK else [(1151, 1000), (4096, 1024), (8, 3, 777)]
    eps = 1e-5
    for shape in shapes:
        N = shape[-1]
        x = (torch.randn(*shape) * 2 + 0.5).requires_grad_(True)
        w = torch.rand(N).requires_grad_(True)
        b = torch.randn(N).requires_grad_(True)
        dy = torch.randn(*shape)

        y = layer_norm(x, (N, ), w, b, eps)
        y.backward(dy)
        got = y.detach(), x.grad.clone(), w.grad.clone(), b.grad.clone()
        x.grad, w.grad, b.grad = None, None, None

        ref_y = torch.nn.functional.layer_norm(x, (N, ), w, b, eps)
        ref_y.backward(dy)
        want = ref_y.detach(), x.grad, w.grad, b.grad
        for name, g, r in zip(["y", "dx", "dw", "db"], got, want):
            # dw and db sum over all rows: allow for the different summation order.
            tol = 1e-4 if name in ("y", "dx") else 1e-4 * (x.numel() // N)**0.5
            torch.testing.assert_close(g, r, rtol=1e-4, atol=tol, msg=lambda m: f"{name} of {shape}: {m}")
    print(f"layer norm forward and gradients (dx, dw, db) match torch.nn.functional.layer_norm "
          f"on {len(shapes)} shapes")


_compiled_ln = None


def compiled_layer_norm(x, shape, w, b, eps):
    global _compiled_ln
    if _compiled_ln is None:
        _compiled_ln = torch.compile(torch.nn.functional.layer_norm)
    return _compiled_ln(x, shape, w, b, eps)


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],
        x_vals=[256 * i for i in (1, 2, 4, 8)],
        line_arg="provider",
        line_vals=["triton-cpu", "torch", "torch.compile"],
        line_names=["Triton (CPU backend)", "torch layer_norm", "torch.compile"],
        styles=[("blue", "-"), ("green", "-"), ("red", "--")],
        ylabel="GB/s",
        plot_name="layer-norm-forward-cpu",
        args={"M": 4096},
    ))
def benchmark(M, N, provider):
    x = torch.randn(M, N)
    w, b = torch.rand(N), torch.randn(N)
    with torch.no_grad():
        if provider == "torch":
            fn = lambda: torch.nn.functional.layer_norm(x, (N, ), w, b, 1e-5)
        elif provider == "torch.compile":
            fn = lambda: compiled_layer_norm(x, (N, ), w, b, 1e-5)
        else:
            fn = lambda: layer_norm(x, (N, ), w, b, 1e-5)
        ms = triton.testing.do_bench(fn, warmup=10, rep=100)
    return 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)


if __name__ == "__main__":
    check()
    if not QUICK:
        print(f"Threads: {torch.get_num_threads()} (set OMP_NUM_THREADS or TRITON_CPU_NUM_THREADS)")
        benchmark.run(print_data=True, show_plots=False)
