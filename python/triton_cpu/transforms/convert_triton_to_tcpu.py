"""convert-triton-to-tcpu: lowers TTIR tensors to loop nests over native SIMD vectors.

Every tensor value is *fused*: it is recomputed, one vector of lanes at a time,
inside the loop nest of the operation that consumes it (a tensor `tt.store`).
For a sink of shape (D0, ..., Dn) the nest loops over D0..Dn-1 one index at a
time and over Dn in steps of VL lanes, VL sized to a couple of native
registers; so the generated code grows with the number of ops, never with the
block size.

Inside the nest, each producer is evaluated at the current indices, either as
a vector of VL lanes or as one scalar (for values broadcast along the last
dimension, and for the address of a contiguous access). Loads and stores use
the axis analysis on their pointer: contiguous along the last dimension gives
`tcpu.vload`/`tcpu.vstore` at one scalar address, a pointer constant along it
gives a scalar load broadcast to the lanes, anything else a gather/scatter.

Scalar `tt` ops become their `tcpu` counterparts; `tt.func` becomes `func.func`.
Left for later passes or issues: tensors carried by loops or yielded by `scf.if`,
reductions, scans, dots, atomics and prints. They raise `UnsupportedError` naming
the op, the kernel and the source line.
"""
from dataclasses import dataclass
from math import gcd

from xdsl.context import Context
from xdsl.dialects import func, math, memref, scf, vector
from xdsl.dialects.builtin import (
    BFloat16Type, DenseArrayBase, Float16Type, Float32Type, DenseIntOrFPElementsAttr, i64, FloatAttr, IndexType, IntegerAttr, IntegerType, ModuleOp, TensorType, VectorType, i32,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import MemoryEffectKind, has_effects

from triton_cpu.analysis.axis_info import AxisInfoAnalysis, attr as _attr, element_type, pointee_bytes, shape_of
from triton_cpu.dialects import tcpu, tt
from triton_cpu.dialects.compat import arith
from triton_cpu.errors import UnsupportedError

INDEX = IndexType()

# Elementwise ops that keep their name: cloned with vector or scalar types.
_ELEMENTWISE_PREFIXES = ("arith.", "math.")
_RENAMED_ELEMENTWISE = {
    "tt.precise_sqrt": math.SqrtOp,
    "tt.precise_divf": arith.DivfOp,
}


def _int(op: Operation, name: str, default: int | None = None) -> int | None:
    a = _attr(op, name)
    if a is None:
        return default
    return a.value.data


def is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType)


_ELEMENTWISE_TT = {"tt.splat", "tt.addptr", "tt.load", "tt.bitcast", "tt.int_to_ptr", "tt.ptr_to_int",
                   "tt.fp_to_fp", "tt.clampf", "tt.precise_sqrt", "tt.precise_divf", "tt.mulhiui",
                   "tt.extern_elementwise"}


def _is_elementwise(op: Operation) -> bool:
    """Reads its operands at the index it produces (no data movement between indices)."""
    return op.name.startswith(_ELEMENTWISE_PREFIXES) or op.name in _ELEMENTWISE_TT


def _bits(t) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    return getattr(t, "bitwidth", 32)


def _widen(v: SSAValue, src, dst, width: int) -> Operation:
    """Converts `v` (elements of type `src`) to `dst` for the dot's accumulation."""
    rt = vec_type(dst, width)
    if isinstance(dst, IntegerType):
        return arith.ExtSIOp(v, rt) if _bits(src) < _bits(dst) else arith.TruncIOp(v, rt)
    if isinstance(src, IntegerType):
        return arith.SIToFPOp(v, rt)
    if _bits(src) < _bits(dst):
        return arith.ExtFOp(v, rt)
    return arith.TruncFOp(v, rt)


def vec_type(elem: Attribute, width: int) -> Attribute:
    return elem if width == 1 else VectorType(elem, [width])


Index = SSAValue | int  # a loop index, or a constant index (0 for broadcast dims)


@dataclass
class Config:
    vector_bits: int = 256


