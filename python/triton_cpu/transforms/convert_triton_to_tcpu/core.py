"""The fusion and materialization core of convert-triton-to-tcpu.

A TTIR tensor never becomes one big vector. Each tensor value is either

  * fused: recomputed, one vector of lanes at a time, inside the loop nest of the
    operation that consumes it (`TileEmitter.value`), or
  * materialized: computed once into a buffer (`memref.alloca`; the code generator puts
    large ones in the per-thread scratch arena) that consumers read.

For a consumer of shape (D0, ..., Dn) the nest loops over D0..Dn-1 one index at a
time and over Dn in steps of VL lanes, VL sized to two native registers of 32-bit
elements (`FuncLowering.vector_length`); so the generated code grows with the number of
ops, never with the block size.

Inside the nest each producer is evaluated at the current indices, either as a vector
of lanes or as one scalar (for values broadcast along the lane dimension, and for the
address of a contiguous access). This module evaluates splat, make_range, constants,
loads and elementwise ops itself and shape ops through `shape_ops.FUSED`. Loads use the
axis analysis on their pointer: contiguous along the lane dimension gives
`tcpu.vload`/`tcpu.vstore` at one scalar address, a pointer constant along it a scalar
load broadcast to the lanes, contiguous only if an unproven x >= 0 holds (offsets through
x % m) a vector access behind a run-time `tcpu.is_contiguous` check (done once before the
loops around the access when the addresses allow, `contiguity_checks`), a load whose lanes
step by 2..4 elements one contiguous window load plus a shuffle, shared by the loads that
differ only in a small constant offset (`strided_loads`; behind the same check when the
contiguity is assumed), anything else a gather/scatter; a load whose mask is
splat(c) & rest (Triton's guard on a load it hoists out of a loop) branches on c first.
Values whose runs along the lane dimension are longer than a step are computed once per
group of steps (`lane_groups`).

`FuncLowering.materialization_plan` decides what is computed once (a load that a write
may separate from a consumer, unless only stores of one element do, see `write_guards`;
an expensive value with several consumers or used in a loop it is defined outside of); the
construct modules (reductions, dot, control flow, atomics, debug ops) put their
results in buffers. The package's `__init__` walks the function in program order and
calls the lowering registered for each op.
"""
from contextlib import contextmanager
from dataclasses import dataclass
from math import gcd

from xdsl.dialects import math, memref, scf, vector
from xdsl.dialects.builtin import (
    BFloat16Type, DenseArrayBase, DenseIntOrFPElementsAttr, Float16Type, Float32Type, Float64Type, FloatAttr,
    IntegerAttr, IntegerType, MemRefType, StringAttr, UnitAttr, VectorType, i1, i64,
)
from xdsl.dialects.builtin import UnknownLoc
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import MemoryEffectKind, has_effects

from triton_cpu.codegen import externs
from triton_cpu.analysis.axis_info import (
    AxisInfoAnalysis, attr as _attr, attr_int, element_type, pointee_bytes, shape_of,
)
from triton_cpu.analysis.row_addresses import lanes_distinct, pointer_root
from triton_cpu.dialects import tcpu, tt
from triton_cpu.dialects.tcpu import NO_UNROLL
from triton_cpu.dialects.compat import arith, splat_value
from triton_cpu.errors import UnsupportedError

from . import contiguity_checks, hints, reductions, runtime_groups, store_groups, strided_loads, write_guards
from .lane_groups import LaneGroup, group_size, grouped_value
from .shape_ops import FUSED
from .util import ELEMENTWISE_PREFIXES, INDEX, Index, bits, is_tensor, is_volatile, vec_type, vector_type

_RENAMED_ELEMENTWISE = {
    "tt.precise_sqrt": math.SqrtOp,
    "tt.precise_divf": arith.DivfOp,
}



@dataclass
class Config:
    vector_bits: int = 256
    bf16_dot: bool = False  # the host has vdpbf16ps at vector_bits (AVX512-BF16, and AVX512-VL below 512)
    amx: bool = False  # bf16 dots may run on AMX tiles (the host has AMX-BF16, the process the permission)
    amx_int8: bool = False  # int8 dots may run on AMX tiles (AMX-INT8 too)


