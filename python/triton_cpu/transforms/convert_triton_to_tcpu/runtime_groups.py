"""Run-time lane groups: the lane groups of `lane_groups.py` for runs whose length is
known only when the kernel runs.

Under dynamic shapes Inductor passes sizes as arguments and indexes with them:
`x0 = xindex % ks0`, `x1 = xindex // ks0`, a row loaded at `in_ptr + x0`, an embedding
row at `table + ks2 * idx[x1] + x0`, the output at `out + x0 + ks0 * x1`. The axis
analysis cannot bound the runs of `xindex // ks0`, so every such access is a gather or
scatter, lane by lane where the ISA has none (stores on AVX2).

Within a stretch of lanes that crosses no multiple of ks0 those values are simple: x1
is one value (uniform) and x0 steps by one (affine), so the loads and stores above are
broadcasts and vector accesses. A 1-D nest whose values allow it (`plan`) therefore
walks its lanes in groups found at run time (`emit_loop`):

    j = 0
    while j < n:
        d = lanes from j before any value changes its run (min over the plan's boundaries)
        for k in [j, j + d rounded down to the step): chunk k, its values from lane j
        if a chunk remains past them: chunk j + that, evaluated as before (gathers)

Boundaries: a division or remainder of a stride-1 value `a` by `m` (a uniform value,
constant or not) changes run where `a` reaches a multiple of m: d = m - a % m, taken
only when a >= 0 and m > 0 at the group's start (else d = 0: the chunk is evaluated as
before). A compare of a stride-1 value with a uniform one (Inductor's `xindex < xnumel`)
changes where they meet. A sign extension of a stride-1 value, where it would wrap.
Each group's values are those of lane j (evaluated once, before the inner loop) plus
the lane offset times their stride; a value an earlier nest wrote into a buffer (one
with several consumers, like Inductor's row index that its bounds assert also reads)
has the stride of the op that computed it, read from the buffer at lane j. When a
divisor that is the same for the whole nest is small (fewer than two steps of lanes),
the nest runs as before instead (a run-time branch; no groups at all for a constant
one): its groups would hold no whole chunk. Only nests with one sink take groups (a
store, or a buffer's materialization): the group's shared loads run before its chunks'
stores, which is the order of one store's own semantics. 1-D nests only: Inductor's
2-D tiles under dynamic shapes are not handled.
"""
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects import scf, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, i64
from xdsl.ir import Block, Region, SSAValue
from xdsl.ir import Operation

from triton_cpu.analysis.axis_info import element_type, is_ptr, shape_of
from triton_cpu.analysis.loops import constant_int
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.compat import arith, splat_value

from . import strided_loads
from .lane_groups import from_start
from .strided_loads import MAX_LOAD_STRIDE
from .util import INDEX, is_tensor, is_volatile, vector_type

if TYPE_CHECKING:
    from .core import FuncLowering, TileEmitter

_DIVS = {"arith.divsi": True, "arith.divui": True, "arith.remsi": False, "arith.remui": False}
# a < b, as a function of a stepping by one: how far past a(j) it changes, given d = b - a(j)
_CMP = {"slt": 0, "sge": 0, "sle": 1, "sgt": 1}
_MIRROR = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle"}
_UNIFORM_PREFIXES = ("arith.", "math.")
# How far `plan` follows producers: it looks through buffers, past the fusion depth limit
# of the nest itself (core's MAX_FUSION_DEPTH), so it bounds its own recursion.
_MAX_DEPTH = 64


@dataclass
class Plan:
    """`strides`: value -> its step per lane within a group (0: uniform), for the values
    of the nest that have one; `bounds`: boundary sources, ("div", a, m), ("cmp", a, b,
    extra) or ("wrap", a, limit, step, unsigned)."""
    strides: dict
    bounds: list
    whole_nest: list  # divisors that are one value for the whole nest (the size check)


