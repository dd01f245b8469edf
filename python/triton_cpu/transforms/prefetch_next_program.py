"""prefetch-next-program: a row-wise kernel's load also prefetches the row the same load
will read next, so that its memory arrives while this program computes.

Runs on TTIR, before convert-triton-to-tcpu. A kernel that handles one row (or block of
rows) per program, like a softmax, a layer norm or a cross-entropy, reads its row from
DRAM in a first pass (a reduction) and then computes on it from L1: the hardware
prefetchers do not cross the 4 KB page that starts each new row, so every program begins
with a row of cache misses, and the compute between them overlaps with nothing. Here the
load's address computation is cloned for the next instance of the same load and fed to
`tcpu.prefetch`, which the conversion lowers to one prefetch per 64-byte line:

  * a load in the function body (or in a branch of an scf.if there, each branch on its
    own: version-single-iteration-loops' copies): the next program in launch order
    (launcher.c runs neighbouring linear program ids on one thread, axis 0 fastest,
    wrapping into 1, 2, except the programs another thread steals at the end of a
    launch);
  * a load in a top-level `scf.for` whose address depends on the induction variable: the
    next iteration; at the last iteration, when the address or the loop's lower bound
    depends on the program id (a persistent loop over rows), the next program's first
    iteration; otherwise past the end (a wasted hint: a prefetch never faults). Not when
    the address moves by a line or less per iteration (the induction variable times a
    constant plus loop-invariant values, a constant step: `_iv_advance`), a stream the
    hardware prefetcher follows, where the slice cost more than the hint bought: FlagGems'
    row sum in 4-element tiles (its "arm" configs), a row sum of 4096 x 1024 fp32 on Zen 3,
    2 threads, interleaved: 16-byte tiles 1.22 -> 0.94 ms with rows in the cache, 1.41 ->
    1.17 ms after a cache flush; 64-byte tiles 0.58 -> 0.43 and 1.01 -> 0.92 ms. (256-byte
    tiles: 0.61 -> 0.45 ms in the cache but 0.93 -> 1.03 ms after a flush; kept.)

The prefetch goes right after the first reduction of the loaded tile, whose pass has then
issued its own misses, so the next row streams in behind them (the conversion issues its
lines during the next loop nest over the tile, a line per chunk: convert_triton_to_tcpu/
hints.py); in a loop that accumulates the tile into a loop-carried value instead (`acc +=
x` over the blocks of a row, reduced after the loop: upstream's layer norm), at the end of
the iteration.

A gather in the function body (Inductor's `table[idx]`, an embedding lookup) reads rows at
addresses loaded from an index tensor, which no hardware prefetcher follows, reduced or
not: its address slice may hold that index load (one level: the index load's own address
must be recomputable without loads), cloned with the next program's ids. Every program
performs that load with its own ids, and the next program's ids are those of a program
that exists (program 0 after the last), so the clone reads what some program reads; an
index that program would reject (a failed device assert, a masked-off row) only points a
prefetch somewhere else, which never faults. Without a reduction it goes right after the
gather. Not in the bounds-checked mode (`indirect=False`), where the cloned load would be
checked, and reported, as this program's. Loads one line apart (`x[2*i]` and
`x[2*i + 1]`) are prefetched once.

A tile that a tt.dot reads in an `scf.for` (a matmul's K loop, at the top level or nested
in other control flow: a persistent loop over C's tiles) prefetches the next iteration's
tile during this iteration's dot: the prefetch goes right before the dot, marked
`spread`, and the dot's lowering issues its lines a few per micro-tile (all at once they
stalled the packing and evicted the packed operands: 2-4% slower, measured).
Its address may use loop-carried offsets that each iteration advances by a loop-invariant
step (uniform-loop-increments' form of `a_ptrs += BLOCK_K * stride`), or by a chain of such
steps (a loop unroll-tile-dot-loops unrolled, whose later copies read the offset after some
of them); the next values are computed ahead. No wrap into the next program. Zen 3, 2
threads, tutorial 03's kernel, alternating processes: 2048^3 fp32 (64 x 128 x 32) 106-108 -> 103-106 ms, (64 x 64 x 32)
115-118 -> 107-109 ms; 1024^3 bf16 13.3-14.0 -> 12.5-12.8 ms; 1024^3 fp32 unchanged.

Which loads: those read by a tt.reduce / tt.scan in their block, accumulated by their
loop or read by a tt.dot in a loop; and gathers (Inductor's gather/index model,
bench_inductor.py, Zen 3: 0.55 -> 0.43 ms back to back, 1.07-1.22 -> 0.70-0.81 ms after a
cache flush, as fast as Inductor's C++). Upstream's layer norm forward (its loop form, after
peel-accumulator-loops, which runs next and copies the prefetch into the first iteration it
moves out): 1.40 -> 1.14 ms after a cache flush, 0.96 -> 0.88 ms back to back.
Measured on Zen 3, 2 threads, 4096x1024 fp32 after a cache flush: softmax (tutorial 02)
+9%, layer norm forward (05) +12%; an elementwise stream (vector add) is 16% slower with a
prefetch (the hardware prefetcher already follows it); attention (06) was ~20% slower
with its K tile prefetched in one burst before the dot (a 16 KB tile pulled into a 32 KB
L1), and is unchanged with it spread over the dot (15.3 ms either way). The address must
be recomputable: its backward slice holds nothing but pure integer and pointer arithmetic
(arith, splat, broadcast, make_range, expand_dims, addptr, program ids), kernel arguments
and, in a loop, the induction variable (and values from outside the loop, when only the
next iteration is prefetched; a dot operand's uniformly advanced offsets). Any other
loop-carried value, an
address read through two loads (or through one in a loop) or anything else leaves the
load alone, as do volatile loads and tiles whose lanes have no known step along their
last axis (hints.prefetch_step: contiguous, repeated, or a constant stride of at most a
line). Prefetches change no result: this pass is a hint, off with the `prefetch=False`
option / TRITON_CPU_PREFETCH=0.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import AxisInfoAnalysis, element_type, pointee_bytes
from triton_cpu.analysis.loops import constant_int
from triton_cpu.dialects import tcpu, tt
from triton_cpu.dialects.compat import arith
from triton_cpu.transforms.convert_triton_to_tcpu.hints import LINE_BYTES, prefetch_step
from triton_cpu.transforms.convert_triton_to_tcpu.strided_loads import split_offset
from triton_cpu.transforms.convert_triton_to_tcpu.util import is_volatile

# Ops an address slice may hold: pure, no memory, cheap to evaluate again.
_RECOMPUTABLE_TT = {"tt.splat", "tt.broadcast", "tt.make_range", "tt.expand_dims", "tt.addptr",
                    "tt.get_program_id", "tt.get_num_programs", "tt.int_to_ptr", "tt.ptr_to_int"}


def _recomputable(op: Operation) -> bool:
    if op.name in _RECOMPUTABLE_TT:
        return True
    return op.name.startswith("arith.") and not op.regions


class _Slice:
    """The ops between the roots (the program ids, a loop's induction variable) and a value,
    in program order, to be cloned with other roots."""

    def __init__(self, iv: SSAValue | None = None, invariant_outside: Operation | None = None,
                 loads: bool = False, carried=()):
        # `invariant_outside`: a loop; values defined outside it are the same in its next
        # iteration and used as they are (not recomputed), even those of ops that cannot be
        # recomputed (a scalar load). `carried`: loop-carried values (like `iv`, roots)
        # whose next value the caller provides.
        # `loads`: a tt.load whose own address is recomputable without loads may be in the
        # slice (an index load, one level deep).
        self.iv, self.loop, self.loads = iv, invariant_outside, loads
        self.carried = set(carried)
        self.has_load = False

    def of(self, value: SSAValue) -> list[Operation] | None:
        """The slice, [] when `value` does not depend on a root, None when a value on the
        way cannot be recomputed."""
        ops: dict[Operation, None] = {}  # in program order, each once (an ordered set)
        depends = {}

        def outside(v: SSAValue) -> bool:
            return self.loop is not None and _defined_outside(self.loop, v)

        def visit(v: SSAValue):  # whether v depends on a root (None: not recomputable)
            if v in depends:
                return depends[v]
            if outside(v):
                depends[v] = False  # the same value in the next iteration: used as it is
                return False
            if isinstance(v, BlockArgument):
                owner = v.block.parent_op()
                # Kernel arguments are the same in every program; any other block argument
                # (a loop-carried value) is not known for the next instance.
                d = True if v is self.iv or v in self.carried \
                    else False if owner is not None and owner.name == "tt.func" else None
            elif v.owner.name == "tt.get_program_id":
                d = True
                ops[v.owner] = None
            elif v.owner.name == "tt.load" and self.loads and not is_volatile(v.owner):
                inner = _Slice(self.iv, self.loop)
                parts = [inner.of(o) for o in v.owner.operands]
                if any(p is None for p in parts):
                    d = None
                elif any(parts):
                    d = True
                    for p in parts:
                        ops.update(dict.fromkeys(p))
                    ops[v.owner] = None
                    self.has_load = True
                else:
                    d = False  # the same address in every program: the same value, as a hint
            elif not _recomputable(v.owner):
                d = False if outside(v) else None
            else:
                d = False
                for o in v.owner.operands:
                    od = visit(o)
                    if od is None:
                        d = None
                        break
                    d = d or od
                if d:
                    ops[v.owner] = None
            depends[v] = d
            return d

        d = visit(value)
        return None if d is None else list(ops)


def _anchor(load: Operation) -> tuple[Operation, bool, bool] | None:
    """Where the prefetch goes, as (op, before, spread): after the first tt.reduce /
    tt.scan after `load` in its block that reads the loaded tile (through elementwise ops
    and the like); in a loop body without one, before the scf.yield when the tile feeds a
    loop-carried value (an accumulation over blocks of a row, `acc += x`, reduced after
    the loop: the layer norm of upstream's tutorial 05); before the tt.dot that reads the
    tile first (a matmul's K loop), spread over its micro-kernel. None when nothing
    accumulates, reduces or multiplies it."""
    tainted = set(load.results)
    op = load.next_op
    while op is not None:
        if any(o in tainted for o in op.operands):
            if op.name in ("tt.reduce", "tt.scan"):
                return op, False, False
            if op.name in ("tt.dot", "tt.dot_scaled"):
                return op, True, True
            if op.name == "scf.yield":
                return op, True, False
            tainted.update(op.results)
        op = op.next_op
    return None


def _dot_operand(load: Operation) -> bool:
    """Whether `load`'s tile is read by a tt.dot in its block (_anchor's spread case)."""
    anchor = _anchor(load)
    return anchor is not None and anchor[2]


def _program_ids(insert):
    """This program's ids and those of the program that runs after it on the same thread:
    axis 0 first, wrapping into axis 1 and 2 (launcher.c's run_programs)."""
    one = insert(arith.ConstantOp(IntegerAttr(1, i32)))
    zero = insert(arith.ConstantOp(IntegerAttr(0, i32)))
    carry, this, nxt = one, [], []
    for a in range(3):
        this.append(insert(tt.GetProgramIdOp(a)))
        bumped = insert(arith.AddiOp(this[a], carry))
        wraps = insert(arith.CmpiOp(bumped, insert(tt.GetNumProgramsOp(a)), "sge"))
        nxt.append(insert(arith.SelectOp(wraps, zero, bumped)))
        carry = insert(arith.ExtUIOp(wraps, i32))
    return this, nxt


def _clone(ops, mapping, insert):
    """Clones `ops` (a slice) with the values of `mapping` in place of theirs; a program id
    maps to mapping["pid", axis] when present, else stays."""
    for op in ops:
        if op.name == "tt.get_program_id":
            pid = op.results[0]
            mapping[pid] = mapping.get(("pid", op.properties["axis"].value.data), pid)
            continue
        new = op.clone(value_mapper=mapping)
        insert(new)
        for old_r, new_r in zip(op.results, new.results):
            mapping[old_r] = new_r


@dataclass(frozen=True)
class PrefetchNextProgram(ModulePass):
    name = "prefetch-next-program"

    # Whether an address may go through one index load (off in the bounds-checked mode,
    # where the cloned load would be checked, and reported, as the next program's).
    indirect: bool = True

    def apply(self, ctx: Context, module: ModuleOp) -> None:
        for f in [op for op in module.body.block.ops if op.name == "tt.func"]:
            axis = AxisInfoAnalysis()
            optimistic = AxisInfoAnalysis(optimistic=True)
            self._body(f.regions[0].blocks[0], axis, optimistic)

    def _body(self, body: Block, axis, optimistic):
        """The loads of a function's body, or of a branch of an scf.if in it (the copies
        version-single-iteration-loops makes), each branch on its own."""
        done = []  # (pointer type, split_offset) of the loads prefetched so far
        for op in list(body.ops):
            if op.name == "scf.if":
                for region in op.regions:
                    for block in region.blocks:
                        self._body(block, axis, optimistic)
                continue
            if op.name == "tt.load" and not _same_lines(axis, op.ptr, done):
                if _prefetch(op, body, axis, optimistic, None, self.indirect):
                    done.append((op.ptr.type, split_offset(axis, op.ptr)))
            elif op.name == "scf.for":
                loop_body = op.regions[0].blocks[0]
                for inner in list(loop_body.ops):
                    if inner.name == "tt.load" and not _same_lines(axis, inner.ptr, done):
                        if _prefetch(inner, loop_body, axis, optimistic, op, self.indirect):
                            done.append((inner.ptr.type, split_offset(axis, inner.ptr)))
            if op.regions:  # K loops nested in other control flow (a persistent loop over tiles)
                nested = [lp for lp in op.walk() if lp.name == "scf.for" and lp is not op]
                for loop in nested:
                    loop_body = loop.regions[0].blocks[0]
                    for inner in list(loop_body.ops):
                        if inner.name == "tt.load" and _dot_operand(inner):
                            _prefetch(inner, loop_body, axis, optimistic, loop, self.indirect)


_MAX_ADVANCES = 8  # steps in a chain of loop-carried advances (_uniform_carried)


def _defined_outside(loop: Operation, v: SSAValue) -> bool:
    return not loop.is_ancestor(v.block.parent_op() if isinstance(v, BlockArgument) else v.owner)


def _uniform_carried(loop: Operation) -> dict[BlockArgument, list[Operation]]:
    """The loop-carried scalars of `loop` that each iteration advances by values defined
    outside it (`arg + step`, `addptr(arg, step)`: uniform-loop-increments' offsets; a
    chain of such steps in a loop unroll-tile-dot-loops unrolled), each with the ops that
    compute its next value from it, in order."""
    body = loop.regions[0].blocks[0]
    out = {}
    for arg, y in zip(body.args[1:], body.last_op.operands):
        if isinstance(arg.type, TensorType):
            continue
        chain, v = [], y
        while v is not arg and len(chain) < _MAX_ADVANCES:
            op = v.owner
            if not isinstance(op, Operation) or op.name not in ("arith.addi", "tt.addptr"):
                break
            x, d = op.operands
            if op.name == "arith.addi" and _defined_outside(loop, x):
                x, d = d, x
            if not _defined_outside(loop, d):
                break
            chain.insert(0, op)
            v = x
        if v is arg and chain:
            out[arg] = chain
    return out


def _next_iteration(load: Operation, loop: Operation, mapping: dict, insert):
    """The slice of `load`'s address to clone for the next iteration of `loop`, with its
    induction variable's next value in `mapping` (at the last iteration of a loop whose
    address or lower bound depends on the program id, the next program's first iteration:
    its ids in `mapping` too); None, with nothing inserted, when the address is not
    recomputable or the same in every iteration."""
    iv = loop.regions[0].blocks[0].args[0]
    lb, ub, step = loop.operands[:3]
    ops = _Slice(iv).of(load.ptr)
    lb_ops = _Slice().of(lb)
    wrap = ops is not None and lb_ops is not None and any(op.name == "tt.get_program_id" for op in ops + lb_ops)
    if ops is None:
        # Only the next iteration: values outside the loop are the same there.
        ops = _Slice(iv, invariant_outside=loop).of(load.ptr)
    if not ops or not any(iv in op.operands for op in ops):
        return None  # not recomputable, or the same tile in every iteration
    nxt = insert(arith.AddiOp(iv, step))
    if wrap:
        # The last iteration prefetches the next program's first one: the same slice
        # with that program's ids and its loop's lower bound (itself recomputed).
        more = insert(arith.CmpiOp(nxt, ub, "slt"))
        this, npid = _program_ids(insert)
        for a in range(3):
            mapping["pid", a] = insert(arith.SelectOp(more, this[a], npid[a]))
        lb_map = {("pid", a): npid[a] for a in range(3)}
        _clone(lb_ops, lb_map, insert)
        nxt = insert(arith.SelectOp(more, nxt, lb_map.get(lb, lb)))
    mapping[iv] = nxt
    return ops


# The ops through which an address stays an affine function of a loop's induction variable
# (_iv_advance); arith.muli only by a constant.
_AFFINE_THROUGH = {"tt.splat", "tt.broadcast", "tt.expand_dims", "arith.extsi", "arith.extui",
                   "arith.index_cast", "arith.trunci"}


def _iv_advance(ptr: SSAValue, loop: Operation, axis: AxisInfoAnalysis) -> int | None:
    """How many bytes each address of the tile `ptr` moves from one iteration of `loop` to the
    next, when the addresses are the induction variable times a constant (every element's
    value known to `axis`) plus values that do not change in the loop, and the loop's step is
    a constant; else None."""
    iv = loop.regions[0].blocks[0].args[0]
    step = constant_int(loop.operands[2])
    memo = {}

    def coefficient(v: SSAValue) -> int | None:  # of iv in v, counted in v's own units
        if v is iv:
            return 1
        if _defined_outside(loop, v):
            return 0
        if v in memo:
            return memo[v]
        memo[v] = None  # a cycle (none in SSA, but a guard costs nothing)
        op = v.owner
        c = None
        if isinstance(v, BlockArgument):
            c = None  # loop-carried: not known
        elif op.name in ("arith.constant", "tt.make_range", "tt.get_program_id", "tt.get_num_programs"):
            c = 0
        elif op.name in _AFFINE_THROUGH:
            c = coefficient(op.operands[0])
        elif op.name in ("arith.addi", "arith.subi"):
            a, b = coefficient(op.operands[0]), coefficient(op.operands[1])
            if a is not None and b is not None:
                c = a + b if op.name == "arith.addi" else a - b
        elif op.name == "arith.muli":
            a, b = coefficient(op.operands[0]), coefficient(op.operands[1])
            ka, kb = axis.get(op.operands[0]).value, axis.get(op.operands[1]).value
            if a == 0 and b == 0:
                c = 0
            elif a is not None and kb is not None:
                c = a * kb
            elif b is not None and ka is not None:
                c = b * ka
        elif op.name == "tt.addptr":
            a, b = coefficient(op.operands[0]), coefficient(op.operands[1])
            if a is not None and b is not None:
                c = a + b  # in elements of the pointee, like the offset
        memo[v] = c
        return c

    c = coefficient(ptr)
    if c is None or step is None:
        return None
    return c * step * pointee_bytes(element_type(ptr.type))


def _next_dot_iteration(load: Operation, loop: Operation, mapping: dict, insert):
    """For a tile `load` that a tt.dot reads in `loop`: the slice of its address to clone
    for the next iteration, with the next values of the induction variable and of the
    loop-carried offsets it uses in `mapping` (no wrap into the next program); None, with
    nothing inserted, when the address is not recomputable or the same in every
    iteration. Values from outside the loop are used as they are."""
    iv = loop.regions[0].blocks[0].args[0]
    carried = _uniform_carried(loop)
    ops = _Slice(iv, invariant_outside=loop, carried=carried).of(load.ptr)
    if not ops:
        return None
    used = {a: advance for a, advance in carried.items() if any(a in op.operands for op in ops)}
    uses_iv = any(iv in op.operands for op in ops)
    if not used and not uses_iv:
        return None
    for arg, advance in used.items():
        _clone(advance, mapping, insert)
        mapping[arg] = mapping[advance[-1].results[0]]
    if uses_iv:
        mapping[iv] = insert(arith.AddiOp(iv, loop.operands[2]))
    return ops


def _same_lines(axis, ptr: SSAValue, done) -> bool:
    """Whether `ptr` is a pointer of `done` (pairs of a type and its split_offset) plus a
    constant offset under a line (Inductor's `x[2*i + 1]` next to `x[2*i]`): its prefetch
    would fetch the same lines again."""
    if not isinstance(ptr.type, TensorType):
        return False
    split = split_offset(axis, ptr)
    if split is None:
        return False
    size = pointee_bytes(element_type(ptr.type))
    return any(t == ptr.type and other is not None and other[0] == split[0] and
               abs(other[1] - split[1]) * size < LINE_BYTES for t, other in done)


def _worth_it(load: Operation, axis) -> bool:
    ptr = load.ptr
    if not isinstance(ptr.type, TensorType) or is_volatile(load):
        return False
    return prefetch_step(axis, ptr) is not None


def _prefetch(load: Operation, block: Block, axis, optimistic, loop: Operation | None, indirect: bool) -> bool:
    """Inserts the prefetch of `load`'s next instance; whether it did."""
    anchor = _anchor(load)
    spread = anchor is not None and anchor[2]
    if spread and loop is None:
        anchor, spread = None, False  # a dot in the function body: as if nothing read the tile
    if anchor is None and loop is not None:
        return False
    # A dot operand's lanes may be contiguous only by the analysis' assumption (the
    # tutorial matmul's `rn % N`, which the conversion checks at run time): for a hint,
    # the assumption is enough.
    if not _worth_it(load, optimistic if spread else axis):
        return False
    new_ops = []

    def insert(op):
        new_ops.append(op)
        return op.results[0] if op.results else None

    mapping = {}
    if loop is None:
        sl = _Slice(loads=indirect)
        ops = sl.of(load.ptr)
        if not ops:
            return False
        if anchor is None:
            if not sl.has_load:
                return False  # an elementwise stream: the hardware prefetcher follows it
            anchor = (load, False, False)  # a gather: nothing follows its rows
        for a, pid in enumerate(_program_ids(insert)[1]):
            mapping["pid", a] = pid
    else:
        advance = None if spread else _iv_advance(load.ptr, loop, axis)
        if advance is not None and abs(advance) <= LINE_BYTES:
            return False  # a stream a line or less per iteration: see the module docstring
        ops = (_next_dot_iteration if spread else _next_iteration)(load, loop, mapping, insert)
        if ops is None:
            return False
    _clone(ops, mapping, insert)
    new_ops.append(tcpu.PrefetchOp(mapping[load.ptr], spread=spread))
    at, before, _ = anchor
    if before:
        block.insert_ops_before(new_ops, at)
    else:
        block.insert_ops_after(new_ops, at)
    return True