class TileEmitter:
    """Emits the fused computation of tensor values at one position of a loop nest."""

    def __init__(self, lowering: "FuncLowering", block: Block, before: Operation | None = None):
        self.low = lowering
        self.block = block
        self.before = before  # insert before this op, or at the end of the block
        self.group: LaneGroup | None = None  # set in the inner loop of a split lane loop
        self.runtime_group: runtime_groups.RuntimeGroup | None = None  # in a run-time group's chunks
        self.cache: dict[tuple, SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        locs = self.low.locations
        if locs and isinstance(op.location, UnknownLoc):
            op.location = locs[-1]
        if self.before is not None:
            self.block.insert_op_before(op, self.before)
        else:
            self.block.add_op(op)
        return op.results[0] if op.results else None

    def for_loop(self, lb: int, ub: int, step: int, inits, body, unroll: bool = True):
        """Emits `scf.for` with loop-carried `inits`; `body(child_emitter, iv, args)` returns
        the values to yield. Returns the loop's results. `unroll=False` marks it
        `tcpu.no_unroll` (the code generator's `llvm.loop.unroll.disable`)."""
        blk = Block(arg_types=[INDEX] + [v.type for v in inits])
        loop = scf.ForOp(self.const_index(lb), self.const_index(ub), self.const_index(step), list(inits), blk)
        if not unroll:
            loop.attributes[NO_UNROLL] = UnitAttr()
        self.emit(loop)
        child = TileEmitter(self.low, blk)
        yielded = body(child, blk.args[0], list(blk.args[1:]))
        blk.add_op(scf.YieldOp(*yielded))
        return list(loop.results)

    def if_else(self, cond: SSAValue, result_types, then_body, else_body):
        """Emits `scf.if`; each body(child_emitter) returns the values to yield. Returns
        the if's results."""
        blocks = [Block(), Block()]
        op = scf.IfOp(cond, list(result_types), [blocks[0]], [blocks[1]])
        self.emit(op)  # first: code in the bodies may look at the loops around it
        for blk, body in zip(blocks, (then_body, else_body)):
            child = TileEmitter(self.low, blk)
            child.runtime_group = self.runtime_group  # the same lanes
            yielded = body(child)
            blk.add_op(scf.YieldOp(*yielded))
        return list(op.results)

    def speculative(self, ptr: SSAValue, idx, width, lane, result_types, vector_access, lane_access, stride=1):
        """A vector access at lane 0's address when the `width` lanes' pointers are
        consecutive (`stride` elements apart) at run time, else one access per lane: for
        pointers whose contiguity rests on an assumption of the analysis (x % m and x // m of an x not proven >= 0,
        see AxisInfoAnalysis). `vector_access(emitter, p0)` and `lane_access(emitter,
        ptrs)` return the values to yield, of `result_types`. The check is done once before
        the loops around the access where its addresses allow (contiguity_checks)."""
        hoisted = contiguity_checks.unit_stride_check(self, ptr, width, lane) if stride == 1 else None
        if hoisted is None:
            hoisted = contiguity_checks.hoisted_check(self, ptr, width, lane, stride)
        if hoisted is not None:
            p0 = self.value(ptr, idx, 1)
            return self.if_else(hoisted, result_types, lambda e: vector_access(e, p0),
                                lambda e: lane_access(e, e.value(ptr, idx, width, lane)))
        ptrs = self.value(ptr, idx, width, lane)
        ok = self.emit(tcpu.IsContiguousOp(ptrs, stride))
        p0 = self.emit(vector.ExtractOp(ptrs, [0], ptrs.type.element_type))
        return self.if_else(ok, result_types, lambda e: vector_access(e, p0), lambda e: lane_access(e, ptrs))

    def const_index(self, v: int) -> SSAValue:
        key = ("cidx", v)
        if key not in self.cache:
            self.cache[key] = self.emit(arith.ConstantOp(IntegerAttr(v, INDEX)))
        return self.cache[key]

    def as_ssa_index(self, i: Index) -> SSAValue:
        return self.const_index(i) if isinstance(i, int) else i

    # -- index arithmetic on `index` values, folding constants -------------
    def idx_mul(self, a: Index, k: int) -> Index:
        if isinstance(a, int):
            return a * k
        if k == 1:
            return a
        return self.emit(arith.MuliOp(a, self.const_index(k)))

    def idx_add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(a, int) and a == 0:
            return b
        if isinstance(b, int) and b == 0:
            return a
        return self.emit(arith.AddiOp(self.as_ssa_index(a), self.as_ssa_index(b)))

    def lane_add(self, j: Index, k: int) -> Index:
        """Lane index j + k. For j a lane group's own index and 0 < k < the group's step,
        the lane is the group's too (lane_groups): values it shares come from its start."""
        out = self.idx_add(j, k)
        g = self.group
        if g is not None and j is g.j and 0 < k < g.step and g.size % g.step == 0:
            g.shifted[out] = k
        r = self.runtime_group
        if r is not None and j is r.j and 0 < k < r.step:  # a chunk lies inside its group
            r.shifted[out] = k
        return out

    def idx_div_rem(self, a: Index, div: int, mod: int) -> Index:
        """(a // div) % mod; mod 0: a // div."""
        if isinstance(a, int):
            return (a // div) % mod if mod else a // div
        v = a
        if div != 1:
            v = self.emit(arith.DivUIOp(v, self.const_index(div)))
        if mod != 0:
            v = self.emit(arith.RemUIOp(v, self.const_index(mod)))
        return v

    # -- values -------------------------------------------------------------
    def value(self, v: SSAValue, idx: tuple[Index, ...], width: int, lane: int = -1) -> SSAValue:
        """`v` at indices `idx`, as `width` lanes running along dimension `lane` (by
        default the last) from `idx[lane]`; width 1 is a scalar. `width` must divide the
        size of that dimension: lanes never run past its end."""
        if not is_tensor(v):
            return v
        shape = shape_of(v)
        lane = lane % len(shape)
        if width == 1:
            lane = len(shape) - 1
        elif shape[lane] % width:
            # An internal invariant: evaluating past the end of a dimension would read
            # other elements' data (a silent wrong result), so refuse instead.
            raise self.low.unsupported(v.owner if isinstance(v.owner, Operation) else None,
                                       f"internal: {width} lanes along a dimension of {shape[lane]}")
        key = (v, idx, width, lane)
        hit = self.cache.get(key)
        if hit is None:
            owner = v.owner
            with self.low.at(owner if isinstance(owner, Operation) else None):
                if v in self.low.guarded:
                    hit = write_guards.read(self, v, idx, width)
                elif self.group is not None and idx and (idx[-1] is self.group.j or idx[-1] in self.group.shifted):
                    hit = grouped_value(self, v, idx, width, lane)
                elif self.runtime_group is not None and idx and (
                        idx[-1] is self.runtime_group.j or idx[-1] in self.runtime_group.shifted):
                    hit = runtime_groups.grouped_value(self, v, idx, width, lane)
                if hit is None:
                    hit = self._value(v, idx, width, lane)
            self.cache[key] = hit
        return hit

    def lanes(self, v: SSAValue, idx, width, lane) -> SSAValue:
        """Fallback: evaluates each lane as a scalar and assembles the vector."""
        return self.concat([self.value(v, idx[:lane] + (self.lane_add(idx[lane], k),) + idx[lane + 1:], 1)
                            for k in range(width)])

    def concat(self, parts: list[SSAValue]) -> SSAValue:
        """One vector of the lanes of `parts` in order (scalars or equal-width vectors)."""
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        if not isinstance(first.type, VectorType):
            out = self.emit(vector.BroadcastOp(first, vector_type(first.type, len(parts))))
            for k, x in enumerate(parts[1:], 1):
                out = self.emit(vector.InsertOp(x, out, [k]))
            return out
        while len(parts) > 1:  # pairwise: a tree of two-input shuffles
            n = first.type.get_shape()[0]
            t = vector_type(first.type.element_type, 2 * n)
            mask = DenseArrayBase.from_list(i64, list(range(2 * n)))
            parts = [self.emit(vector.ShuffleOp(x, y, mask, result_type=t)) for x, y in zip(parts[::2], parts[1::2])]
            first = parts[0]
        return first

    def _value(self, v: SSAValue, idx, width, lane) -> SSAValue:
        buf = self.low.buffers.get(v)
        if buf is not None:
            return self.load_buffer(buf, idx, width) if lane == len(idx) - 1 else self.lanes(v, idx, width, lane)
        op = v.owner
        if not isinstance(op, Operation):
            raise self.low.unsupported(v.block.parent_op(), "a tensor block argument of this operation")
        elem = element_type(v.type)
        name = op.name
        if name == "tt.splat":
            s = op.operands[0]
            return s if width == 1 else self.emit(vector.BroadcastOp(s, vector_type(elem, width)))
        if name == "tt.make_range":
            start = attr_int(op, "start", 0)
            base = self.emit(arith.IndexCastOp(self.as_ssa_index(self.idx_add(idx[0], start)), elem))
            if width == 1:
                return base
            iota = self.emit(tcpu.IotaOp(vector_type(elem, width)))
            return self.emit(arith.AddiOp(self.emit(vector.BroadcastOp(base, vector_type(elem, width))), iota))
        if name == "arith.constant":
            return self._constant(op, elem, idx, width, lane)
        if name == "tt.load":
            return self._load(op, idx, width, lane)
        if name == "arith.cmpi" and width > 1 and bits(element_type(op.operands[0].type)) > 32 \
                and self.low.axis.get(v).constancy[lane % len(idx)] >= width:
            # One truth value per chunk of a 64-bit compare (FlagGems' `offsets < n`, its
            # offsets in i64, n a multiple of the chunk): compared once, as scalars, and
            # splat, so that a masked access tests one bit instead of reducing a vector of
            # 64-bit compares (on AVX2: four compares and three packs for 16 lanes). A
            # compare of 32-bit lanes stays a vector: lane_masks tests it on scalars where
            # it masks memory, and split_bound_check_loops folds it where it is a value.
            return self.emit(vector.BroadcastOp(self.value(v, idx, 1), vector_type(elem, width)))
        fused = FUSED.get(name)
        if fused is not None:
            return fused(self, v, idx, width, lane)
        return self.low.elementwise(op, lambda x: self.value(x, idx, width, lane), width, self.emit)

    def load_buffer(self, buf: SSAValue, idx, width) -> SSAValue:
        indices = [self.as_ssa_index(i) for i in idx]
        if width == 1:
            return self.emit(memref.LoadOp.get(buf, indices))
        return self.emit(vector.LoadOp(buf, indices, vector_type(buf.type.element_type, width)))

    def store_buffer(self, value: SSAValue, buf: SSAValue, idx):
        indices = [self.as_ssa_index(i) for i in idx]
        if isinstance(value.type, VectorType):
            self.emit(vector.StoreOp(value, buf, indices))
        else:
            self.emit(memref.StoreOp.get(value, buf, indices))

    def _constant(self, op, elem, idx, width, lane):
        attr = _attr(op, "value")
        if not isinstance(attr, DenseIntOrFPElementsAttr):
            raise self.low.unsupported(op, "this kind of tensor constant")
        first = splat_value(attr)
        if first is None:
            # A constant with distinct elements lives in a buffer (see FuncLowering.run).
            return self.load_buffer(self.low.constant_buffer(op), idx, width) if lane == len(idx) - 1 \
                else self.lanes(op.results[0], idx, width, lane)
        if width == 1:
            return self.emit(arith.ConstantOp(IntegerAttr(int(first), elem) if isinstance(elem, IntegerType)
                                              else FloatAttr(float(first), elem)))
        return self.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vector_type(elem, width), [first])))

    def _load(self, op, idx, width, lane):
        guard = _scalar_guard(op.mask) if width > 1 and op.mask is not None else None
        elem = element_type(op.results[0].type)
        if guard is None or not isinstance(elem, _GUARDED_ELEMS):
            return self._load_masked(op, op.mask, idx, width, lane)
        # mask = splat(c) & rest, as Triton's LICM writes a load it hoists out of a loop
        # (c: the loop runs at least once): branch on c and load under `rest` alone.
        # Besides skipping the memory when c is false, this keeps LLVM 22's x86 code
        # generator from a miscompile: a masked load wider than a register whose mask is
        # and(splat(c), constant) with an all-false register half, selected on c, read
        # the unmasked memory in that half (fuzz seed 60013: test_fuzz_regressions.py,
        # test_control_flow.py::test_masked_load_hoisted_out_of_a_loop).
        cond, rest = guard
        return self.if_else(cond, [vector_type(elem, width)], lambda e: [e._load_masked(op, rest, idx, width, lane)],
                            lambda e: [e.masked_off(op, idx, width, lane)])[0]

    def masked_off(self, op, idx, width, lane) -> SSAValue:
        """What load `op`'s `width` lanes hold where its mask is false: `other`, else zero."""
        if op.other is not None:
            return self.value(op.other, idx, width, lane)
        elem = element_type(op.results[0].type)
        zero = 0 if isinstance(elem, IntegerType) else 0.0
        return self.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vector_type(elem, width), [zero])))

    def _load_masked(self, op, mask, idx, width, lane):
        """The `width` lanes of load `op` under `mask` (op.mask, or what remains of it once a
        scalar guard is taken off; None: every lane)."""
        ptr, other = op.ptr, op.other
        elem = element_type(op.results[0].type)
        if width > 1 and self.runtime_group is not None:
            hit = runtime_groups.load(self, op, mask, idx, width, lane)
            if hit is not None:
                return hit
        shared = op if mask is op.mask else None  # a strided family shares op's own mask
        m = self.value(mask, idx, width, lane) if mask is not None else None
        o = self.value(other, idx, width, lane) if other is not None else None
        if width == 1:
            return self.emit(tcpu.LoadOp(self.value(ptr, idx, 1), elem, m, o))
        info = self.low.axis.get(ptr)
        vt = vector_type(elem, width)
        if info.contiguity[lane] >= width:
            align = self.low.alignment(ptr, width, lane)
            p0 = self.value(ptr, idx, 1)
            return self.emit(tcpu.VLoadOp(p0, vt, m, o, align))
        if info.constancy[lane] >= width and (mask is None or self.low.axis.get(mask).constancy[lane] >= width):
            # One address for all lanes: load once, splat (and so never touch memory twice).
            s = self.value(op.results[0], idx, 1)
            return self.emit(vector.BroadcastOp(s, vt))
        if self.low.axis_assumed.get(ptr).contiguity[lane] >= width:
            align = self.low.alignment(ptr, width, lane)
            return self.speculative(ptr, idx, width, lane, [vt],
                                    lambda e, p0: [e.emit(tcpu.VLoadOp(p0, vt, m, o, align))],
                                    lambda e, ptrs: [e.emit(tcpu.GatherOp(ptrs, vt, m, o))])[0]
        stride, proven = strided_loads.lane_stride(self.low, ptr, width, lane)
        if stride and proven:
            return strided_loads.window_load(self, shared, self.value(ptr, idx, 1), width, stride, m, o, idx, lane,
                                             elem)
        if stride:
            return self.speculative(
                ptr, idx, width, lane, [vt],
                lambda e, p0: [strided_loads.window_load(e, None, p0, width, stride, m, o, idx, lane, elem)],
                lambda e, ptrs: [e.emit(tcpu.GatherOp(ptrs, vt, m, o))], stride)[0]
        return self.emit(tcpu.GatherOp(self.value(ptr, idx, width, lane), vt, m, o))