@dataclass
class RuntimeGroup:
    """The inner loop of a run-time group: lane `j` = `start` + a multiple of `step`, the
    chunk's lanes j .. j + step - 1 all in the group; `outer` emits at the group's start,
    before the inner loop. `shifted` maps lane indices j + k (0 < k < step) to k."""
    outer: "TileEmitter"
    start: SSAValue
    j: SSAValue
    step: int
    plan: Plan
    shifted: dict = field(default_factory=dict)


def _const_splat(low, v: SSAValue) -> int | None:
    """The integer every element of `v` holds, when it is a compile-time constant."""
    if is_tensor(v):
        value = low.axis.get(v).value
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return constant_int(v)


def _wrap(a: SSAValue, step: int, unsigned: bool = False) -> tuple:
    """The boundary where `a`, stepping by `step`, would wrap around its type's largest
    value: the division, compare or extension of a group assumes it does not."""
    width = element_type(a.type).width.data
    limit = (1 << width) - 1 if unsigned else (1 << (width - 1)) - 1
    return ("wrap", a, min(limit, (1 << 63) - 1), step, unsigned)


def _whole_nest_uniform(low, v: SSAValue) -> bool:
    if not is_tensor(v):
        return True
    owner = v.owner
    return isinstance(owner, Operation) and (owner.name == "tt.splat" or _const_splat(low, v) is not None)


def plan(low: "FuncLowering", shape, vl: int, roots, store_ptr=None) -> Plan | None:
    """The run-time groups of a 1-D nest over `shape` stepping `vl` lanes that evaluates
    `roots` (and stores through `store_ptr`), or None when they would not turn any
    gather or scatter into a vector access."""
    if len(shape) != 1 or shape[0] < 2 * vl or vl < 2:
        return None
    n = shape[0]
    strides: dict = {}
    bounds: list = []
    fused = set(low.fused_producers(roots))

    depth = 0

    def stride(v: SSAValue):
        nonlocal depth
        if not is_tensor(v):
            return 0
        if v in strides:
            return strides[v]
        if depth >= _MAX_DEPTH:
            return None  # not recorded: a shallower request may still find v's stride
        # A value the nest reads from its buffer (materialized by an earlier nest) has the
        # stride of the op that computed it: the buffer holds that op's lanes.
        owner = v.owner
        depth += 1
        s = _stride(v) if isinstance(owner, Operation) and shape_of(v) == (n,) else None
        depth -= 1
        strides[v] = s
        return s

    def _stride(v: SSAValue):
        op = v.owner
        name = op.name
        if name == "tt.splat":
            return 0
        if name == "arith.constant":  # a splat of any type (a dense one: no stride)
            attr = op.properties.get("value") or op.attributes.get("value")
            return 0 if isinstance(attr, DenseIntOrFPElementsAttr) and splat_value(attr) is not None else None
        if name == "tt.make_range":
            return 1
        if name in ("arith.addi", "tt.addptr", "arith.subi"):
            a, b = (stride(x) for x in op.operands)
            if a is None or b is None:
                return None
            return a - b if name == "arith.subi" else a + b
        if name == "arith.muli":
            a, b = (stride(x) for x in op.operands)
            if a == 0 and b == 0:
                return 0
            for s, other in ((a, op.operands[1]), (b, op.operands[0])):
                c = _const_splat(low, other)
                if s is not None and c is not None:
                    return s * c
            return None
        if name in ("arith.extsi", "arith.extui"):
            s = stride(op.operands[0])
            if s is not None and s > 0:
                bounds.append(_wrap(op.operands[0], s, unsigned=name == "arith.extui"))
            return s if s is not None and s >= 0 else None
        if name == "arith.trunci":
            return stride(op.operands[0])
        if name in _DIVS:
            a, m = op.operands
            sa, sm = stride(a), stride(m)
            if sa == 0 and sm == 0:
                return 0
            if sa != 1 or sm != 0:
                return None
            bounds.append(("div", a, m))
            bounds.append(_wrap(a, 1))
            return 0 if _DIVS[name] else 1
        if name == "arith.cmpi":
            a, b = op.operands
            sa, sb = stride(a), stride(b)
            if sa == 0 and sb == 0:
                return 0
            pred = op._PREDICATES[op.predicate.value.data]
            if sa == 1 and sb == 0 and pred in _CMP:
                bounds.extend([("cmp", a, b, _CMP[pred]), _wrap(a, 1)])
                return 0
            if sa == 0 and sb == 1 and pred in _CMP:
                bounds.extend([("cmp", b, a, _CMP[_MIRROR[pred]]), _wrap(b, 1)])
                return 0
            return None
        if name == "arith.select":
            c, x, y = op.operands
            sc, sx, sy = stride(c), stride(x), stride(y)
            return sx if sc == 0 and sx is not None and sx == sy else None
        if name == "tt.load":
            if is_volatile(op):
                return None
            ok = all(stride(x) == 0 for x in op.operands)
            return 0 if ok else None
        if name.startswith(_UNIFORM_PREFIXES) and len(op.results) == 1:
            return 0 if all(stride(x) == 0 for x in op.operands) else None
        return None

    for v in fused:
        stride(v)
    if not any(b[0] == "div" for b in bounds):
        return None

    def gains(ptr, load: bool) -> bool:
        s = strides.get(ptr)
        if s is None or not (s == 0 and load or 1 <= s <= MAX_LOAD_STRIDE and (load or s == 1)):
            return False
        info = low.axis.get(ptr)
        return info.contiguity[0] < vl and info.constancy[0] < vl
    accesses = [(v.owner.ptr, True) for v in fused if v.owner.name == "tt.load" and is_tensor(v.owner.ptr)]
    if store_ptr is not None:
        accesses.append((store_ptr, False))
    if not any(gains(p, load) for p, load in accesses):
        return None
    whole = [b[2] for b in bounds if b[0] == "div" and _whole_nest_uniform(low, b[2])]
    if any(c is not None and c < 2 * vl for c in (_const_splat(low, m) for m in whole)):
        return None  # a constant divisor too small for a group to hold whole chunks
    return Plan(strides, bounds, whole)


