"""Loads re-read past scalar stores, copied only when a store overlaps them.

A load that a memory write may separate from one of its consumers must give the consumer
what memory held at the load, as on a GPU, where the load fills registers: the fusion core
used to copy such a load into a buffer right after it, in every program. Row-wise kernels
that keep their statistics for a backward pass do that on every row: Liger-Kernel's layer
norm loads the weight and bias rows first, stores the row's mean and rstd (one element
each) and only then computes the output from the weight and bias (the two 4 KiB copies
per row were a third of the kernel's time); FlagGems' keeps its input row across the same
two stores.

Here, when every write in between is a store of one element (a scalar `tt.store`) and the
load reads one contiguous run of memory (a 1-D tile of pointers contiguous over its whole
length, so that its bytes are [ptr[0], ptr[N-1] + size), computed where the load stands),
the consumers read memory again (the load stays fused, `cheap_to_reload`) and each of
those stores first tests whether it writes inside that run: only then, and only at the
first such store, is the load copied into its buffer, before the store changes memory,
and a flag says that the consumers must read the copy. Without overlap (distinct tensors,
the case of every kernel library seen) the cost is two compares per store and one
well-predicted branch per chunk a consumer reads; with overlap the result is what the
copy-at-the-load gave.

The flag lives in a one-element buffer, set to 0 where the load runs (again at each
execution of the load, in a loop), so that a store under `scf.if` is covered the same way;
LLVM keeps it in a register. (A consumer in a loop that does not hold the load is never
guarded: the load is copied once for such a loop anyway, see materialization_plan.)
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
    """A load read again by its consumers, with the stores that may overwrite it; the rest
    is set where the load stands (at_definition)."""
    writes: frozenset  # scalar tt.store ops between the load and a consumer
    buf: SSAValue | None = None   # the copy, valid when flag != 0
    flag: SSAValue | None = None  # memref<1xi8>
    lo: SSAValue | None = None    # the load's first byte address (i64)
    hi: SSAValue | None = None    # one past its last byte


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
    """Allocates the copy and the flag of guarded `value` (a result of `op`); where `op`
    runs, clears the flag and computes the bytes the load reads (the pointers' operands
    are defined there, and the load's position dominates every store it is guarded from)."""
    g = low.guarded[value]
    g.buf = low.alloc_buffer(value.type)
    g.flag = low.alloc_buffer(TensorType(i8, [1]))
    em = low.emitter_before(op.next_op)
    em.store_buffer(_i8(em, 0), g.flag, (0,))
    g.lo, g.hi = byte_range(em, op.ptr)


def byte_range(em, ptr: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The bytes [ptr[0], ptr[n-1] + element size) of a 1-D tile of n pointers, as i64
    addresses: all the tile touches when its lanes run up contiguously or repeat one
    address (also store_groups)."""
    n = shape_of(ptr)[0]
    lo = _address(em, em.value(ptr, (0,), 1))
    last = _address(em, em.value(ptr, (n - 1,), 1))
    return lo, em.emit(arith.AddiOp(last, _i64(em, pointee_bytes(element_type(ptr.type)))))


def before_store(low, em, store: Operation):
    """At scalar `store`: for each guarded load it may overwrite, copy the load into its
    buffer when the store's element lies in the load's bytes and no copy was taken yet."""
    guards = [(value, g) for value, g in low.guarded.items() if store in g.writes and g.flag is not None]
    if not guards:
        return
    at = _address(em, store.operands[0])
    end = em.emit(arith.AddiOp(at, _i64(em, pointee_bytes(store.operands[0].type))))
    for value, g in guards:
        overlap = em.emit(arith.AndIOp(em.emit(arith.CmpiOp(at, g.hi, "ult")), em.emit(arith.CmpiOp(end, g.lo, "ugt"))))

        def copy(e, value=value, g=g):
            n = shape_of(value)[0]
            vl = low.vector_length((n,), [value])
            # _value, not value: the load itself, from memory (the flag is still 0 here).
            low.nest_steps(e, (n,), [vl], lambda c, idx: c.store_buffer(c._value(value, idx, vl, 0), g.buf, idx))
            e.store_buffer(_i8(e, 1), g.flag, (0,))
            return []
        em.if_else(em.emit(arith.AndIOp(overlap, _flag_is(em, g, "eq"))), [], copy, lambda e: [])


def read(em, value: SSAValue, idx, width: int) -> SSAValue:
    """Guarded `value` at `idx` (its only axis): the copy when a store took one, else the
    load itself, read again."""
    g = em.low.guarded[value]
    rtype = vec_type(element_type(value.type), width)
    return em.if_else(_flag_is(em, g, "ne"), [rtype], lambda e: [e.load_buffer(g.buf, idx, width)],
                      lambda e: [e._value(value, idx, width, 0)])[0]


def _flag_is(em, g: Guard, pred: str) -> SSAValue:
    """The flag compared with 0 ("eq": no copy taken yet; "ne": taken)."""
    return em.emit(arith.CmpiOp(em.load_buffer(g.flag, (0,), 1), _i8(em, 0), pred))


def _address(em, ptr: SSAValue) -> SSAValue:
    return em.emit(tcpu.PtrToIntOp(ptr, i64))


def _i8(em, v: int) -> SSAValue:
    return em.emit(arith.ConstantOp(IntegerAttr(v, i8)))


def _i64(em, v: int) -> SSAValue:
    return em.emit(arith.ConstantOp(IntegerAttr(v, i64)))