# Element types _load branches on a mask's scalar guard for (others: fp8, pointers, keep
# the mask whole).
_GUARDED_ELEMS = (IntegerType, Float16Type, BFloat16Type, Float32Type, Float64Type)


def _splat_float(v: SSAValue) -> float | None:
    """The value of every element of `v` when it is a float constant or a splat of one."""
    owner = v.owner
    if isinstance(owner, Operation) and owner.name == "tt.splat":
        owner = owner.operands[0].owner
    if not (isinstance(owner, Operation) and owner.name == "arith.constant"):
        return None
    a = _attr(owner, "value")
    if isinstance(a, FloatAttr):
        return a.value.data
    if isinstance(a, DenseIntOrFPElementsAttr) and not isinstance(a.get_element_type(), IntegerType):
        v = splat_value(a)
        return None if v is None else float(v)
    return None


def _scalar_guard(mask: SSAValue):
    """(c, rest) when `mask` is splat(c) & rest (either order) or splat(c) alone (rest None),
    c a scalar i1; else None."""
    def splatted(v):
        owner = v.owner
        if isinstance(owner, Operation) and owner.name == "tt.splat" and not is_tensor(owner.operands[0]):
            return owner.operands[0]
        return None
    if (c := splatted(mask)) is not None:
        return c, None
    owner = mask.owner
    if isinstance(owner, Operation) and owner.name == "arith.andi":
        a, b = owner.operands
        if (c := splatted(a)) is not None:
            return c, b
        if (c := splatted(b)) is not None:
            return c, a
    return None