def _cast(e: "TileEmitter", v: SSAValue, t, unsigned: bool = False) -> SSAValue:
    w = v.type.width.data
    if w == t.width.data:
        return v
    if w > t.width.data:
        return e.emit(arith.TruncIOp(v, t))
    return e.emit(arith.ExtUIOp(v, t) if unsigned else arith.ExtSIOp(v, t))


def _distance(e: "TileEmitter", p: Plan, start: SSAValue, n: int) -> SSAValue:
    """Lanes from `start` before a value of the plan leaves its run (at most n), as i64."""
    at = (start,)
    big = e.emit(arith.ConstantOp(IntegerAttr(n, i64)))
    zero = e.emit(arith.ConstantOp(IntegerAttr(0, i64)))
    one = e.emit(arith.ConstantOp(IntegerAttr(1, i64)))
    d = big
    for b in p.bounds:
        kind = b[0]
        a = _cast(e, e.value(b[1], at, 1), i64, unsigned=kind == "wrap" and b[4])
        if kind == "div":
            m = _cast(e, e.value(b[2], at, 1), i64)
            ok = e.emit(arith.AndIOp(e.emit(arith.CmpiOp(a, zero, "sge")), e.emit(arith.CmpiOp(m, zero, "sgt"))))
            safe_m = e.emit(arith.SelectOp(ok, m, one))
            left = e.emit(arith.SubiOp(safe_m, e.emit(arith.RemSIOp(a, safe_m))))
            run = e.emit(arith.SelectOp(ok, left, zero))
        elif kind == "cmp":  # a (stepping by one) against b: changes at b - a + extra, if ahead
            bv = _cast(e, e.value(b[2], at, 1), i64)
            ahead = e.emit(arith.AddiOp(e.emit(arith.SubiOp(bv, a)), e.emit(
                arith.ConstantOp(IntegerAttr(b[3], i64)))))
            # b - a computed modulo 2^64: when b > a it is the distance, read unsigned
            passed = e.emit(arith.CmpiOp(bv, a, "sle" if b[3] == 0 else "slt"))  # it has flipped already
            run = e.emit(arith.SelectOp(passed, big, ahead))
        else:  # "wrap": a stepping by s reaches the limit of its type after (limit - a) / s + 1 lanes
            limit = e.emit(arith.ConstantOp(IntegerAttr(b[2], i64)))
            s = e.emit(arith.ConstantOp(IntegerAttr(b[3], i64)))
            run = e.emit(arith.AddiOp(e.emit(arith.DivUIOp(e.emit(arith.SubiOp(limit, a)), s)), one))
        d = e.emit(arith.MinUIOp(d, run))
    return d


