"""insert-bounds-checks: the bounds-checked mode (`TRITON_CPU_BOUNDS_CHECK=1`, or the
`bounds_check=True` launch option).

Runs on TritonCPU IR, after convert-triton-to-tcpu. Every access to user memory
(tcpu.load/vload/gather, tcpu.store/vstore/scatter, tcpu.atomic_rmw/atomic_cas/
atomic_poll) gets a `tcpu.bounds_check` right before it, whose result (the active lanes
that are inside the right storage) replaces the access's mask. Violating lanes are
therefore never touched; the code generator makes the check report them to the launch,
and the launcher raises one RuntimeError at the end of the launch.

Which storage a pointer must stay in is the pointer's provenance: the kernel argument it
was derived from, followed back through tcpu.addptr, broadcasts, lane shuffles, selects,
bitcasts, loop-carried values and the buffers pointer tensors are materialized in. A
pointer that may derive from several arguments (a select between two of them) must lie
in one of their storages. A pointer whose provenance includes something else (made from
an integer by tt.int_to_ptr, loaded from memory as in a table of pointers, any pointer
inside a non-kernel function) is not checked: its storage may be no argument of the
launch at all, and a false report would be worse than none.

Internal buffers (memref.alloca, constant tables) are the compiler's own and are not
checked.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import pointee_bytes
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.ttir import user_location

_UNKNOWN = -1
_LOADS = ("tcpu.load", "tcpu.vload", "tcpu.gather")
_STORES = ("tcpu.store", "tcpu.vstore", "tcpu.scatter")
_ATOMICS = ("tcpu.atomic_rmw", "tcpu.atomic_cas", "tcpu.atomic_poll")


class Provenance:
    """Which kernel argument a pointer value derives from (memoized per function)."""

    # Ops whose pointer result derives from their first operand.
    _FROM_FIRST = ("tcpu.addptr", "tcpu.bitcast", "vector.broadcast")

    def __init__(self, func_op: Operation, is_kernel: bool):
        entry = func_op.regions[0].blocks[0]
        self.args = {a: i for i, a in enumerate(entry.args)} if is_kernel else {}
        self.memo: dict[SSAValue, frozenset] = {}

    def arguments(self, ptr: SSAValue) -> list[int]:
        """The kernel arguments `ptr` may derive from; [] when it is not known."""
        roots = self.roots(ptr)
        return [] if not roots or _UNKNOWN in roots else sorted(roots)

    def roots(self, v: SSAValue) -> frozenset:
        hit = self.memo.get(v)
        if hit is not None:
            return hit
        self.memo[v] = frozenset()  # a cycle (loop-carried pointer) adds nothing by itself
        result = self._roots(v)
        self.memo[v] = result
        return result

    def _union(self, values) -> frozenset:
        out = frozenset()
        for x in values:
            out |= self.roots(x)
        return out

    def _roots(self, v: SSAValue) -> frozenset:
        if isinstance(v, BlockArgument):
            if v in self.args:
                return frozenset([self.args[v]])
            return self._block_argument(v)
        op = v.owner
        name = op.name
        if name in self._FROM_FIRST:
            return self.roots(op.operands[0])
        if name == "arith.select":
            return self._union(op.operands[1:])
        if name == "vector.insert":
            return self._union(op.operands[:2])
        if name == "vector.shuffle":
            return self._union(op.operands)
        if name == "vector.extract":
            return self.roots(op.operands[0])
        if name in ("memref.load", "vector.load"):
            return self._buffer(op.operands[0])
        if name in ("scf.for", "scf.if", "scf.while"):
            k = list(op.results).index(v)
            return self._yields(op, k, inits=name != "scf.if")
        return frozenset([_UNKNOWN])

    def _block_argument(self, arg: BlockArgument) -> frozenset:
        parent = arg.block.parent_op()
        if parent is not None and parent.name == "scf.for" and arg.index > 0:
            return self._yields(parent, arg.index - 1, inits=True)
        if parent is not None and parent.name == "scf.while":
            return self._union([*parent.operands, *(t for blk in parent.regions[0].blocks for t in _terminator_args(blk))])
        return frozenset([_UNKNOWN])

    def _yields(self, op: Operation, k: int, inits: bool) -> frozenset:
        values = []
        if inits:
            init_offset = 3 if op.name == "scf.for" else 0
            if init_offset + k < len(op.operands):
                values.append(op.operands[init_offset + k])
        for region in op.regions:
            for blk in region.blocks:
                args = _terminator_args(blk)
                if k < len(args):
                    values.append(args[k])
        return self._union(values) if values else frozenset([_UNKNOWN])

    def _buffer(self, ref: SSAValue) -> frozenset:
        """Pointers read from a materialized pointer tensor: whatever was stored into it."""
        if isinstance(ref, BlockArgument) or ref.owner.name != "memref.alloca":
            return frozenset([_UNKNOWN])
        stored = [u.operation.operands[0] for u in ref.uses
                  if u.operation.name in ("memref.store", "vector.store") and u.index == 1]
        return self._union(stored) if stored else frozenset([_UNKNOWN])


def _terminator_args(blk: Block):
    """What a structured region's block passes on: scf.yield's operands, or scf.condition's
    after the condition."""
    term = blk.last_op
    if term is None or term.name not in ("scf.yield", "scf.condition"):
        return []
    return list(term.operands[1:] if term.name == "scf.condition" else term.operands)


def _lanes(t) -> int:
    return t.get_shape()[0] if isinstance(t, VectorType) else 1


def _elem_bytes(ptr: SSAValue) -> int:
    t = ptr.type
    return pointee_bytes(t.element_type if isinstance(t, VectorType) else t)


def _check(op: Operation, kind: str, lanes: int, args: list[int]) -> SSAValue:
    """Inserts the check of `op`'s access before it; returns the mask the access should use."""
    loc = user_location(op)
    file, line = (loc[0], loc[1]) if loc else ("<unknown>", 0)
    check = tcpu.BoundsCheckOp(op.ptr, op.mask, kind, args, lanes, _elem_bytes(op.ptr), file, line)
    check.location = op.location
    op.parent_block().insert_op_before(check, op)
    return check.result


