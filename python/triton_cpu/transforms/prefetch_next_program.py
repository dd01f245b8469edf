"""prefetch-next-program: a row-wise kernel's load also prefetches the row the same load
will read next, so that its memory arrives while this program computes.

Runs on TTIR, before convert-triton-to-tcpu. A kernel that handles one row (or block of
rows) per program, like a softmax, a layer norm or a cross-entropy, reads its row from
DRAM in a first pass (a reduction) and then computes on it from L1: the hardware
prefetchers do not cross the 4 KB page that starts each new row, so every program begins
with a row of cache misses, and the compute between them overlaps with nothing. Here the
load's address computation is cloned for the next instance of the same load and fed to
`tcpu.prefetch`, which the conversion lowers to one prefetch per 64-byte line:

  * a load in the function body: the next program in launch order (launcher.c runs
    neighbouring linear program ids on one thread, axis 0 fastest, wrapping into 1, 2);
  * a load in a top-level `scf.for` whose address depends on the induction variable: the
    next iteration; at the last iteration, when the address or the loop's lower bound
    depends on the program id (a persistent loop over rows), the next program's first
    iteration; otherwise past the end (a wasted hint: a prefetch never faults).

The prefetch goes right after the first reduction of the loaded tile, whose pass has then
issued its own misses, so the next row streams in behind them; in a loop that accumulates
the tile into a loop-carried value instead (`acc += x` over the blocks of a row, reduced
after the loop: upstream's layer norm), at the end of the iteration.

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

Which loads: those read by a tt.reduce / tt.scan in their block, or accumulated by their
loop, and not by a tt.dot first; and gathers (Inductor's gather/index model,
bench_inductor.py, Zen 3: 0.55 -> 0.43 ms back to back, 1.07-1.22 -> 0.70-0.81 ms after a
cache flush, as fast as Inductor's C++). Upstream's layer norm forward (its loop form, after
peel-accumulator-loops, which runs next and copies the prefetch into the first iteration it
moves out): 1.40 -> 1.14 ms after a cache flush, 0.96 -> 0.88 ms back to back.
Measured on Zen 3, 2 threads, 4096x1024 fp32 after a cache flush: softmax (tutorial 02)
+9%, layer norm forward (05) +12%; an elementwise stream (vector add) is 16% slower with a
prefetch (the hardware prefetcher already follows it), and attention (06) ~20% slower
with its K tile prefetched (a 16 KB tile that sits in L2 for reuse, pulled into a 32 KB
L1). The address must be recomputable: its backward slice holds nothing but pure integer
and pointer arithmetic (arith, splat, broadcast, make_range, expand_dims, addptr,
program ids), kernel arguments and, in a loop, the induction variable (and values from
outside the loop, when only the next iteration is prefetched). A loop-carried pointer, an
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
                 loads: bool = False):
        # `invariant_outside`: a loop; values defined outside it by ops that cannot be
        # recomputed (a scalar load) count as invariant, as they are within one program.
        # `loads`: a tt.load whose own address is recomputable without loads may be in the
        # slice (an index load, one level deep).
        self.iv, self.loop, self.loads = iv, invariant_outside, loads
        self.has_load = False

    def of(self, value: SSAValue) -> list[Operation] | None:
        """The slice, [] when `value` does not depend on a root, None when a value on the
        way cannot be recomputed."""
        ops: dict[Operation, None] = {}  # in program order, each once (an ordered set)
        depends = {}

        def outside(v: SSAValue) -> bool:
            return self.loop is not None and not self.loop.is_ancestor(
                v.block.parent_op() if isinstance(v, BlockArgument) else v.owner)

        def visit(v: SSAValue):  # whether v depends on a root (None: not recomputable)
            if v in depends:
                return depends[v]
            if isinstance(v, BlockArgument):
                owner = v.block.parent_op()
                # Kernel arguments are the same in every program; any other block argument
                # (a loop-carried value) is not known for the next instance.
                d = True if v is self.iv else False if owner is not None and owner.name == "tt.func" \
                    else False if outside(v) else None
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


def _anchor(load: Operation) -> tuple[Operation, bool] | None:
    """Where the prefetch goes, as (op, before): after the first tt.reduce / tt.scan after
    `load` in its block that reads the loaded tile (through elementwise ops and the like);
    in a loop body without one, before the scf.yield when the tile feeds a loop-carried
    value (an accumulation over blocks of a row, `acc += x`, reduced after the loop: the
    layer norm of upstream's tutorial 05). None when a tt.dot reads the tile first (a
    matmul's K loop), or nothing accumulates or reduces it."""
    tainted = set(load.results)
    op = load.next_op
    while op is not None:
        if any(o in tainted for o in op.operands):
            if op.name in ("tt.reduce", "tt.scan"):
                return op, False
            if op.name in ("tt.dot", "tt.dot_scaled"):
                return None
            if op.name == "scf.yield":
                return op, True
            tainted.update(op.results)
        op = op.next_op
    return None


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
            body = f.regions[0].blocks[0]
            done = []  # (pointer type, split_offset) of the loads prefetched so far
            for op in list(body.ops):
                if op.name == "tt.load" and not _same_lines(axis, op.ptr, done):
                    if _prefetch(op, body, axis, None, self.indirect):
                        done.append((op.ptr.type, split_offset(axis, op.ptr)))
                elif op.name == "scf.for":
                    loop_body = op.regions[0].blocks[0]
                    for inner in list(loop_body.ops):
                        if inner.name == "tt.load" and not _same_lines(axis, inner.ptr, done):
                            if _prefetch(inner, loop_body, axis, op, self.indirect):
                                done.append((inner.ptr.type, split_offset(axis, inner.ptr)))


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


def _prefetch(load: Operation, block: Block, axis, loop: Operation | None, indirect: bool) -> bool:
    """Inserts the prefetch of `load`'s next instance; whether it did."""
    anchor = _anchor(load)
    if (anchor is None and loop is not None) or not _worth_it(load, axis):
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
            anchor = (load, False)  # a gather: nothing follows its rows
        for a, pid in enumerate(_program_ids(insert)[1]):
            mapping["pid", a] = pid
    else:
        iv = loop.regions[0].blocks[0].args[0]
        lb, ub, step = loop.operands[:3]
        ops = _Slice(iv).of(load.ptr)
        lb_ops = _Slice().of(lb)
        wrap = ops is not None and lb_ops is not None and any(op.name == "tt.get_program_id" for op in ops + lb_ops)
        if ops is None:
            # Only the next iteration: values outside the loop are the same there.
            ops = _Slice(iv, invariant_outside=loop).of(load.ptr)
        if not ops or not any(iv in op.operands for op in ops):
            return False  # not recomputable, or the same tile in every iteration
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
    _clone(ops, mapping, insert)
    new_ops.append(tcpu.PrefetchOp(mapping[load.ptr]))
    at, before = anchor
    if before:
        block.insert_ops_before(new_ops, at)
    else:
        block.insert_ops_after(new_ops, at)
    return True