def emit_loop(low: "FuncLowering", e: "TileEmitter", n: int, vl: int, p: Plan, body, plain):
    """The lane loop of a 1-D nest of n lanes in run-time groups (see the module's
    docstring); `body(emitter, idx)` evaluates one chunk, `plain(emitter)` emits the
    nest as it was, for small divisors."""
    if p.whole_nest:
        floor = e.emit(arith.ConstantOp(IntegerAttr(2 * vl, i64)))
        big = None
        for m in p.whole_nest:
            c = e.emit(arith.CmpiOp(_cast(e, e.value(m, (0,), 1), i64), floor, "sge"))
            big = c if big is None else e.emit(arith.AndIOp(big, c))
        e.if_else(big, [], lambda t: _groups(low, t, n, vl, p, body) or [], lambda f: plain(f) or [])
    else:
        _groups(low, e, n, vl, p, body)


def _groups(low, e: "TileEmitter", n: int, vl: int, p: Plan, body):
    from .core import TileEmitter
    before, after = Block(arg_types=[INDEX]), Block(arg_types=[INDEX])
    loop = scf.WhileOp([e.const_index(0)], [INDEX], Region(before), Region(after))
    e.emit(loop)
    b = TileEmitter(low, before)
    j = before.args[0]
    b.emit(scf.ConditionOp(b.emit(arith.CmpiOp(j, b.const_index(n), "slt")), j))

    a = TileEmitter(low, after)
    start = after.args[0]
    start64 = a.emit(arith.IndexCastOp(start, i64))
    room = a.emit(arith.SubiOp(a.emit(arith.ConstantOp(IntegerAttr(n, i64))), start64))
    d = a.emit(arith.MinUIOp(_distance(a, p, start, n), room))
    mask = a.emit(arith.ConstantOp(IntegerAttr(-vl, i64)))
    fast_end = a.emit(arith.IndexCastOp(a.emit(arith.AddiOp(start64, a.emit(arith.AndIOp(d, mask)))), INDEX))

    blk = Block(arg_types=[INDEX])
    inner = scf.ForOp(start, fast_end, a.const_index(vl), [], blk)
    a.emit(inner)
    outer = TileEmitter(low, after, inner)  # the group's start, before its loop
    outer.cache = a.cache
    child = TileEmitter(low, blk)
    child.runtime_group = RuntimeGroup(outer, start, blk.args[0], vl, p)
    body(child, (blk.args[0],))
    blk.add_op(scf.YieldOp())

    # A chunk straddles the group's end unless the group ends on a chunk boundary (d == 0:
    # the group's values are not simple at all, its first chunk is evaluated as before).
    zero = a.emit(arith.ConstantOp(IntegerAttr(0, i64)))
    ragged = a.emit(arith.CmpiOp(a.emit(arith.AndIOp(d, a.emit(arith.ConstantOp(IntegerAttr(vl - 1, i64))))),
                                 zero, "ne"))
    ragged = a.emit(arith.OrIOp(ragged, a.emit(arith.CmpiOp(d, zero, "eq"))))
    more = a.emit(arith.AndIOp(ragged, a.emit(arith.CmpiOp(fast_end, a.const_index(n), "slt"))))

    def straddling(t):  # the chunk across the boundary, as before
        body(t, (fast_end,))
        return [t.emit(arith.AddiOp(fast_end, t.const_index(vl)))]
    nxt = a.if_else(more, [INDEX], straddling, lambda f: [fast_end])[0]
    a.emit(scf.YieldOp(nxt))


