"""Kernels the benchmarks share: the tutorial's vector add and a 10-op fused elementwise kernel."""
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def fused_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = x * y + 1.0
    z = tl.maximum(z, 0.0) - x / (y * y + 1.0)
    z = tl.exp(z * 0.1) + tl.sqrt(tl.abs(z)) * 0.5
    tl.store(out_ptr + offs, tl.where(z > 1.0, z, -z), mask=m)