_FLOATS = (Float16Type, BFloat16Type, Float32Type, Float64Type)
# Ops whose result's bits are some operand's, moved (a GPU's selp, movs, shuffles): a NaN
# keeps the payload it came with.
_BIT_MOVES = {"tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans", "tt.join", "tt.cat",
              "tt.split", "tt.gather", "tt.histogram"}


def _computed_float(v: SSAValue) -> bool:
    """Can some NaN lane of the float tensor `v` come from an arithmetic or math op (whose
    NaN bits are not fixed)? Not when every lane is loaded (a load's bits are the memory's,
    payloads included), a constant, a bitcast of integers, or moved from such values by a
    select or a shape op."""
    owner = v.owner
    if not isinstance(element_type(v.type), _FLOATS) or not isinstance(owner, Operation):
        return False
    name = owner.name
    if name == "arith.select":
        return _computed_float(owner.operands[1]) or _computed_float(owner.operands[2])
    if name in _BIT_MOVES:
        return any(_computed_float(x) for x in owner.operands)
    return name != "arith.constant" and name.startswith(
        ("arith.", "math.", "tt.extern_elementwise", "tt.precise_", "tt.fp_to_fp", "tt.clampf"))


def _computed_nan_lanes(v: SSAValue, x: SSAValue, get, emit) -> SSAValue:
    """The lanes of `v` (converted: `x`; its operands through `get`) that hold a computed NaN.
    Through a select, only the lanes it takes from a computed side: a GPU's selp moves the
    other side's NaN, a loaded payload or the constant's 0x7fc00000, unchanged (fuzz seed
    371021: tl.where(f == f, f, float('nan')) over a float made from integer bits)."""
    owner = v.owner
    if isinstance(owner, Operation) and owner.name == "arith.select":
        cond, a, b = owner.operands
        sides = [_computed_nan_lanes(s, get(s), get, emit) if _computed_float(s) else None for s in (a, b)]
        if None in sides:
            live = sides[0] if sides[0] is not None else sides[1]
            zero = emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(live.type, [0]))
                        if isinstance(live.type, VectorType) else arith.ConstantOp(IntegerAttr(0, i1)))
            sides = [zero if s is None else s for s in sides]
        c = get(cond) if is_tensor(cond) else cond
        return emit(arith.SelectOp(c, *sides))
    return emit(arith.CmpfOp(x, x, "uno"))


def _canonical_nan_bits(v: SSAValue, x: SSAValue, bits: SSAValue, rtype, get, emit) -> SSAValue:
    """The bits of the float `v` (converted: `x`; its bits: `bits`), with every computed NaN
    as the one pattern 0x7fff... (the canonical NaN NVIDIA GPUs produce). Which NaN an
    operation returns is not fixed: x86 returns the first NaN operand in the order of the
    instruction form LLVM picks, SLEEF's vector and one-lane variants return different NaNs,
    and LLVM may duplicate an operation. Two copies of one value could then differ in their
    bits, and tl.flip's `y ^ xor_sum(y)` corrupted a lane that was not NaN (fuzz seed
    290269)."""
    elem = rtype.element_type if isinstance(rtype, VectorType) else rtype
    width = elem.width.data
    pattern = (1 << (width - 1)) - 1  # sign 0, exponent and mantissa all ones
    nan = _computed_nan_lanes(v, x, get, emit)
    if isinstance(rtype, VectorType):
        canonical = emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(rtype, [pattern])))
    else:
        canonical = emit(arith.ConstantOp(IntegerAttr(pattern, rtype)))
    return emit(arith.SelectOp(nan, canonical, bits))


def _exclusive(a: Operation, b: Operation) -> bool:
    """Whether `a` and `b` sit in different branches of one scf.if (never both run)."""
    chain = {}
    p = a
    while p is not None:
        parent = p.parent_op()
        if parent is not None:
            chain[parent] = p.parent_region()
        p = parent
    p = b
    while p is not None:
        parent = p.parent_op()
        if parent in chain:
            return parent.name == "scf.if" and chain[parent] is not p.parent_region()
        p = parent
    return False