class TileEmitter:
    """Emits the fused computation of tensor values at one position of a loop nest."""

    def __init__(self, lowering: "FuncLowering", block: Block, before: Operation | None = None):
        self.low = lowering
        self.block = block
        self.before = before  # insert before this op, or at the end of the block
        self.cache: dict[tuple, SSAValue] = {}

    def emit(self, op: Operation) -> SSAValue:
        if self.before is not None:
            self.block.insert_op_before(op, self.before)
        else:
            self.block.add_op(op)
        return op.results[0] if op.results else None

    def for_loop(self, lb: int, ub: int, step: int, inits, body):
        """Emits `scf.for` with loop-carried `inits`; `body(child_emitter, iv, args)` returns
        the values to yield. Returns the loop's results."""
        blk = Block(arg_types=[INDEX] + [v.type for v in inits])
        loop = scf.ForOp(self.const_index(lb), self.const_index(ub), self.const_index(step), list(inits), blk)
        self.emit(loop)
        child = TileEmitter(self.low, blk)
        yielded = body(child, blk.args[0], list(blk.args[1:]))
        blk.add_op(scf.YieldOp(*yielded))
        return list(loop.results)

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

    def idx_div_rem(self, a: Index, div: int, mod: int) -> Index:
        if isinstance(a, int):
            return (a // div) % mod
        v = a
        if div != 1:
            v = self.emit(arith.DivUIOp(v, self.const_index(div)))
        if mod != 0:
            v = self.emit(arith.RemUIOp(v, self.const_index(mod)))
        return v

    # -- values -------------------------------------------------------------
    def value(self, v: SSAValue, idx: tuple[Index, ...], width: int, lane: int = -1) -> SSAValue:
        """`v` at indices `idx`, as `width` lanes running along dimension `lane` (by
        default the last) from `idx[lane]`; width 1 is a scalar."""
        if not is_tensor(v):
            return v
        rank = len(shape_of(v))
        lane = lane % rank
        if width == 1:
            lane = rank - 1
        key = (v, idx, width, lane)
        hit = self.cache.get(key)
        if hit is None:
            hit = self._value(v, idx, width, lane)
            self.cache[key] = hit
        return hit

    def lanes(self, v: SSAValue, idx, width, lane) -> SSAValue:
        """Fallback: evaluates each lane as a scalar and assembles the vector."""
        elem = element_type(v.type)
        out = None
        for k in range(width):
            kidx = idx[:lane] + (self.idx_add(idx[lane], k),) + idx[lane + 1:]
            x = self.value(v, kidx, 1)
            if out is None:
                out = self.emit(vector.BroadcastOp(x, VectorType(elem, [width])))
            else:
                out = self.emit(vector.InsertOp(x, out, [k]))
        return out

    def _value(self, v: SSAValue, idx, width, lane) -> SSAValue:
        rank = len(shape_of(v))
        last = lane == rank - 1
        buf = self.low.buffers.get(v)
        if buf is not None:
            return self.load_buffer(buf, idx, width) if last else self.lanes(v, idx, width, lane)
        op = v.owner
        if not isinstance(op, Operation):
            raise self.low.unsupported(v.block.parent_op(), "a tensor block argument of this operation")
        elem = element_type(v.type)
        name = op.name
        if name == "tt.splat":
            s = op.operands[0]
            return s if width == 1 else self.emit(vector.BroadcastOp(s, VectorType(elem, [width])))
        if name == "tt.make_range":
            start = _int(op, "start", 0)
            base = self.emit(arith.IndexCastOp(self.as_ssa_index(self.idx_add(idx[0], start)), elem))
            if width == 1:
                return base
            iota = self.emit(tcpu.IotaOp(VectorType(elem, [width])))
            return self.emit(arith.AddiOp(self.emit(vector.BroadcastOp(base, VectorType(elem, [width]))), iota))
        if name == "arith.constant":
            return self._constant(op, elem, width)
        if name == "tt.expand_dims":
            axis = _int(op, "axis")
            return self.value(op.operands[0], idx[:axis] + idx[axis + 1:], width, lane - (lane > axis))
        if name == "tt.broadcast":
            src = op.operands[0]
            src_shape = shape_of(src)
            dst_shape = shape_of(v)
            sidx = tuple(0 if s == 1 and d != 1 else i for i, s, d in zip(idx, src_shape, dst_shape))
            if src_shape[lane] == 1 and dst_shape[lane] != 1 and width > 1:
                s = self.value(src, sidx, 1)
                return self.emit(vector.BroadcastOp(s, VectorType(elem, [width])))
            return self.value(src, sidx, width, lane)
        if name == "tt.trans":
            # Result dim i is source dim order[i].
            order = [int(x) for x in op.order.get_values()]
            sidx = [0] * rank
            for i, o in enumerate(order):
                sidx[o] = idx[i]
            return self.value(op.operands[0], tuple(sidx), width, order[lane])
        if name == "tt.reshape":
            return self._reshape(op, idx, width) if last else self.lanes(v, idx, width, lane)
        if name == "tt.load":
            return self._load(op, idx, width, lane)
        if name == "tt.join":
            return self._join(op, idx, width, lane)
        if name == "tt.split":
            k = list(op.results).index(v)
            return self.value(op.operands[0], idx + (k,), width, lane)
        if name == "tt.cat":
            return self._cat(op, idx, width, lane)
        if name == "tt.gather":
            return self._gather(op, idx, width, lane)
        return self.low.elementwise(op, lambda x: self.value(x, idx, width, lane), width, self.emit)

    def _select_by_index(self, i: Index, k: int, if_equal: SSAValue, otherwise: SSAValue) -> SSAValue:
        """`if_equal` where the index `i` equals `k`, else `otherwise`."""
        if isinstance(i, int):
            return if_equal if i == k else otherwise
        cond = self.emit(arith.CmpiOp(i, self.const_index(k), "eq"))
        return self.emit(arith.SelectOp(cond, if_equal, otherwise))

    def _join(self, op, idx, width, lane):
        a, b = op.operands
        rank = len(idx)
        if lane == rank - 1 and width == 2:  # the lanes are the joined pair
            x, y = self.value(a, idx[:-1], 1), self.value(b, idx[:-1], 1)
            vec = self.emit(vector.BroadcastOp(x, VectorType(element_type(a.type), [2])))
            return self.emit(vector.InsertOp(y, vec, [1]))
        x, y = self.value(a, idx[:-1], width, lane), self.value(b, idx[:-1], width, lane)
        return self._select_by_index(idx[-1], 0, x, y)

    def _cat(self, op, idx, width, lane):
        """Concatenation along dim 0; a chunk of lanes never straddles the two halves
        (power-of-two sizes), so one select per chunk picks the half."""
        a, b = op.operands
        n = shape_of(a)[0]
        i0 = idx[0]
        if isinstance(i0, int):
            src, j = (a, i0) if i0 < n else (b, i0 - n)
            return self.value(src, (j,) + idx[1:], width, lane)
        j = self.idx_div_rem(i0, 1, n)
        x = self.value(a, (j,) + idx[1:], width, lane)
        y = self.value(b, (j,) + idx[1:], width, lane)
        first = self.emit(arith.CmpiOp(i0, self.const_index(n), "ult"))
        return self.emit(arith.SelectOp(first, x, y))

    def _gather(self, op, idx, width, lane):
        """src[..., indices[idx], ...]: data-dependent, so `src` is read from its buffer
        (materialized before the op) one lane at a time."""
        if width > 1:
            return self.lanes(op.results[0], idx, width, lane)
        src, indices = op.operands
        axis = _int(op, "axis")
        buf = self.low.buffers[src]
        k = self.emit(arith.IndexCastOp(self.value(indices, idx, 1), INDEX))
        sidx = idx[:axis] + (k,) + idx[axis + 1:]
        return self.load_buffer(buf, sidx, 1)

    def load_buffer(self, buf: SSAValue, idx, width) -> SSAValue:
        indices = [self.as_ssa_index(i) for i in idx]
        if width == 1:
            return self.emit(memref.LoadOp.get(buf, indices))
        return self.emit(vector.LoadOp(buf, indices, VectorType(buf.type.element_type, [width])))

    def store_buffer(self, value: SSAValue, buf: SSAValue, idx):
        indices = [self.as_ssa_index(i) for i in idx]
        if isinstance(value.type, VectorType):
            self.emit(vector.StoreOp(value, buf, indices))
        else:
            self.emit(memref.StoreOp.get(value, buf, indices))

    def _constant(self, op, elem, width):
        attr = _attr(op, "value")
        if not isinstance(attr, DenseIntOrFPElementsAttr) or not attr.is_splat():
            raise self.low.unsupported(op, "a non-splat dense tensor constant")
        first = attr.get_values()[0]
        if isinstance(elem, IntegerType):
            scalar = IntegerAttr(int(first), elem)
        else:
            scalar = FloatAttr(float(first), elem)
        if width == 1:
            return self.emit(arith.ConstantOp(scalar))
        return self.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(VectorType(elem, [width]), [first])))

    def _reshape(self, op, idx, width):
        src = op.operands[0]
        dst_shape = shape_of(op.results[0])
        src_shape = shape_of(src)
        # Row-major linear index of the first lane, then the source indices of it.
        lin: Index = 0
        stride = 1
        for i, d in reversed(list(zip(idx, dst_shape))):
            lin = self.idx_add(lin, self.idx_mul(i, stride))
            stride *= d
        sidx = []
        stride = 1
        strides = []
        for d in reversed(src_shape):
            strides.append(stride)
            stride *= d
        strides.reverse()
        for d, s in zip(src_shape, strides):
            sidx.append(0 if d == 1 else self.idx_div_rem(lin, s, d))
        # VL divides the source's last dimension (see FuncLowering.vector_length), so
        # the lanes stay contiguous in one source row.
        return self.value(src, tuple(sidx), width)

    def _load(self, op, idx, width, lane):
        ptr, mask, other = op.ptr, op.mask, op.other
        elem = element_type(op.results[0].type)
        m = self.value(mask, idx, width, lane) if mask is not None else None
        o = self.value(other, idx, width, lane) if other is not None else None
        if width == 1:
            return self.emit(tcpu.LoadOp(self.value(ptr, idx, 1), elem, m, o))
        info = self.low.axis.get(ptr)
        if info.contiguity[lane] >= width:
            align = self.low.alignment(ptr, width, lane)
            p0 = self.value(ptr, idx, 1)
            return self.emit(tcpu.VLoadOp(p0, VectorType(elem, [width]), m, o, align))
        if info.constancy[lane] >= width and (mask is None or self.low.axis.get(mask).constancy[lane] >= width):
            # One address for all lanes: load once, splat (and so never touch memory twice).
            s = self.value(op.results[0], idx, 1)
            return self.emit(vector.BroadcastOp(s, VectorType(elem, [width])))
        return self.emit(tcpu.GatherOp(self.value(ptr, idx, width, lane), VectorType(elem, [width]), m, o))


