"""Atomics: one LLVM atomicrmw/cmpxchg per element, in index order, under the mask,
with the requested ordering (the CPU has one coherence domain: every scope is system
scope). A tensor result (the old values) goes to a buffer when it is used.

tt.atomic_poll spins on each element in index order (a runtime call per element), all
elements sharing one time budget that starts when the op does."""
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation

from triton_cpu.analysis.axis_info import shape_of
from triton_cpu.dialects import tcpu, tt
from triton_cpu.dialects.compat import arith

from .util import is_tensor

_RMW_KINDS = {tt.RMWOp.AND: "and", tt.RMWOp.OR: "or", tt.RMWOp.XOR: "xor", tt.RMWOp.ADD: "add",
              tt.RMWOp.FADD: "fadd", tt.RMWOp.MAX: "max", tt.RMWOp.MIN: "min", tt.RMWOp.UMAX: "umax",
              tt.RMWOp.UMIN: "umin", tt.RMWOp.EXCH: "xchg"}
_ORDERINGS = {tt.MemSemantic.RELAXED: "monotonic", tt.MemSemantic.ACQUIRE: "acquire",
              tt.MemSemantic.RELEASE: "release", tt.MemSemantic.ACQ_REL: "acq_rel"}


def lower_atomic(low, op: Operation):
    ordering = _ORDERINGS[op.get_sem()]
    if op.name == "tt.atomic_rmw":
        kind = _RMW_KINDS[op.get_rmw_op()]
        operands = [op.ptr, op.val, op.mask]
        make = lambda p, v, m: tcpu.AtomicRMWOp(p, v, m, kind, ordering)
    else:
        operands = [op.ptr, op.cmp, op.val]
        make = lambda p, c, v: tcpu.AtomicCASOp(p, c, v, ordering)
    result = op.results[0]
    em = low.emitter_before(op)
    low.lowered_effects.add(op)
    if not is_tensor(op.ptr):
        result.replace_all_uses_with(em.emit(make(*operands)))
        op.detach()
        op.erase()
        return
    buf = low.alloc_buffer(result.type) if result.uses else None

    def body(e, idx):
        old = e.emit(make(*[e.value(x, idx, 1) if x is not None else None for x in operands]))
        if buf is not None:
            e.store_buffer(old, buf, idx)
    low.nest(em, shape_of(op.ptr), 1, body)
    if buf is not None:
        low.buffers[result] = buf


def lower_poll(low, op: Operation):
    acquire = op.get_sem() in (tt.MemSemantic.ACQUIRE, tt.MemSemantic.ACQ_REL)
    em = low.emitter_before(op)
    if op.timeout is None:
        deadline = em.emit(arith.ConstantOp(IntegerAttr(-1, i64)))
    else:
        deadline = em.emit(arith.AddiOp(em.emit(tcpu.ClockOp()), op.timeout))
    result = op.results[0]
    low.lowered_effects.add(op)
    if not is_tensor(op.ptr):
        result.replace_all_uses_with(em.emit(tcpu.AtomicPollOp(op.ptr, op.expected, deadline, acquire)))
        op.detach()
        op.erase()
        return
    buf = low.alloc_buffer(result.type) if result.uses else None

    def body(e, idx):
        ok = e.emit(tcpu.AtomicPollOp(e.value(op.ptr, idx, 1), e.value(op.expected, idx, 1), deadline, acquire))
        if buf is not None:
            e.store_buffer(ok, buf, idx)
    low.nest(em, shape_of(op.ptr), 1, body)
    if buf is not None:
        low.buffers[result] = buf
