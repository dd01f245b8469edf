"""A kernel that applies a library's @triton.jit function to a 2-D tile: for the cases whose
subject is a device function (an inline-PTX decoder, an activation) rather than a kernel.
The function is a constexpr argument, so each one gets its own compiled probe."""
import triton
import triton.language as tl


@triton.jit
def _probe(x_ptr, out_ptr, FN: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, FN(tl.load(x_ptr + offs)))


@triton.jit
def _probe_pair(x_ptr, y_ptr, out_ptr, FN: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, FN((tl.load(x_ptr + offs), tl.load(y_ptr + offs))))