class FuncLowering:
    def __init__(self, func_op: Operation, config: Config):
        self.func = func_op
        self.config = config
        self.axis = AxisInfoAnalysis()
        self.kernel = func_op.properties["sym_name"].data
        self.buffers: dict[SSAValue, SSAValue] = {}  # materialized tensor -> its memref
        self.carried: dict[Operation, dict[int, SSAValue]] = {}  # scf op -> result index -> buffer
        self.loops_to_strip: list[Operation] = []   # scf ops whose tensor operands/results go
        self.lowered_effects: set[Operation] = set()  # side-effecting ops already lowered

    # -- errors -------------------------------------------------------------
    def unsupported(self, op: Operation | None, what: str) -> UnsupportedError:
        return UnsupportedError.at(op, self.kernel, what)

    # -- helpers shared by scalar and vector code ---------------------------
    def alignment(self, ptr: SSAValue, width: int, lane: int = -1) -> int:
        elem_bytes = pointee_bytes(element_type(ptr.type))
        div = self.axis.get(ptr).divisibility[lane]
        return max(elem_bytes, gcd(div, width * elem_bytes))

    def elementwise(self, op: Operation, get, width: int, emit) -> SSAValue:
        """Clones an elementwise op on converted operands (`get`) with `width` lanes."""
        name = op.name
        if len(op.results) != 1:
            raise self.unsupported(op, f"operation '{name}'")
        res_elem = element_type(op.results[0].type)
        rtype = vec_type(res_elem, width)
        if name == "arith.select" and is_tensor(op.results[0]) and not is_tensor(op.operands[0]) and width > 1:
            # A scalar condition choosing between whole tensors.
            operands = [op.operands[0]] + [get(x) for x in op.operands[1:]]
            return emit(arith.SelectOp(*operands))
        operands = [get(x) for x in op.operands]
        if name.startswith(_ELEMENTWISE_PREFIXES) and name != "arith.constant":
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
            return emit(tcpu.BitcastOp(operands[0], rtype))
        if name == "tt.fp_to_fp":
            mode = op.get_rounding()
            rounding = None if mode is None else ("rtz" if mode == tt.RoundingMode.RTZ else "rtne")
            return emit(tcpu.FpToFpOp(operands[0], rtype, rounding))
        if name == "tt.mulhiui":
            return emit(tcpu.MulhiUIOp(operands[0], operands[1]))
        if name == "tt.clampf":
            x, lo, hi = operands
            nan_all = _int(op, "propagateNan", 0) == tt.PropagateNan.ALL
            mx, mn = (arith.MaximumfOp, arith.MinimumfOp) if nan_all else (arith.MaxnumfOp, arith.MinnumfOp)
            return emit(mn(emit(mx(x, lo)), hi))
        if name == "tt.extern_elementwise":
            symbol = _attr(op, "symbol").data
            pure = _attr(op, "pure")
            return emit(tcpu.ExternElementwiseOp(operands, symbol, bool(pure and pure.value.data), rtype))
        raise self.unsupported(op, f"operation '{name}'")

    # -- vector length ------------------------------------------------------
    def max_lanes(self) -> int:
        """Lanes of a loop step: two native registers of 32-bit elements (LLVM splits or
        widens for other element sizes)."""
        return max(1, 2 * self.config.vector_bits // 32)

    def vector_length(self, sink_shape, roots) -> int:
        vl = min(self.max_lanes(), sink_shape[-1])
        seen = set()
        stack = list(roots)
        while stack:
            v = stack.pop()
            if v in seen or not is_tensor(v):
                continue
            seen.add(v)
            op = v.owner
            if not isinstance(op, Operation):
                continue
            if op.name == "tt.reshape":
                vl = min(vl, shape_of(op.operands[0])[-1])
            stack.extend(op.operands)
        return vl

    # -- sinks --------------------------------------------------------------
    def lower_store(self, op: Operation):
        ptr, val, mask = op.ptr, op.value, op.mask
        shape = shape_of(ptr)
        vl = self.vector_length(shape, [ptr, val] + ([mask] if mask else []))

        def body(em: TileEmitter, idx):
            v = em.value(val, idx, vl)
            m = em.value(mask, idx, vl) if mask is not None else None
            if vl > 1 and self.axis.get(ptr).contiguity[-1] >= vl:
                em.emit(tcpu.VStoreOp(em.value(ptr, idx, 1), v, m, self.alignment(ptr, vl)))
            elif vl == 1:
                em.emit(tcpu.StoreOp(em.value(ptr, idx, 1), v, m))
            else:
                em.emit(tcpu.ScatterOp(em.value(ptr, idx, vl), v, m))

        self.loop_nest(op, shape, vl, body)
        op.detach()
        op.erase()

    def loop_nest(self, at: Operation, shape, vl, body):
        """Emits `for i0.. for j step vl: body(emitter, idx)` before `at`; dims of the
        size of their step get the constant index 0 instead of a loop."""
        self.nest(TileEmitter(self, at.parent_block(), at), shape, vl, body)

    def nest(self, em: "TileEmitter", shape, vl, body):
        self.nest_steps(em, shape, [1] * (len(shape) - 1) + [vl], body)

    def nest_steps(self, em: "TileEmitter", shape, steps, body):

        def level(e, d, idx):
            if d == len(shape):
                body(e, tuple(idx))
                return
            if shape[d] == steps[d]:
                level(e, d + 1, idx + [0])
                return

            def inner(child, iv, _):
                level(child, d + 1, idx + [iv])
                return []
            e.for_loop(0, shape[d], steps[d], [], inner)

        level(em, 0, [])

    # -- materialization -----------------------------------------------------
    def alloc_buffer(self, tensor_type) -> SSAValue:
        """A buffer for one tensor, allocated once at function entry (the code
        generator puts large ones in the per-thread scratch arena)."""
        entry = self.func.regions[0].blocks[0]
        elem = element_type(tensor_type)
        op = memref.AllocaOp.get(elem, 64, list(tensor_type.get_shape()))
        if entry.first_op is not None:
            entry.insert_op_before(op, entry.first_op)
        else:
            entry.add_op(op)
        return op.memref

    def materialize_into(self, em: "TileEmitter", value: SSAValue, buf: SSAValue):
        if self.buffers.get(value) is buf:
            return  # already there (a dot that accumulated in place)
        shape = shape_of(value)
        vl = self.vector_length(shape, [value])
        self.nest(em, shape, vl, lambda e, idx: e.store_buffer(e.value(value, idx, vl), buf, idx))

    def inline_region(self, em: "TileEmitter", block: Block, args, width: int):
        """Clones a combine region (reduce/scan) on `args` with `width` lanes; returns
        the values its terminator returns."""
        env = dict(zip(block.args, args))

        def outside(x):
            """A scalar defined outside the region (e.g. a hoisted constant): splat it."""
            if width == 1 or isinstance(x.type, VectorType):
                return x
            env[x] = em.emit(vector.BroadcastOp(x, VectorType(x.type, [width])))
            return env[x]

        for op in block.ops:
            if op is block.last_op:
                return [env[v] for v in op.operands]
            if op.name == "arith.constant":
                attr = _attr(op, "value")
                c = arith.ConstantOp(attr if width == 1 else
                                     DenseIntOrFPElementsAttr.from_list(VectorType(attr.type, [width]),
                                                                        [attr.value.data]))
                env[op.results[0]] = em.emit(c)
                continue
            env[op.results[0]] = self.elementwise(op, lambda x: env[x] if x in env else outside(x), width, em.emit)
        raise self.unsupported(block.parent_op(), "a combine region without terminator")

    def _halves(self, em, vec, width):
        mask_lo = DenseArrayBase.from_list(i64, list(range(width // 2)))
        mask_hi = DenseArrayBase.from_list(i64, list(range(width // 2, width)))
        t = VectorType(vec.type.element_type, [width // 2])
        return (em.emit(vector.ShuffleOp(vec, vec, mask_lo, result_type=t)),
                em.emit(vector.ShuffleOp(vec, vec, mask_hi, result_type=t)))

    def lower_reduce(self, op: Operation):
        """tt.reduce: vector accumulators over the other axes, the combine region inlined.

        Along the last axis the lanes are the reduced axis: chunks are combined lane-wise,
        then the lanes pairwise (a tree). Along another axis the lanes are the output's
        last axis and the reduced axis is a loop. Results go to buffers, or stay scalars."""
        axis = _int(op, "axis")
        inputs = list(op.operands)
        combine = op.regions[0].blocks[0]
        in_shape = shape_of(inputs[0])
        out_shape = in_shape[:axis] + in_shape[axis + 1:]
        scalar_result = not out_shape
        bufs = [] if scalar_result else [self.alloc_buffer(r.type) for r in op.results]
        em = TileEmitter(self, op.parent_block(), op)
        results = []

        def combine_at(e, accs, idx_in, width):
            cur = [e.value(x, idx_in, width) for x in inputs]
            return self.inline_region(e, combine, accs + cur, width)

        if axis == len(in_shape) - 1:
            d = in_shape[-1]
            vl = min(d, self.max_lanes())

            def body(e, idx):
                accs = [e.value(x, idx + (0,), vl) for x in inputs]
                if d > vl:
                    accs = e.for_loop(vl, d, vl, accs,
                                      lambda c, k, a: combine_at(c, a, idx + (k,), vl))
                w = vl
                while w > 2:
                    halves = [self._halves(e, a, w) for a in accs]
                    accs = self.inline_region(e, combine, [h[0] for h in halves] + [h[1] for h in halves], w // 2)
                    w //= 2
                if w == 2:
                    lanes = [[e.emit(vector.ExtractOp(a, [k], a.type.element_type)) for a in accs] for k in (0, 1)]
                    accs = self.inline_region(e, combine, lanes[0] + lanes[1], 1)
                scalars = accs
                if scalar_result:
                    results.extend(scalars)
                else:
                    for v, b in zip(scalars, bufs):
                        e.store_buffer(v, b, idx)
            self.nest(em, out_shape, 1, body) if out_shape else body(em, ())
        else:
            vl = self.vector_length(out_shape, [])
            d = in_shape[axis]

            def insert(idx, k):
                return idx[:axis] + (k,) + idx[axis:]

            def body(e, idx):
                accs = [e.value(x, insert(idx, 0), vl) for x in inputs]
                if d > 1:
                    accs = e.for_loop(1, d, 1, accs, lambda c, k, a: combine_at(c, a, insert(idx, k), vl))
                for v, b in zip(accs, bufs):
                    e.store_buffer(v, b, idx)
            self.nest(em, out_shape, vl, body)
        if scalar_result:
            for r, v in zip(op.results, results):
                r.replace_all_uses_with(v)
        else:
            for r, b in zip(op.results, bufs):
                self.buffers[r] = b

    def lower_histogram(self, op: Operation):
        """Counts into a zeroed buffer, one element at a time; values outside
        [0, bins) (and masked-off ones) are not counted."""
        x = op.operands[0]
        mask = op.operands[1] if len(op.operands) > 1 else None
        out = op.results[0]
        bins = shape_of(out)[0]
        elem = element_type(out.type)
        buf = self.alloc_buffer(out.type)
        em = TileEmitter(self, op.parent_block(), op)
        zero = em.emit(arith.ConstantOp(IntegerAttr(0, elem)))
        self.nest(em, (bins,), 1, lambda e, idx: e.store_buffer(zero, buf, idx))
        xt = element_type(x.type)

        def body(e, idx):
            v = e.value(x, idx, 1)
            lo = e.emit(arith.CmpiOp(v, e.emit(arith.ConstantOp(IntegerAttr(0, xt))), "sge"))
            hi = e.emit(arith.CmpiOp(v, e.emit(arith.ConstantOp(IntegerAttr(bins, xt))), "slt"))
            ok = e.emit(arith.AndIOp(lo, hi))
            if mask is not None:
                ok = e.emit(arith.AndIOp(ok, e.value(mask, idx, 1)))
            # Out-of-range values count into bin 0 with weight 0: no branch.
            k = e.emit(arith.IndexCastOp(e.emit(arith.SelectOp(ok, v, e.emit(arith.ConstantOp(IntegerAttr(0, xt))))),
                                         INDEX))
            inc = e.emit(arith.ExtUIOp(ok, elem))
            e.store_buffer(e.emit(arith.AddiOp(e.load_buffer(buf, (k,), 1), inc)), buf, (k,))
        self.nest(em, shape_of(x), 1, body)
        self.buffers[out] = buf

    # -- dot ------------------------------------------------------------------
    def pack(self, em: "TileEmitter", value: SSAValue, elem) -> SSAValue:
        """A row-major buffer holding `value` converted to `elem` (the accumulation type),
        so the micro-kernel reads plain contiguous rows."""
        shape = shape_of(value)
        src_elem = element_type(value.type)
        buf = self.alloc_buffer(TensorType(elem, shape))
        vl = self.vector_length(shape, [value])

        def body(e, idx):
            v = e.value(value, idx, vl)
            if src_elem != elem:
                v = e.emit(_widen(v, src_elem, elem, vl))
            e.store_buffer(v, buf, idx)
        self.nest(em, shape, vl, body)
        return buf

    def lower_dot(self, op: Operation):
        """tt.dot: C = A @ B + C0 with a register-blocked micro-kernel.

        A and B are packed to buffers in the accumulation type (fp16/bf16/fp8 widen to
        fp32, int8 to int32; tf32 is computed as full fp32). For each MR x (NR*VL) tile
        of C, MR*NR vector accumulators stay in registers over the whole K loop; each
        step loads NR vectors of a row of B and broadcasts MR scalars of a column of A.
        A leading batch dimension (3-D dot) is an outer loop."""
        a, b, c0 = op.operands
        out = op.results[0]
        shape = shape_of(out)
        out_elem = element_type(out.type)
        # fp16/bf16 results accumulate in fp32 and round once at the end, as GPU matrix
        # units and Triton's interpreter do.
        acc_elem = Float32Type() if isinstance(out_elem, (Float16Type, BFloat16Type)) else out_elem
        batch = shape[:-2]
        M, N = shape[-2:]
        K = shape_of(a)[-1]
        is_float = not isinstance(acc_elem, IntegerType)
        em = TileEmitter(self, op.parent_block(), op)
        a_buf = self.pack(em, a, acc_elem)
        b_buf = self.pack(em, b, acc_elem)
        # Write C in place into C0's buffer when nothing else reads C0.
        c_buf = self.buffers.get(c0)
        if c_buf is None or len(list(c0.uses)) != 1 or acc_elem != out_elem:
            c_buf = self.pack(em, c0, acc_elem)
        lanes = max(1, self.config.vector_bits // max(8, _bits(acc_elem)))
        VL = min(lanes, N)
        NR = 2 if N >= 2 * VL else 1
        MR = min(4, M)
        vt = VectorType(acc_elem, [VL]) if VL > 1 else acc_elem

        def tile(e, idx):
            pre = idx[:-2]
            i0, j0 = idx[-2], idx[-1]
            rows = [e.idx_add(i0, m) for m in range(MR)]
            cols = [e.idx_add(j0, n * VL) for n in range(NR)]
            accs = [e.load_buffer(c_buf, pre + (r, c), VL) for r in rows for c in cols]

            def step(k_em, k, accs):
                bs = [k_em.load_buffer(b_buf, pre + (k, c), VL) for c in cols]
                new = []
                for mi, r in enumerate(rows):
                    av = k_em.load_buffer(a_buf, pre + (r, k), 1)
                    if VL > 1:
                        av = k_em.emit(vector.BroadcastOp(av, vt))
                    for ni in range(NR):
                        acc = accs[mi * NR + ni]
                        if is_float:
                            new.append(k_em.emit(math.FmaOp(av, bs[ni], acc)))
                        else:
                            new.append(k_em.emit(arith.AddiOp(acc, k_em.emit(arith.MuliOp(av, bs[ni])))))
                return new
            accs = e.for_loop(0, K, 1, accs, step)
            for (r, c), v in zip([(r, c) for r in rows for c in cols], accs):
                e.store_buffer(v, c_buf, pre + (r, c))

        self.nest_steps(em, batch + (M, N), [1] * len(batch) + [MR, NR * VL], tile)
        if acc_elem != out_elem:
            out_buf = self.alloc_buffer(out.type)
            vl = self.vector_length(shape, [])

            def narrow(e, idx):
                v = e.load_buffer(c_buf, idx, vl)
                e.store_buffer(e.emit(arith.TruncFOp(v, vec_type(out_elem, vl))), out_buf, idx)
            self.nest(em, shape, vl, narrow)
            c_buf = out_buf
        self.buffers[out] = c_buf

    # -- atomics --------------------------------------------------------------
    _RMW_KINDS = {tt.RMWOp.AND: "and", tt.RMWOp.OR: "or", tt.RMWOp.XOR: "xor", tt.RMWOp.ADD: "add",
                  tt.RMWOp.FADD: "fadd", tt.RMWOp.MAX: "max", tt.RMWOp.MIN: "min", tt.RMWOp.UMAX: "umax",
                  tt.RMWOp.UMIN: "umin", tt.RMWOp.EXCH: "xchg"}
    # The CPU has one coherence domain: every scope is system scope.
    _ORDERINGS = {tt.MemSemantic.RELAXED: "monotonic", tt.MemSemantic.ACQUIRE: "acquire",
                  tt.MemSemantic.RELEASE: "release", tt.MemSemantic.ACQ_REL: "acq_rel"}

    def lower_atomic(self, op: Operation):
        """One LLVM atomic per element, in index order, under the mask; a tensor result
        (the old values) goes to a buffer when it is used."""
        ordering = self._ORDERINGS[op.get_sem()]
        if op.name == "tt.atomic_rmw":
            kind = self._RMW_KINDS[op.get_rmw_op()]
            operands = [op.ptr, op.val, op.mask]
            make = lambda p, v, m: tcpu.AtomicRMWOp(p, v, m, kind, ordering)
        else:
            operands = [op.ptr, op.cmp, op.val]
            make = lambda p, c, v: tcpu.AtomicCASOp(p, c, v, ordering)
        result = op.results[0]
        em = TileEmitter(self, op.parent_block(), op)
        if not is_tensor(op.ptr):
            new = em.emit(make(*operands))
            result.replace_all_uses_with(new)
        else:
            used = bool(list(result.uses))
            buf = self.alloc_buffer(result.type) if used else None

            def body(e, idx):
                vals = [e.value(x, idx, 1) if x is not None else None for x in operands]
                old = e.emit(make(*vals))
                if buf is not None:
                    e.store_buffer(old, buf, idx)
            self.nest(em, shape_of(op.ptr), 1, body)
            if buf is not None:
                self.buffers[result] = buf

    # -- debug ops ------------------------------------------------------------
    def lower_print(self, op: Operation):
        """One tcpu.print per element, operand after operand, as the GPU prints them."""
        prefix = op.prefix.data
        hex_ = bool(op.hex.value.data)
        signed = list(op.isSigned.get_values())
        args = list(op.operands)
        em = TileEmitter(self, op.parent_block(), op)
        if not args:
            em.emit(tcpu.PrintOp(None, [], prefix, hex_, False, 0, 0, []))
        for k, v in enumerate(args):
            is_signed = bool(signed[k]) if k < len(signed) else False
            if not is_tensor(v):
                em.emit(tcpu.PrintOp(v, [], prefix, hex_, is_signed, k, len(args), []))
                continue
            shape = shape_of(v)

            def body(e, idx, v=v, k=k, is_signed=is_signed, shape=shape):
                i32s = [e.emit(arith.IndexCastOp(e.as_ssa_index(i), i32)) for i in idx]
                e.emit(tcpu.PrintOp(e.value(v, idx, 1), i32s, prefix, hex_, is_signed, k, len(args), shape))
            self.nest(em, shape, 1, body)
        op.detach()
        op.erase()

    def lower_assert(self, op: Operation):
        from triton_cpu.dialects.ttir import user_location
        cond = op.operands[0]
        loc = user_location(op)
        file, line = (loc[0], loc[1]) if loc else ("<unknown>", 0)
        message = op.message.data
        em = TileEmitter(self, op.parent_block(), op)
        if not is_tensor(cond):
            em.emit(tcpu.AssertOp(cond, message, file, line, self.kernel))
        else:
            shape = shape_of(cond)
            vl = self.vector_length(shape, [cond])
            self.nest(em, shape, vl, lambda e, idx: e.emit(
                tcpu.AssertOp(e.value(cond, idx, vl), message, file, line, self.kernel)))
        op.detach()
        op.erase()

    def lower_scan(self, op: Operation):
        """tt.scan: a sequential carry along the axis (in reverse when asked), the combine
        region inlined; vectorized across the last axis unless that is the scanned one."""
        axis = _int(op, "axis")
        reverse = bool(_int(op, "reverse", 0))
        inputs = list(op.operands)
        combine = op.regions[0].blocks[0]
        shape = shape_of(inputs[0])
        d = shape[axis]
        bufs = [self.alloc_buffer(r.type) for r in op.results]
        outer = shape[:axis] + shape[axis + 1:]
        vl = 1 if axis == len(shape) - 1 or not outer else self.vector_length(outer, [])
        em = TileEmitter(self, op.parent_block(), op)

        def at(e, idx, k):
            """Full index with k at the axis (counted from the end in reverse)."""
            if reverse:
                k = d - 1 - k if isinstance(k, int) else e.emit(arith.SubiOp(e.const_index(d - 1), k))
            return idx[:axis] + (k,) + idx[axis:]

        def body(e, idx):
            first = at(e, idx, 0)
            carry = [e.value(x, first, vl) for x in inputs]
            for v, b in zip(carry, bufs):
                e.store_buffer(v, b, first)

            def step(c, k, carry):
                full = at(c, idx, k)
                cur = [c.value(x, full, vl) for x in inputs]
                new = self.inline_region(c, combine, list(carry) + cur, vl)
                for v, b in zip(new, bufs):
                    c.store_buffer(v, b, full)
                return new
            if d > 1:
                e.for_loop(1, d, 1, carry, step)
        if outer:
            self.nest(em, outer, vl, body)
        else:
            body(em, ())
        for r, b in zip(op.results, bufs):
            self.buffers[r] = b

    # -- structured control flow carrying tensors ----------------------------
    def lower_for(self, op: Operation):
        """Tensor iter_args live in buffers: the init is materialized before the loop,
        the body reads the buffer, the yield writes it (see lower_yield)."""
        body = op.regions[0].blocks[0]
        carried = {}
        em = TileEmitter(self, op.parent_block(), op)
        for i, init in enumerate(op.operands[3:]):
            if is_tensor(init):
                buf = self.alloc_buffer(init.type)
                self.materialize_into(em, init, buf)
                arg = body.args[1 + i]
                self.buffers[arg] = buf
                self.buffers[op.results[i]] = buf
                carried[i] = buf
        if carried:
            self.carried[op] = carried
            self.loops_to_strip.append(op)

    @staticmethod
    def _carried_arg(loop: Operation, i: int) -> SSAValue:
        """The block argument that holds loop-carried value i at the top of an iteration."""
        if loop.name == "scf.for":
            return loop.regions[0].blocks[0].args[1 + i]
        return loop.regions[0].blocks[0].args[i]  # scf.while: the `before` region

    def lower_while(self, op: Operation):
        """Tensor values carried by scf.while live in buffers: `before` arguments in one
        per init, `after` arguments and results in the buffer of what scf.condition
        forwards (the same one when it forwards a `before` argument unchanged)."""
        before = op.regions[0].blocks[0]
        em = TileEmitter(self, op.parent_block(), op)
        carried = {}
        for i, init in enumerate(op.operands):
            if is_tensor(init):
                buf = self.alloc_buffer(init.type)
                self.materialize_into(em, init, buf)
                self.buffers[before.args[i]] = buf
                carried[i] = buf
        if carried or any(is_tensor(r) for r in op.results):
            self.carried[op] = carried
            self.loops_to_strip.append(op)

    def lower_condition(self, op: Operation):
        loop = op.parent_op()
        if loop not in self.carried:
            return
        after = loop.regions[1].blocks[0]
        em = TileEmitter(self, op.parent_block(), op)
        for j, v in enumerate(list(op.operands)[1:]):
            if not is_tensor(v):
                continue
            buf = self.buffers.get(v) if isinstance(v, BlockArgument) and v.block is loop.regions[0].blocks[0] else None
            if buf is None:
                buf = self.alloc_buffer(v.type)
                self.materialize_into(em, v, buf)
            self.buffers[after.args[j]] = buf
            self.buffers[loop.results[j]] = buf

    def lower_if(self, op: Operation):
        bufs = {i: self.alloc_buffer(r.type) for i, r in enumerate(op.results) if is_tensor(r)}
        if bufs:
            for i, b in bufs.items():
                self.buffers[op.results[i]] = b
            self.carried[op] = bufs
            self.loops_to_strip.append(op)

    def lower_yield(self, op: Operation):
        parent = op.parent_op()
        bufs = self.carried.get(parent)
        if not bufs:
            return
        em = TileEmitter(self, op.parent_block(), op)
        if parent.name == "scf.if":
            for i, b in bufs.items():
                self.materialize_into(em, op.operands[i], b)
            return
        if parent.name == "scf.while" and op.parent_block() is not parent.regions[1].blocks[0]:
            return
        # A yielded value may read carried buffers that other yields overwrite, or its own
        # at other indices: compute such values into temporaries first, then copy.
        direct, staged = [], []
        for i, b in bufs.items():
            v = op.operands[i]
            (direct if self._in_place_ok(v, parent, i) else staged).append((v, b))
        temps = []
        for v, b in staged:
            t = self.alloc_buffer(v.type)
            self.materialize_into(em, v, t)
            temps.append((t, b, v))
        for v, b in direct:
            self.materialize_into(em, v, b)
        for t, b, v in temps:
            self.copy_buffer(em, t, b, v.type)

    def copy_buffer(self, em, src, dst, tensor_type):
        shape = tuple(tensor_type.get_shape())
        vl = self.vector_length(shape, [])
        self.nest(em, shape, vl, lambda e, idx: e.store_buffer(e.load_buffer(src, idx, vl), dst, idx))

    def _in_place_ok(self, value, loop, index) -> bool:
        """True when `value` reads the loop's carried tensors only as its own argument
        `index`, and only elementwise (at the index it writes)."""
        own = self._carried_arg(loop, index)
        others = {self._carried_arg(loop, i) for i in self.carried[loop] if i != index}
        seen = set()

        def walk(v, shifted):
            if v in seen or not is_tensor(v):
                return True
            seen.add(v)
            if v is own:
                return not shifted
            if v in others:
                return False
            if v in self.buffers:
                return True
            op = v.owner
            if not isinstance(op, Operation):
                return True
            moves = not _is_elementwise(op)
            return all(walk(x, shifted or moves) for x in op.operands)

        return walk(value, False)

    @staticmethod
    def strip_yields(op: Operation):
        """Drops the tensor operands of an scf.for/scf.if/scf.while's terminators (the
        values are in buffers now)."""
        if op.name == "scf.while":
            cond = op.regions[0].blocks[0].last_op
            new_c = scf.ConditionOp(cond.operands[0], *[v for v in list(cond.operands)[1:] if not is_tensor(v)])
            cond.parent_block().insert_op_before(new_c, cond)
            cond.detach()
            cond.erase()
            y = op.regions[1].blocks[0].last_op
            new_y = scf.YieldOp(*[v for v in y.operands if not is_tensor(v)])
            y.parent_block().insert_op_before(new_y, y)
            y.detach()
            y.erase()
            return
        keep = [i for i, r in enumerate(op.results) if not is_tensor(r)]
        for region in op.regions:
            for blk in region.blocks:
                y = blk.last_op
                if y is not None and y.name == "scf.yield":
                    new_y = scf.YieldOp(*[y.operands[i] for i in keep])
                    blk.insert_op_before(new_y, y)
                    y.detach()
                    y.erase()

    def strip_tensors(self, op: Operation):
        """Rebuilds an scf.for/scf.if without its tensor values, once nothing reads them."""
        keep = [i for i, r in enumerate(op.results) if not is_tensor(r)]
        if op.name == "scf.while":
            before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
            inits = [v for v in op.operands if not is_tensor(v)]
            regions = list(op.regions)
            for r in regions:
                op.detach_region(r)
            for blk in (before, after):
                for a in reversed(list(blk.args)):
                    if is_tensor(a):
                        blk.erase_arg(a)
            new = scf.WhileOp(inits, [op.results[i].type for i in keep], regions[0], regions[1])
        elif op.name == "scf.for":
            body = op.regions[0].blocks[0]
            inits = [op.operands[3 + i] for i in keep]
            region = op.regions[0]
            op.detach_region(region)
            new = scf.ForOp(op.operands[0], op.operands[1], op.operands[2], inits, region)
            for i in reversed(range(len(op.results))):
                if i not in keep:
                    body.erase_arg(body.args[1 + i])
        else:
            regions = list(op.regions)
            for r in regions:
                op.detach_region(r)
            new = scf.IfOp(op.operands[0], [op.results[i].type for i in keep], regions[0],
                           regions[1] if len(regions) > 1 else None)
        op.parent_block().insert_op_before(new, op)
        for k, i in enumerate(keep):
            op.results[i].replace_all_uses_with(new.results[k])
        op.detach()
        op.erase()

    # -- scalars ------------------------------------------------------------
    def lower_scalar(self, op: Operation):
        em = TileEmitter(self, op.parent_block(), op)
        name = op.name
        if name == "tt.get_program_id":
            res = em.emit(tcpu.ProgramIdOp(op.axis.value.data))
        elif name == "tt.get_num_programs":
            res = em.emit(tcpu.NumProgramsOp(op.axis.value.data))
        elif name == "tt.load":
            res = em.emit(tcpu.LoadOp(op.ptr, op.results[0].type, op.mask, op.other))
        elif name == "tt.store":
            res = em.emit(tcpu.StoreOp(op.ptr, op.value, op.mask))
        else:
            res = self.elementwise(op, lambda x: x, 1, em.emit)
        if op.results:
            op.results[0].replace_all_uses_with(res)
        op.detach()
        op.erase()

    # -- what to compute once ---------------------------------------------------
    # Ops that consume tensors where they stand (their operands are evaluated there).
    _ROOTS = {"tt.store", "tt.reduce", "tt.scan", "tt.dot", "tt.atomic_rmw", "tt.atomic_cas", "tt.print",
              "tt.assert", "tt.histogram", "scf.yield", "scf.condition", "scf.for", "scf.while", "tt.gather"}
    # Worth a buffer when evaluated for several consumers.
    _EXPENSIVE = ("tt.load", "math.", "tt.extern_elementwise", "arith.divf", "tt.precise_")

    def materialization_plan(self, ops) -> set:
        """Tensors to compute once, into a buffer, right after their definition (instead of
        being recomputed inside each consumer's loop nest):
          - a load that a memory write may separate from one of its consumers (the value
            must be what memory held at the load, as on a GPU);
          - an expensive value (a load, math, an extern call, a division) that feeds two
            or more consumers."""
        position = {op: i for i, op in enumerate(ops)}
        writes = [op for op in ops if has_effects(op, MemoryEffectKind.WRITE)
                  and op.name not in ("tt.print", "tt.assert")]
        roots: dict[SSAValue, set] = {}

        def visit(v, root, seen):
            if v in seen or not is_tensor(v):
                return
            seen.add(v)
            roots.setdefault(v, set()).add(root)
            producer = v.owner
            if isinstance(producer, Operation) and producer.name not in self._ROOTS \
                    and producer.name not in ("tt.reduce", "tt.scan", "tt.dot", "tt.histogram"):
                for x in producer.operands:
                    visit(x, root, seen)

        for op in ops:
            if op.name in self._ROOTS or op.name in ("tt.atomic_rmw", "tt.atomic_cas"):
                seen = set()
                for x in op.operands:
                    visit(x, op, seen)
        plan = set()
        for v, rs in roots.items():
            producer = v.owner
            if not isinstance(producer, Operation) or producer not in position:
                continue
            if producer.name == "tt.load" and any(self._write_between(producer, r, writes, position) for r in rs):
                plan.add(v)
            elif len(rs) >= 2 and producer.name.startswith(self._EXPENSIVE):
                plan.add(v)
        return plan

    @staticmethod
    def _write_between(load, root, writes, position) -> bool:
        """May a write run after `load` and before `root` evaluates it? (Writes by `root`
        itself happen chunk by chunk after the chunk's read, as its own loop nest.)"""
        lo, hi = position[load], position.get(root, len(position))
        loops = []
        p = root.parent_op()
        while p is not None:
            if p.name in ("scf.for", "scf.while") and not p.is_ancestor(load):
                loops.append(p)
            p = p.parent_op()
        for w in writes:
            if w is root:
                continue
            if lo < position[w] < hi:
                return True
            if any(loop.is_ancestor(w) for loop in loops):  # an earlier iteration's write
                return True
        return False

    def materialize_at_definition(self, op: Operation, value: SSAValue):
        buf = self.alloc_buffer(value.type)
        self.materialize_into(TileEmitter(self, op.parent_block(), op.next_op), value, buf)
        self.buffers[value] = buf

    @classmethod
    def _ops_in_order(cls, block: Block):
        """Ops in program order, entering structured control flow only (not the
        combine regions of reductions and scans, which belong to their op)."""
        for op in block.ops:
            yield op
            if op.name.startswith("scf."):
                for region in op.regions:
                    for b in region.blocks:
                        yield from cls._ops_in_order(b)

    def run(self):
        ops = [op for blk in self.func.regions[0].blocks for op in self._ops_in_order(blk)]
        for blk in list(self.func.regions[0].blocks)[1:]:
            if any(is_tensor(a) for a in blk.args):
                raise self.unsupported(blk.first_op, "a tensor passed between blocks (cf.br)")
        # Analyse before rewriting: the analysis reads the TTIR producers.
        for op in ops:
            if op.name in ("tt.store", "tt.load"):
                self.axis.get(op.operands[0])
        to_materialize = self.materialization_plan(ops)
        tensor_ops = []
        for op in ops:
            name = op.name
            for r in op.results:
                if r in to_materialize and op.next_op is not None:
                    self.materialize_at_definition(op, r)
            if name == "tt.store" and is_tensor(op.operands[0]):
                self.lower_store(op)
            elif name == "tt.print":
                self.lower_print(op)
            elif name == "tt.assert":
                self.lower_assert(op)
            elif name == "tt.gather":
                src = op.operands[0]
                if src not in self.buffers:
                    buf = self.alloc_buffer(src.type)
                    self.materialize_into(TileEmitter(self, op.parent_block(), op), src, buf)
                    self.buffers[src] = buf
                tensor_ops.append(op)
            elif name == "tt.histogram":
                self.lower_histogram(op)
                tensor_ops.append(op)
            elif name in ("tt.atomic_rmw", "tt.atomic_cas"):
                self.lower_atomic(op)
                self.lowered_effects.add(op)
                tensor_ops.append(op)
            elif name == "tt.dot":
                self.lower_dot(op)
                tensor_ops.append(op)
            elif name == "tt.scan":
                self.lower_scan(op)
                tensor_ops.append(op)
            elif name == "tt.reduce":
                self.lower_reduce(op)
                tensor_ops.append(op)
            elif name == "scf.for":
                self.lower_for(op)
            elif name == "scf.if":
                self.lower_if(op)
            elif name == "scf.while":
                self.lower_while(op)
            elif name == "scf.condition":
                self.lower_condition(op)
            elif name == "scf.yield":
                self.lower_yield(op)
            elif name.startswith("scf."):
                continue
            elif any(is_tensor(r) for r in op.results) or any(is_tensor(o) for o in op.operands):
                tensor_ops.append(op)
            elif name.startswith("tt.") and name not in ("tt.return", "tt.func", "tt.call"):
                self.lower_scalar(op)
        for op in self.loops_to_strip:
            self.strip_yields(op)
        # Fused producers are dead now; anything still holding a tensor is unsupported here.
        # Twice: a loop's tensor inits die only once the loop is rebuilt without them.
        self._erase_dead(tensor_ops)
        for op in self.loops_to_strip:
            if all(not r.uses for r in op.results if is_tensor(r)):
                self.strip_tensors(op)
        self._erase_dead(tensor_ops)
        live = [op for op in tensor_ops if op.parent is not None]
        if live:
            # Name the op that keeps the others alive: it consumes tensors without
            # being lowered (a reduction, a tensor yield, ...), not its first producer.
            live_set = set(live)
            culprits = [op for op in live
                        if not any(is_tensor(r) for r in op.results)
                        or any(u.operation not in live_set for r in op.results for u in r.uses)]
            op = (culprits or live)[0]
            raise self.unsupported(op, f"operation '{op.name}' on tensors")
        self._to_func()

    def _erase_dead(self, ops):
        """Erases unused fused producers. An op that writes memory (an atomic, a
        descriptor store, ...) is dropped only once lowered: otherwise it stays alive and
        is reported unsupported."""
        for op in reversed(ops):
            if op.parent is not None and all(not r.uses for r in op.results) \
                    and (op in self.lowered_effects or not has_effects(op, MemoryEffectKind.WRITE)):
                op.detach()
                op.erase()

    def _to_func(self):
        f = self.func
        region = f.regions[0]
        f.detach_region(region)
        ftype = _attr(f, "function_type")
        vis = _attr(f, "sym_visibility")
        new = func.FuncOp(self.kernel, ftype, region, vis.data if vis else None, arg_attrs=_attr(f, "arg_attrs"))
        for op in list(new.walk()):
            if op.name == "tt.return":
                repl = func.ReturnOp(*op.operands)
            elif op.name == "tt.call":
                # A noinline callee (scalar arguments only, as Triton requires); it also
                # receives the caller's program ids (see the code generator).
                repl = func.CallOp(op.properties["callee"], list(op.operands), [r.type for r in op.results])
            else:
                continue
            op.parent_block().insert_op_before(repl, op)
            for old_r, new_r in zip(op.results, repl.results):
                old_r.replace_all_uses_with(new_r)
            op.detach()
            op.erase()
        f.parent_block().insert_op_before(new, f)
        f.detach()
        f.erase()


@dataclass(frozen=True)
class ConvertTritonToTCPU(ModulePass):
    name = "convert-triton-to-tcpu"

    vector_bits: int = 256

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = Config(vector_bits=self.vector_bits)
        for f in [o for o in op.body.block.ops if o.name == "tt.func"]:
            FuncLowering(f, config).run()
