"""Loads re-read past scalar stores, copied only when a store overlaps them.

A load that a memory write may separate from one of its consumers must give the consumer
what memory held at the load, as on a GPU, where the load fills registers: the fusion core
used to copy such a load into a buffer right after it, in every program. Row-wise kernels
that keep their statistics for a backward pass do that on every row: Liger-Kernel's and
FlagGems' layer norms load the weight and bias rows first, store the row's mean and rstd
(one element each) and only then compute the output from the weight and bias; the two
4 KiB copies per row were a third of the kernel's time.

Here, when every write in between is a store of one element (a scalar `tt.store`) and the
load reads one contiguous run of memory (a 1-D tile of pointers contiguous over its whole
length, so that its bytes are [ptr[0], ptr[N-1] + size)), the consumers read memory again
(the load stays fused, `cheap_to_reload`) and each of those stores first tests whether it
writes inside that run: only then, and only at the first such store, is the load copied
into its buffer, before the store changes memory, and a flag says that the consumers must
read the copy. Without overlap (distinct tensors, the case of every kernel library seen)
the cost is two compares per store and one well-predicted branch per chunk a consumer
reads; with overlap the result is what the copy-at-the-load gave.

The flag lives in a one-element buffer, set to 0 where the load runs (again at each
execution of the load, in a loop), so that stores under `scf.if` or in a loop around the
consumers (an earlier iteration's store) are covered the same way; LLVM keeps it in a
register.
"""
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, TensorType, i8, i64
from xdsl.ir import Operation, SSAValue

from triton_cpu.analysis.axis_info import element_type, pointee_bytes, shape_of
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.compat import arith

from .util import is_tensor, is_volatile, vec_type


@dataclass
class Guard:
    """A load read again by its consumers, with the stores that may overwrite it."""
    writes: frozenset  # scalar tt.store ops between the load and a consumer
    buf: SSAValue | None = None   # the copy, valid when flag != 0
    flag: SSAValue | None = None  # memref<1xi8>


def guardable(low, load: Operation, writes) -> bool:
    """Can `load` be re-read past `writes` behind a run-time overlap test? Every write a
    store of one element; the load one contiguous run of memory, not volatile."""
    # (A store through a block pointer has a tensor value: its pointer is not a tensor
    # type, but it writes a whole tile.)
    if not writes or not all(w.name == "tt.store" and not is_tensor(w.operands[0]) and not is_tensor(w.operands[1])
                             for w in writes):
        return False
    if not is_tensor(load.ptr) or is_volatile(load):
        return False
    shape = shape_of(load.ptr)
    return len(shape) == 1 and shape[0] >= 2 and low.axis.get(load.ptr).contiguity[0] >= shape[0]


def at_definition(low, op: Operation, value: SSAValue):
    """Allocates the copy and the flag of guarded `value` (a result of `op`), and clears
    the flag where `op` runs."""
    g = low.guarded[value]
    g.buf = low.alloc_buffer(value.type)
    g.flag = low.alloc_buffer(TensorType(i8, [1]))
    em = low.emitter_before(op.next_op)
    em.store_buffer(em.emit(arith.ConstantOp(IntegerAttr(0, i8))), g.flag, (0,))


def before_store(low, em, store: Operation):
    """At scalar `store`: for each guarded load it may overwrite, copy the load into its
    buffer when the store's element lies in the load's bytes and no copy was taken yet."""
    for value, g in low.guarded.items():
        if store not in g.writes or g.flag is None:
            continue
        load = value.owner
        n = shape_of(value)[0]
        size = pointee_bytes(element_type(load.ptr.type))
        lo = em.emit(tcpu.PtrToIntOp(em.value(load.ptr, (0,), 1), i64))
        hi = em.emit(tcpu.PtrToIntOp(em.value(load.ptr, (n - 1,), 1), i64))
        hi = em.emit(arith.AddiOp(hi, _i64(em, size)))
        at = em.emit(tcpu.PtrToIntOp(store.operands[0], i64))
        end = em.emit(arith.AddiOp(at, _i64(em, pointee_bytes(store.operands[0].type))))
        overlap = em.emit(arith.AndIOp(em.emit(arith.CmpiOp(at, hi, "ult")), em.emit(arith.CmpiOp(end, lo, "ugt"))))
        fresh = em.emit(arith.CmpiOp(em.load_buffer(g.flag, (0,), 1), em.emit(arith.ConstantOp(IntegerAttr(0, i8))),
                                     "eq"))

        def copy(e, value=value, g=g, n=n):
            vl = low.vector_length((n,), [value])
            # _value, not value: the load itself, from memory (the flag is still 0 here).
            low.nest_steps(e, (n,), [vl], lambda c, idx: c.store_buffer(c._value(value, idx, vl, 0), g.buf, idx))
            e.store_buffer(e.emit(arith.ConstantOp(IntegerAttr(1, i8))), g.flag, (0,))
            return []
        em.if_else(em.emit(arith.AndIOp(overlap, fresh)), [], copy, lambda e: [])


def read(em, value: SSAValue, idx, width: int) -> SSAValue:
    """Guarded `value` at `idx` (its only axis): the copy when a store took one, else the
    load itself, read again."""
    g = em.low.guarded[value]
    copied = em.emit(arith.CmpiOp(em.load_buffer(g.flag, (0,), 1), em.emit(arith.ConstantOp(IntegerAttr(0, i8))),
                                  "ne"))
    rtype = vec_type(element_type(value.type), width)
    return em.if_else(copied, [rtype], lambda e: [e.load_buffer(g.buf, idx, width)],
                      lambda e: [e._value(value, idx, width, 0)])[0]


def _i64(em, v: int) -> SSAValue:
    return em.emit(arith.ConstantOp(IntegerAttr(v, i64)))
