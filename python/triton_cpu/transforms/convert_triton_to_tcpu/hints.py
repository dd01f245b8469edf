"""Ops that compute nothing on a CPU, or only hint.

ttg.barrier (`tl.debug_barrier`) orders the threads of one GPU program; here a program
runs on one thread, in program order, so it is dropped. (llvm.intr.assume, which Triton
only allows on scalars, needs no lowering: it stays for the code generator, which emits
LLVM's assume.)

tcpu.prefetch on a tensor of pointers (from prefetch-next-program) becomes one scalar
tcpu.prefetch per cache line: a loop over the tile's rows and, along the last axis (which
that pass requires to be contiguous over a line), one element per line.
"""
from xdsl.ir import Operation

from triton_cpu.analysis.axis_info import element_type, pointee_bytes, shape_of
from triton_cpu.dialects import tcpu

from .util import is_tensor

LINE_BYTES = 64


def line_step(ptr) -> int:
    """Elements of a tile of pointers `ptr` along its last axis that one prefetch covers:
    a cache line's worth, or the whole axis when shorter."""
    return min(max(1, LINE_BYTES // pointee_bytes(element_type(ptr.type))), shape_of(ptr)[-1])


def drop(low, op: Operation):
    op.detach()
    op.erase()


def lower_prefetch(low, op: Operation):
    ptr = op.ptr
    if not is_tensor(ptr):
        return
    shape = shape_of(ptr)
    steps = [1] * (len(shape) - 1) + [line_step(ptr)]
    low.nest_steps(low.emitter_before(op), shape, steps,
                   lambda em, idx: em.emit(tcpu.PrefetchOp(em.value(ptr, idx, 1))))
    drop(low, op)