def grouped_value(em: "TileEmitter", v: SSAValue, idx, width: int, lane: int) -> SSAValue | None:
    """`v` at `idx` in a run-time group's chunk, from the group's start, or None when v has
    no stride in the plan."""
    g = em.runtime_group
    s = g.plan.strides.get(v)
    if s is None:
        return None
    k = g.shifted.get(idx[-1], 0)
    if k and width > 1:
        return None
    elem = element_type(v.type)
    at = (g.start,)
    if s == 0:
        scalar = g.outer.value(v, at, 1)
        return scalar if width == 1 else em.emit(vector.BroadcastOp(scalar, vector_type(elem, width)))
    if width > 1 and is_ptr(elem):
        return None
    offset = em.idx_add(em.emit(arith.SubiOp(g.j, g.start)), k)  # lanes past the group's start
    return from_start(em, g.outer.value(v, at, 1), offset, elem, width, s)


def access_stride(em: "TileEmitter", ptr: SSAValue) -> int | None:
    """The step in elements of `ptr` along the lanes of a run-time group's chunk, or None."""
    g = em.runtime_group
    return None if g is None else g.plan.strides.get(ptr)


def uniform_mask(em: "TileEmitter", mask) -> SSAValue | None:
    """A mask all lanes of a run-time group share, as the scalar at the group's start."""
    g = em.runtime_group
    if mask is None or g is None or g.plan.strides.get(mask) != 0:
        return None
    return g.outer.value(mask, (g.start,), 1)


def load(em: "TileEmitter", op: Operation, mask, idx, width: int, lane: int) -> SSAValue | None:
    """Load `op`'s `width` lanes under `mask` in a run-time group's chunk, or None when the
    group changes nothing: a mask the group's lanes share is a branch around the access
    without it, and a pointer stepping by 1 (or by up to MAX_LOAD_STRIDE elements: a
    strided window) within the group is a vector access."""
    elem = element_type(op.results[0].type)
    vt = vector_type(elem, width)
    cm = uniform_mask(em, mask)
    if cm is not None:
        return em.if_else(cm, [vt], lambda e: [e._load_masked(op, None, idx, width, lane)],
                          lambda e: [e.masked_off(op, idx, width, lane)])[0]
    ptr = op.ptr
    s = access_stride(em, ptr)
    if s is None or not 1 <= s <= MAX_LOAD_STRIDE or em.low.axis.get(ptr).contiguity[lane] >= width:
        return None
    p0 = em.value(ptr, idx, 1)
    m = em.value(mask, idx, width, lane) if mask is not None else None
    o = em.value(op.other, idx, width, lane) if op.other is not None else None
    if s == 1:
        return em.emit(tcpu.VLoadOp(p0, vt, m, o, em.low.alignment(ptr, width, lane)))
    return strided_loads.window_load(em, None, p0, width, s, m, o, idx, lane, elem)


def store(em: "TileEmitter", op: Operation, idx, v: SSAValue, m, vl: int, stream: bool) -> bool:
    """Store `op`'s `vl` lanes in a run-time group's chunk as one vector store when its
    pointer steps by 1 there (a mask the group's lanes share: a branch around it); False
    when the group does not make it one."""
    ptr = op.ptr
    if access_stride(em, ptr) != 1 and em.low.axis.get(ptr).contiguity[-1] < vl:
        return False
    cm = uniform_mask(em, op.mask)
    if cm is None and em.low.axis.get(ptr).contiguity[-1] >= vl:
        return False  # as before
    align = em.low.alignment(ptr, vl)
    p0 = em.value(ptr, idx, 1)
    if cm is None:
        em.emit(tcpu.VStoreOp(p0, v, m, align, stream))
        return True

    def put(e):
        e.emit(tcpu.VStoreOp(p0, v, None, align, stream))
        return []
    em.if_else(cm, [], put, lambda e: [])
    return True