class FuncLowering:
    """The state every construct's lowering shares while one `tt.func` is lowered: the
    axis analysis, buffers of materialized tensors, loop-carried buffers, errors."""

    def __init__(self, func_op: Operation, config: Config):
        self.func = func_op
        self.config = config
        self.axis = AxisInfoAnalysis()
        self.axis_assumed = AxisInfoAnalysis(optimistic=True, unit_strides=True)  # claims checked at run time
        self.kernel = func_op.properties["sym_name"].data
        self.buffers: dict[SSAValue, SSAValue] = {}  # materialized tensor -> its memref
        self.guarded: dict[SSAValue, write_guards.Guard] = {}  # loads re-read past scalar stores
        self.carried: dict[Operation, dict[int, SSAValue]] = {}  # scf op -> result index -> buffer
        self.loops_to_strip: list[Operation] = []   # scf ops whose tensor operands/results go
        self.lowered_effects: set[Operation] = set()  # side-effecting ops already lowered
        self._constants: dict[Operation, SSAValue] = {}
        self.hoisted: dict[tuple, SSAValue] = {}  # checks emitted before a loop (contiguity_checks)
        self.store_groups: dict[Operation, store_groups.StoreGroup] = {}  # first store -> its run
        self.grouped_done: set[Operation] = set()  # stores lowered with their group's first
        # tt.reduce -> the values it computes into their buffers (reductions.deferring_reduce)
        self.reduce_deferred: dict[Operation, list[SSAValue]] = {}
        # tt.dot -> the earlier dots it lowers with, as one tile kernel (dot._chained_next)
        self.dot_chains: dict[Operation, list[Operation]] = {}
        self.panel_keys: dict[Operation, Operation] = {}  # tt.dot -> its tcpu.panel_key (shared_panels.py)
        all_ops = list(func_op.walk())
        # No streaming stores in a kernel that orders memory between programs (may_stream).
        self.stream_allowed = not any(op.name in self._ORDERING for op in all_ops)
        # Nor a store into an argument the kernel also loads from: an update in place, whose
        # lines are in the cache already (streaming them only evicts them), or a buffer the
        # kernel reads back, as Inductor's looped softmax under dynamic shapes stores its
        # exps to its output and divides them there in a later loop (streamed, the last loop
        # read them back from memory: 1.8x slower warm). A load in the other branch of an
        # scf.if than the store's never runs with it (version-single-iteration-loops' and
        # forward-stored-tiles' copies, one of them without the reload).
        loads_by_root: dict = {}  # a load's pointer root (or its pointers, without one) -> loads
        for ld in all_ops:
            if ld.name == "tt.load":
                loads_by_root.setdefault(pointer_root(ld.operands[0]) or ld.operands[0], []).append(ld)
        self.stores_into_loaded = {op for op in all_ops if op.name == "tt.store" and any(
            not _exclusive(ld, op) for key in {pointer_root(op.operands[0]), op.operands[0]} - {None}
            for ld in loads_by_root.get(key, ()))}
        # Strided loads that share a window (strided_loads.families), found before any op is
        # lowered (their pointers' scalar parts are rewritten on the way).
        self.stride_families = strided_loads.families(
            self, [op for op in all_ops if op.name == "tt.load" and is_tensor(op.ptr)])
        # Lanes per prefetch of each tile prefetch (hints.prefetch_step), found before any
        # op is lowered for the same reason. A dot operand's (`spread`) may count on the
        # assumed contiguity (the tutorial matmul's `rn % N`): a hint needs no check.
        self.spread_prefetches = {}  # tt.dot -> [(tile of pointers, lanes per line)] (hints.py)
        self.pending_prefetches: list[Operation] = []  # tile prefetches not issued yet (hints.py)
        self.prefetch_steps = {op: hints.prefetch_step(self.axis_assumed if op.spread else self.axis, op.ptr)
                               for op in all_ops if op.name == "tcpu.prefetch" and is_tensor(op.ptr)}
        # Source locations of the ops being lowered, innermost last: every op the
        # lowering emits takes the last one (see TileEmitter.emit), so that line tables
        # and bounds-check reports point at the user's line.
        self.locations: list = []

    @contextmanager
    def at(self, op: Operation | None):
        """Ops emitted inside take `op`'s source location (when it has one)."""
        loc = op.location if op is not None else None
        if loc is None or isinstance(loc, UnknownLoc):
            yield
            return
        self.locations.append(loc)
        try:
            yield
        finally:
            self.locations.pop()

    # -- errors -------------------------------------------------------------
    def unsupported(self, op: Operation | None, what: str) -> UnsupportedError:
        return UnsupportedError.at(op, self.kernel, what)

    # -- helpers shared by scalar and vector code ---------------------------
    def emitter_before(self, op: Operation) -> TileEmitter:
        return TileEmitter(self, op.parent_block(), op)

    def alignment(self, ptr: SSAValue, width: int, lane: int = -1) -> int:
        elem_bytes = pointee_bytes(element_type(ptr.type))
        div = self.axis.get(ptr).divisibility[lane]
        return max(elem_bytes, gcd(div, width * elem_bytes))

    def elementwise(self, op: Operation, get, width: int, emit, result_elem=None) -> SSAValue:
        """Clones an elementwise op on converted operands (`get`) with `width` lanes;
        `result_elem` overrides the result's element type (see reductions.py)."""
        name = op.name
        if len(op.results) != 1:
            raise self.unsupported(op, f"operation '{name}'")
        res_elem = result_elem or element_type(op.results[0].type)
        rtype = vec_type(res_elem, width)
        if name == "arith.select" and is_tensor(op.results[0]) and not is_tensor(op.operands[0]) and width > 1:
            # A scalar condition choosing between whole tensors.
            operands = [op.operands[0]] + [get(x) for x in op.operands[1:]]
            return emit(arith.SelectOp(*operands))
        operands = [get(x) for x in op.operands]
        if name.startswith(ELEMENTWISE_PREFIXES) and name != "arith.constant":
            new = type(op).create(operands=operands, result_types=[rtype], properties=dict(op.properties),
                                  attributes=dict(op.attributes))
            return emit(new)
        if name in _RENAMED_ELEMENTWISE:
            cls = _RENAMED_ELEMENTWISE[name]
            return emit(cls.create(operands=operands, result_types=[rtype]))
        if name == "tt.addptr":
            return emit(tcpu.AddPtrOp(operands[0], operands[1], rtype))
        if name == "tt.int_to_ptr":
            return emit(tcpu.IntToPtrOp(operands[0], rtype))
        if name == "tt.ptr_to_int":
            return emit(tcpu.PtrToIntOp(operands[0], rtype))
        if name == "tt.bitcast":
            cast = emit(tcpu.BitcastOp(operands[0], rtype))
            if isinstance(res_elem, IntegerType) and _computed_float(op.operands[0]):
                return _canonical_nan_bits(op.operands[0], operands[0], cast, rtype, get, emit)
            return cast
        if name == "tt.fp_to_fp":
            mode = op.get_rounding()
            rounding = None if mode is None else ("rtz" if mode == tt.RoundingMode.RTZ else "rtne")
            return emit(tcpu.FpToFpOp(operands[0], rtype, rounding))
        if name == "tt.mulhiui":
            return emit(tcpu.MulhiUIOp(operands[0], operands[1]))
        if name == "tt.clampf":
            x, lo, hi = operands
            nan_all = attr_int(op, "propagateNan", 0) == tt.PropagateNan.ALL
            mx, mn = (arith.MaximumfOp, arith.MinimumfOp) if nan_all else (arith.MaxnumfOp, arith.MinnumfOp)
            return emit(mn(emit(mx(x, lo)), hi))
        if name == "tt.extern_elementwise":
            symbol = _attr(op, "symbol").data
            if externs.libm_base(symbol) == "pow" and _splat_float(op.operands[1]) == 2.0:
                # pow(x, 2) is x * x rounded once, for every x (NaN, +-inf, +-0 included):
                # one multiplication instead of a vector pow call (FlagGems' tanh GELU).
                return emit(arith.MulfOp(operands[0], operands[0]))
            native = externs.resolve(symbol)
            if native is None:
                lib = _attr(op, "libname").data or "libm"
                raise self.unsupported(op, f"extern function '{symbol}' (library '{lib}')")
            pure = _attr(op, "pure")
            return emit(tcpu.ExternElementwiseOp(operands, native, bool(pure and pure.value.data), rtype))
        raise self.unsupported(op, f"operation '{name}'")

    # -- vector length ------------------------------------------------------
    def max_lanes(self) -> int:
        """Lanes of a loop step: two native registers of 32-bit elements (LLVM splits or
        widens for other element sizes)."""
        return max(1, 2 * self.config.vector_bits // 32)

    def vector_length(self, shape, roots, store_ptr=None) -> int:
        """Lanes for a loop nest over `shape` evaluating the fused values `roots`: at most
        `max_lanes`, and no wider than the source row of a reshape among their producers
        (wider lanes would be assembled from several source rows). `store_ptr`: the
        pointer the nest stores through, if any. A step of one native register is taken
        instead of two when that turns a gather or scatter among them into a vector access
        (runs of 16 contiguous lanes, such as `x % 16`, at 512 bits)."""
        vl = min(self.max_lanes(), shape[-1])
        accesses = []
        for v in self.fused_producers(roots):
            if v.owner.name == "tt.reshape":
                vl = min(vl, shape_of(v.owner.operands[0])[-1])
            elif v.owner.name == "tt.load" and is_tensor(v.owner.ptr):
                accesses.append((v.owner.ptr, True))
        if store_ptr is not None:
            accesses.append((store_ptr, False))
        native = self.max_lanes() // 2
        if native > 1 and vl > native and any(
                not self._lanes_in_one_access(p, vl, load) and self._lanes_in_one_access(p, native, load)
                for p, load in accesses):
            vl = native
        return vl

    def _lanes_in_one_access(self, ptr, width: int, load: bool) -> bool:
        """Whether `width` lanes of `ptr` along the last axis are read (`load`) or written
        by a vector access rather than a gather/scatter (see TileEmitter._load)."""
        lane = len(shape_of(ptr)) - 1
        if self.axis_assumed.get(ptr).contiguity[lane] >= width:
            return True
        if not load:
            return False
        return self.axis.get(ptr).constancy[lane] >= width or \
            strided_loads.lane_stride(self, ptr, width, lane)[0] != 0

    def fused_producers(self, roots):
        """The tensor values a nest evaluating `roots` computes (each once, stopping at
        materialized ones and block arguments), roots included."""
        seen, stack = set(), list(roots)
        while stack:
            v = stack.pop()
            if v in seen or not is_tensor(v) or v in self.buffers or not isinstance(v.owner, Operation):
                continue
            seen.add(v)
            yield v
            stack.extend(v.owner.operands)

    # -- loop nests ---------------------------------------------------------
    def loop_nest(self, at: Operation, shape, vl, body, roots=()):
        """Emits `for i0.. for j step vl: body(emitter, idx)` before `at`; dims of the
        size of their step get the constant index 0 instead of a loop. With `roots` (the
        values the body evaluates), the j loop is split into lane groups when they allow
        (see lane_groups)."""
        self.nest(self.emitter_before(at), shape, vl, body, roots)

    def nest(self, em: TileEmitter, shape, vl, body, roots=(), one_sink=False, store_ptr=None):
        """`one_sink`: the body stores `roots` through `store_ptr` (None: into a buffer) and
        nothing else; only such nests may take run-time groups, which evaluate a group's
        shared loads before its chunks' stores (the order of one store's own semantics)."""
        group = group_size(self, shape, vl, roots) if roots else None
        body = hints.with_pending_prefetches(self, em, shape, vl, body)
        steps = [1] * (len(shape) - 1) + [vl]
        groups = runtime_groups.plan(self, shape, vl, roots, store_ptr) if one_sink and group is None else None
        if groups is not None:
            runtime_groups.emit_loop(self, em, shape[0], vl, groups, body,
                                     lambda e: self.nest_steps(e, shape, steps, body))
            return
        self.nest_steps(em, shape, steps, body, group)

    def nest_steps(self, em: TileEmitter, shape, steps, body, group: int | None = None):
        """`group`: split the last dimension's loop into groups of that many lanes."""
        last = len(shape) - 1

        def level(e, d, idx):
            if d == len(shape):
                body(e, tuple(idx))
                return
            if shape[d] == steps[d]:
                level(e, d + 1, idx + [0])
                return
            if d == last and group is not None and steps[d] < group <= shape[d]:
                if group == shape[d]:
                    self._group_loop(e, 0, steps[d], group, idx, body)
                else:
                    e.for_loop(0, shape[d], group,
                               [], lambda c, g0, _: self._group_loop(c, g0, steps[d], group, idx, body) or [],
                               unroll=False)
                return

            def inner(child, iv, _):
                level(child, d + 1, idx + [iv])
                return []
            e.for_loop(0, shape[d], steps[d], [], inner, unroll=False)

        level(em, 0, [])

    def _group_loop(self, e: TileEmitter, start, step, size, idx, body):
        """The inner loop of a lane group starting at `start`: values the group shares are
        emitted before it (see lane_groups)."""
        def inner(child, off, _):
            outer = TileEmitter(self, e.block, off.block.parent_op())  # before this loop
            outer.cache = e.cache  # values of this group's start already emitted before it
            j = child.idx_add(start, off)
            child.group = LaneGroup(outer, start, off, j, size, step)
            body(child, tuple(idx) + (j,))
            return []
        e.for_loop(0, size, step, [], inner, unroll=False)

    # -- buffers ------------------------------------------------------------
    def _at_entry(self, op: Operation):
        entry = self.func.regions[0].blocks[0]
        if entry.first_op is not None:
            entry.insert_op_before(op, entry.first_op)
        else:
            entry.add_op(op)

    def alloc_buffer(self, tensor_type) -> SSAValue:
        """A buffer for one tensor, allocated once at function entry (the code
        generator puts large ones in the per-thread scratch arena)."""
        op = memref.AllocaOp.get(element_type(tensor_type), 64, list(tensor_type.get_shape()))
        self._at_entry(op)
        return op.memref

    def constant_buffer(self, op: Operation) -> SSAValue:
        """A read-only global holding a dense tensor constant with distinct elements
        (e.g. a folded causal mask), referenced at function entry."""
        ref = self._constants.get(op)
        if ref is None:
            t = op.results[0].type
            mtype = MemRefType(element_type(t), list(t.get_shape()))
            module = self.func.parent_op()
            name = f"__tcpu_const_{self.kernel}_{sum(1 for o in module.ops if o.name == 'memref.global')}"
            module.body.block.insert_op_before(
                memref.GlobalOp.get(StringAttr(name), mtype, _attr(op, "value"), constant=UnitAttr(), alignment=64),
                self.func)
            get = memref.GetGlobalOp(name, mtype)
            self._at_entry(get)
            ref = self._constants[op] = get.results[0]
        return ref

    def materialize_into(self, em: TileEmitter, value: SSAValue, buf: SSAValue):
        if self.buffers.get(value) is buf:
            return  # already there (a dot that accumulated in place)
        shape = shape_of(value)
        vl = self.vector_length(shape, [value])
        self.nest(em, shape, vl, lambda e, idx: e.store_buffer(e.value(value, idx, vl), buf, idx), [value],
                  one_sink=True)

    def copy_buffer(self, em: TileEmitter, src, dst, tensor_type):
        shape = tuple(tensor_type.get_shape())
        vl = self.vector_length(shape, [])
        self.nest(em, shape, vl, lambda e, idx: e.store_buffer(e.load_buffer(src, idx, vl), dst, idx))

    # -- sinks ----------------------------------------------------------------
    def lower_store(self, op: Operation):
        if not is_tensor(op.ptr):
            return self.lower_scalar(op)
        group = self.store_groups.get(op)
        if group is not None:  # this store and the ones right after it (store_groups)
            store_groups.lower(self, group)
            return
        self.store_nest(self.emitter_before(op), op)
        op.detach()
        op.erase()

    @staticmethod
    def store_roots(op: Operation) -> list:
        """The tensors a tile store evaluates: pointers, value, mask."""
        return [op.ptr, op.value] + ([op.mask] if op.mask else [])

    def store_nest(self, em: TileEmitter, op: Operation):
        """The loop nest of tile store `op`, at `em`."""
        shape = shape_of(op.ptr)
        roots = self.store_roots(op)
        vl = self.vector_length(shape, roots, store_ptr=op.ptr)
        self.nest(em, shape, vl, lambda e, idx: self.store_chunk(e, op, idx, vl), roots, one_sink=True,
                  store_ptr=op.ptr)

    def store_chunk(self, em: TileEmitter, op: Operation, idx, vl: int, stream: bool = True):
        """Tile store `op`'s `vl` lanes at `idx`; `stream`: the store may bypass the caches
        (when the kernel allows it, see stream_allowed)."""
        ptr, val, mask = op.ptr, op.value, op.mask
        v = em.value(val, idx, vl)
        m = em.value(mask, idx, vl) if mask is not None else None
        stream = stream and self.stream_allowed and op not in self.stores_into_loaded
        if vl > 1 and em.runtime_group is not None and runtime_groups.store(em, op, idx, v, m, vl, stream):
            return
        if vl > 1 and self.axis.get(ptr).contiguity[-1] >= vl:
            em.emit(tcpu.VStoreOp(em.value(ptr, idx, 1), v, m, self.alignment(ptr, vl), stream))
        elif vl == 1:
            em.emit(tcpu.StoreOp(em.value(ptr, idx, 1), v, m))
        elif self.axis_assumed.get(ptr).contiguity[-1] >= vl:
            align = self.alignment(ptr, vl)

            def vector_store(e, p0):
                e.emit(tcpu.VStoreOp(p0, v, m, align, stream))
                return []

            def scatter(e, ptrs):
                e.emit(tcpu.ScatterOp(ptrs, v, m))
                return []
            em.speculative(ptr, idx, vl, -1, [], vector_store, scatter)
        else:
            em.emit(tcpu.ScatterOp(em.value(ptr, idx, vl), v, m))

    # -- scalars ------------------------------------------------------------
    def lower_scalar(self, op: Operation):
        em = self.emitter_before(op)
        name = op.name
        if name == "tt.get_program_id":
            res = em.emit(tcpu.ProgramIdOp(op.axis.value.data))
        elif name == "tt.get_num_programs":
            res = em.emit(tcpu.NumProgramsOp(op.axis.value.data))
        elif name == "tt.load":
            res = em.emit(tcpu.LoadOp(op.ptr, op.results[0].type, op.mask, op.other))
        elif name == "tt.store":
            write_guards.before_store(self, em, op)
            res = em.emit(tcpu.StoreOp(op.ptr, op.value, op.mask))
        else:
            res = self.elementwise(op, lambda x: x, 1, em.emit)
        if op.results:
            op.results[0].replace_all_uses_with(res)
        op.detach()
        op.erase()

    # -- what to compute once ---------------------------------------------------
    # Ops that consume tensors where they stand (their operands are evaluated there).
    _ROOTS = {"tt.store", "tt.reduce", "tt.scan", "tt.dot", "tt.dot_scaled", "tt.atomic_rmw", "tt.atomic_cas", "tt.atomic_poll", "tt.print",
              "tt.assert", "tt.histogram", "scf.yield", "scf.condition", "scf.for", "scf.while", "tt.gather",
              "tt.unsplat", "tt.map_elementwise"}
    # Ops whose results are buffers: the walk of fused producers stops there.
    _BUFFERED = ("tt.reduce", "tt.scan", "tt.dot", "tt.dot_scaled", "tt.histogram", "tt.map_elementwise")
    # Worth a buffer when evaluated for several consumers, or in a loop the value is defined outside of.
    _EXPENSIVE = ("tt.load", "math.", "tt.extern_elementwise", "arith.divf", "tt.precise_", "arith.remf",
                  "arith.divsi", "arith.divui", "arith.remsi", "arith.remui")

    def materialization_plan(self, ops) -> set:
        """Tensors to compute once, into a buffer, right after their definition (instead of
        being recomputed inside each consumer's loop nest):
          - a load that a memory write may separate from one of its consumers (the value
            must be what memory held at the load, as on a GPU), the consumer's own store
            included when another consumer needs the whole tile first (see
            `_own_store_may_overwrite`); unless every such write stores one element and
            the load reads one contiguous run: then it stays fused and the stores copy it
            only when they write inside it (`self.guarded`, write_guards.py);
          - an expensive value (a load, math, an extern call, a division or remainder)
            that feeds two or more consumers (a contiguous load excepted: it is read
            again, see `_cheap_to_reload`), or a consumer inside a loop that does not
            hold the value's definition (recomputed every iteration otherwise: integer
            division has no vector instruction on x86, and LLVM does not hoist a
            division that might trap out of a loop); such a value whose first consumer
            is a reduction of its own shape is written into its buffer by that
            reduction's loop instead of a loop of its own (reductions.deferring_reduce:
            softmax's exp and its sum in one pass);
          - every MAX_FUSION_DEPTH-th value of a long chain of fused ops (a bitonic sort of
            2**17 elements unrolls into hundreds): evaluating a fused value recurses
            through its producers, so the depth must stay bounded."""
        position = {op: i for i, op in enumerate(ops)}
        depth_cuts = self._depth_plan(ops)
        plan = set(depth_cuts)
        writes = [op for op in ops if has_effects(op, MemoryEffectKind.WRITE)
                  and op.name not in ("tt.print", "tt.assert")]
        roots: dict[SSAValue, set] = {}

        def visit(start, root, seen):  # iterative: chains of fused ops can be long
            stack = [start]
            while stack:
                v = stack.pop()
                if v in seen or not is_tensor(v):
                    continue
                seen.add(v)
                roots.setdefault(v, set()).add(root)
                producer = v.owner
                if not isinstance(producer, Operation):
                    continue
                if producer.name == "tt.gather":
                    # its indices are read where its value is, in each consumer's nest
                    # (shape_ops.gather); its source, from a buffer filled before it
                    stack.append(producer.operands[1])
                elif producer.name not in self._ROOTS and producer.name not in self._BUFFERED:
                    stack.extend(producer.operands)

        for op in ops:
            if op.name in self._ROOTS:
                seen = set()
                for x in (op.operands[:1] if op.name == "tt.gather" else op.operands):
                    visit(x, op, seen)
        groups = store_groups.find(self, ops)
        self.store_groups = {g.stores[0]: g for g in groups}
        group_of = {s: g for g in groups for s in g.stores}
        for v, rs in roots.items():
            producer = v.owner
            if not isinstance(producer, Operation) or producer not in position:
                continue
            expensive = producer.name.startswith(self._EXPENSIVE) and \
                ((len(rs) >= 2 and not self._cheap_to_reload(producer))
                 or any(self._in_inner_loop(r, producer) for r in rs))
            between, buffered = set(), expensive
            if producer.name == "tt.load":
                between = {w for r in rs for w in self._writes_between(producer, r, writes, position)}
                if self._own_store_may_overwrite(producer, rs):
                    buffered = True
                elif between and not expensive and write_guards.guardable(self, producer, between):
                    self.guarded[v] = write_guards.Guard(frozenset(between))
                    continue
                else:
                    buffered = bool(between) or expensive
            if buffered:
                group = store_groups.deferring_group(group_of, producer, rs, between)
                if group is not None:
                    group.deferred.append(v)
                else:
                    plan.add(v)
        for g in groups:
            g.deferred.sort(key=lambda v: position[v.owner])
        for v in sorted(plan - depth_cuts, key=lambda v: position[v.owner]):
            r = reductions.deferring_reduce(v, roots[v], plan, position, writes)
            if r is not None:
                plan.discard(v)
                self.reduce_deferred.setdefault(r, []).append(v)
        return plan

    # Ops that order memory between programs or threads: a kernel holding one never uses
    # streaming stores, which x86 does not order with them (only an sfence does).
    _ORDERING = ("tt.atomic_rmw", "tt.atomic_cas", "tt.atomic_poll", "tt.debug_barrier")

    def _cheap_to_reload(self, load: Operation) -> bool:
        """Is reading `load` again, in each consumer's nest, as cheap as reading a buffer
        of it? True for a load of contiguous (or lane-invariant) elements along the last
        axis, not volatile: its consumers read it where a buffer would be read, from the
        same cache lines (a row of softmax or layer norm is read by each of its passes
        from L1, without a pass that copies it). Gathers and strided windows stay cheaper
        to read once. Whether a write separates it from a consumer is checked apart."""
        if load.name != "tt.load" or not is_tensor(load.ptr):
            return False
        if is_volatile(load):
            return False
        shape = shape_of(load.ptr)
        vl = min(self.max_lanes(), shape[-1])
        info = self.axis.get(load.ptr)
        return info.contiguity[-1] >= vl or info.constancy[-1] >= vl

    _WRITES_THROUGH_OPERAND_0 = ("tt.store", "tt.atomic_rmw", "tt.atomic_cas")

    def _own_store_may_overwrite(self, load: Operation, roots) -> bool:
        """A store (or atomic) evaluates the loads it fuses chunk by chunk, each chunk's
        read before its write; a tile's load, as a value, holds what memory held before
        any of the tile is written. The two agree only if no chunk's write reaches what
        a later chunk reads (an in-place shift or reversal `p[o] = p[N-1-o]`, rows of a
        2-D tile that overlap at run time). Taken as safe: a write through another
        kernel argument (arguments are taken not to overlap), or through the load's own
        tile of pointers when that tile holds no address twice (contiguous along the
        last axis, one row, or rows disjoint where the masks keep lanes: lanes_distinct).
        Anything else is read into a buffer first."""
        ptr = load.operands[0]
        for r in roots:
            if r.name not in self._WRITES_THROUGH_OPERAND_0:
                continue
            target = r.operands[0]
            a, b = pointer_root(ptr), pointer_root(target)
            if a is not None and b is not None and a is not b:
                continue
            if target is ptr and is_tensor(ptr) and lanes_distinct(
                    ptr, self.axis.get(ptr).contiguity[-1], [load.mask, getattr(r, "mask", None)]):
                continue
            return True
        return False

    @staticmethod
    def _in_inner_loop(root: Operation, producer: Operation) -> bool:
        """Is `root` inside a loop that does not contain `producer`?"""
        p = root.parent_op()
        while p is not None:
            if p.name in ("scf.for", "scf.while"):
                return not p.is_ancestor(producer)
            p = p.parent_op()
        return False

    MAX_FUSION_DEPTH = 64

    def _depth_plan(self, ops) -> set:
        """Values at which a chain of fused ops is cut (see materialization_plan)."""
        depth: dict[SSAValue, int] = {}
        plan = set()
        for op in ops:
            if op.name in self._ROOTS or op.name in self._BUFFERED or op.name.startswith("scf."):
                continue  # results in buffers (or scalars)
            d = 1 + max((depth.get(x, 0) for x in op.operands), default=0)
            for r in op.results:
                if not is_tensor(r):
                    continue
                if d > self.MAX_FUSION_DEPTH and op.next_op is not None:
                    plan.add(r)
                    depth[r] = 0
                else:
                    depth[r] = d
        return plan

    @staticmethod
    def _writes_between(load, root, writes, position) -> list:
        """The writes that may run after `load` and before `root` evaluates it. (Writes by
        `root` itself happen chunk by chunk after the chunk's read, as its own loop nest.)"""
        lo, hi = position[load], position.get(root, len(position))
        loops = []
        p = root.parent_op()
        while p is not None:
            if p.name in ("scf.for", "scf.while") and not p.is_ancestor(load):
                loops.append(p)
            p = p.parent_op()
        return [w for w in writes if w is not root and (
            lo < position[w] < hi or any(loop.is_ancestor(w) for loop in loops))]  # or an earlier iteration's

    def materialize_at_definition(self, op: Operation, value: SSAValue):
        self.materialize_at(TileEmitter(self, op.parent_block(), op.next_op), value)

    def materialize_at(self, em: TileEmitter, value: SSAValue):
        """Computes `value` into a buffer of its own at `em`; its consumers read that."""
        buf = self.alloc_buffer(value.type)
        self.materialize_into(em, value, buf)
        self.buffers[value] = buf

    @classmethod
    def ops_in_order(cls, block: Block):
        """Ops in program order, entering structured control flow only (not the
        combine regions of reductions and scans, which belong to their op)."""
        for op in block.ops:
            yield op
            if op.name.startswith("scf."):
                for region in op.regions:
                    for b in region.blocks:
                        yield from cls.ops_in_order(b)