def _replace(op: Operation, new: Operation):
    new.location = op.location
    for k, v in op.properties.items():
        if k != "operandSegmentSizes" and k not in new.properties:
            new.properties[k] = v
    op.parent_block().insert_op_before(new, op)
    for old_r, new_r in zip(op.results, new.results):
        old_r.replace_all_uses_with(new_r)
    op.detach()
    op.erase()


def _instrument(op: Operation, prov: Provenance):
    args = prov.arguments(op.ptr)
    if not args:
        return  # provenance unknown: not checked (see the module docstring)
    name = op.name
    align = op.properties.get("alignment")
    align = align.value.data if align is not None else None
    if name in _LOADS:
        lanes = _lanes(op.results[0].type)
        m = _check(op, "load", lanes, args)
        _replace(op, type(op)(op.ptr, op.results[0].type, m, op.other, align))
    elif name in _STORES:
        lanes = _lanes(op.value.type)
        m = _check(op, "store", lanes, args)
        _replace(op, type(op)(op.ptr, op.value, m, align))
    elif name == "tcpu.atomic_rmw":
        m = _check(op, "atomic", 1, args)
        _replace(op, tcpu.AtomicRMWOp(op.ptr, op.val, m, op.kind.data, op.ordering.data))
    elif name == "tcpu.atomic_cas":
        m = _check(op, "atomic", 1, args)
        _replace(op, tcpu.AtomicCASOp(op.ptr, op.cmp, op.val, op.ordering.data, m))
    elif name == "tcpu.atomic_poll":
        m = _check(op, "atomic", 1, args)
        _replace(op, tcpu.AtomicPollOp(op.ptr, op.expected, op.deadline, bool(op.acquire.value.data), m))


@dataclass(frozen=True)
class InsertBoundsChecks(ModulePass):
    name = "insert-bounds-checks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in list(op.body.block.ops):
            if f.name != "func.func":
                continue
            vis = f.properties.get("sym_visibility")
            prov = Provenance(f, is_kernel=vis is None or vis.data == "public")
            for inner in [o for o in f.walk() if o.name in _LOADS + _STORES + _ATOMICS]:
                _instrument(inner, prov)
