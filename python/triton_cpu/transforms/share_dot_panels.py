"""share-dot-panels: marks the dots whose packed B operand later programs of the same
launch may reuse, with the scalars that determine it (`tcpu.panel_key`, right before the dot).

Runs on TTIR when the kernel may use AMX tiles or vdpbf16ps, last before
convert-triton-to-tcpu. Such a dot packs its B operand in every program: into the AMX
tiles' layout (pairs of bf16, quads of int8 along K; convert_triton_to_tcpu/dot.py,
tile_kernel), or as the i32 pairs of bf16 that vdpbf16ps reads (dot.pack_column_pairs).
In a grouped matmul
(tutorial 03, GROUP_M = 8) consecutive programs read the same columns of B, and the
launcher gives each thread a contiguous run of programs: the same panels were packed by
the program before. The conversion keeps a marked dot's packed B in the thread's panel
cache (tcpu.panel_cache, runtime.c: tcpu_panel_cache), tagged with the key's values, and a
later program of the same launch whose key matches reads it instead of packing again.

The key: walking back from B through the ops that compute it (its tt.load's pointers,
mask and `other`, any pure tensor op), the first scalar reached on each path that is not
launch-invariant (a function of the arguments and constants only) is a key element: for
tutorial 03 the column offset `tile_n * BLOCK_N`, the loop-carried offset of B's pointers
(uniform-loop-increments made it a scalar) and the K bound of the mask. Two programs with
equal keys compute equal pointers, masks and `other`; B's memory holds the same values
for both because nothing the program writes can come before the dot (below) and a write
by another program in the same launch is a race on a GPU too.

Which dots: 2-D ones that run on AMX tiles (dot.tile_kind) or, with `bf16_dot`, any bf16 x
bf16 -> fp32 one (the conversion drops the mark where the dot does not run on vdpbf16ps
after all: dot._bf16_pairs), whose B's computation
reaches no tensor block argument, no op with regions or memory effects other than a
non-volatile tt.load, and at most _MAX_KEYS key scalars (integers or pointers), in a
function of one block whose memory writes (stores, atomics, calls; tt.print and
tt.assert declare writes too) all come after the top-level op holding the dot: a program
must see its own writes, and a lock taken before the K loop would mean programs talk to
each other. (A dot directly in an scf.for takes that loop's iteration number as its cache
slot: shared_panels.py.)

Measured (2-core Intel Xeon with AMX, tutorial 03's kernel, bf16, 128 x 256 x 64,
GROUP_M = 8, after do_bench's cache flush, one process alternating with the same kernel
unmarked): see benchmarks/RESULTS.md, "Shared B panels". vdpbf16ps on a Zen 5, the same
kernel at 1024^3, 2 threads, one process, 5 rounds: 128 x 256 x 64 2.64 -> 2.53 ms, 128 x
128 x 64 2.68 -> 2.59, 64 x 256 x 64 2.72 -> 2.56 (torch's bf16 matmul 2.51 ms); a C loop
of the micro-kernel with and without B's packing had put it at 5% of the time.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float32Type, IntegerType, ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import MemoryEffectKind, get_effects, has_effects

from triton_cpu.analysis.axis_info import element_type, shape_of
from triton_cpu.dialects import tcpu
from triton_cpu.dialects.tt import PointerType
from triton_cpu.transforms.convert_triton_to_tcpu.dot import tile_kind

_MAX_KEYS = 7  # a tag is 8 i64: a state and the keys (dot.py, _PanelCache)


def _is_tensor(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType)


def _pure(op: Operation) -> bool:
    """No regions and no memory effects (get_effects: an empty set)."""
    effects = get_effects(op)
    return not op.regions and effects is not None and not effects


class _Keys:
    """The key scalars of one function's values (memoized walks)."""

    def __init__(self, func: Operation):
        self.entry = func.regions[0].blocks[0]
        self.invariant_memo: dict[SSAValue, bool] = {}

    def invariant(self, v: SSAValue) -> bool:
        """`v` is a function of the kernel's arguments and constants alone."""
        memo = self.invariant_memo
        stack = [v]
        while stack:  # iterative: scalar chains can be long
            x = stack[-1]
            if x in memo:
                stack.pop()
                continue
            if isinstance(x, BlockArgument):
                memo[x] = x.block is self.entry
                stack.pop()
                continue
            op = x.owner
            if op.name == "tt.get_program_id" or not (_pure(op) or op.name == "tt.get_num_programs"):
                memo[x] = False
                stack.pop()
                continue
            pending = [o for o in op.operands if o not in memo]
            if pending:
                stack.extend(pending)
                continue
            memo[x] = all(memo[o] for o in op.operands)
            stack.pop()
        return memo[v]

    def of(self, value: SSAValue) -> list[SSAValue] | None:
        """The key scalars that determine tensor `value`, in a stable order; None when it
        depends on something a key cannot hold."""
        keys: list[SSAValue] = []
        seen: set[SSAValue] = set()
        stack = [value]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if not _is_tensor(v):
                if self.invariant(v):
                    continue
                t = v.type
                if not isinstance(t, (IntegerType, PointerType)):
                    return None
                keys.append(v)
                continue
            if isinstance(v, BlockArgument):
                return None  # a tensor carried by a loop: its value is not one of the key's
            op = v.owner
            if op.name == "tt.load":
                if op.isVolatile.value.data:
                    return None
            elif not _pure(op):
                return None
            stack.extend(reversed(op.operands))
        return keys if len(keys) <= _MAX_KEYS else None


def _top_level(op: Operation, body: Block) -> Operation:
    while op.parent is not body:
        op = op.parent_op()
    return op


def _writes_after(func: Operation, dot: Operation) -> bool:
    """Every op of `func` that may write memory comes after the top-level op holding `dot`
    (a function of one block: with branches between blocks, program order is not the
    order of the ops)."""
    blocks = func.regions[0].blocks
    if len(blocks) != 1:
        return False
    body = blocks[0]
    top = _top_level(dot, body)
    seen_top = False
    for o in body.ops:
        if o is top:
            seen_top = True
        writes = [x for x in o.walk() if x.name == "tt.call" or
                  (not x.regions and has_effects(x, MemoryEffectKind.WRITE))]
        if writes and (not seen_top or o is top):
            return False
    return True


def mark(func: Operation, amx: bool, amx_int8: bool, bf16_dot: bool = False) -> int:
    """Inserts a tcpu.panel_key before each dot of `func` whose packed B may be shared;
    returns how many."""
    keys = _Keys(func)
    marked = 0
    for dot in [o for o in func.walk() if o.name == "tt.dot"]:
        a, b, _ = dot.operands
        out_shape = shape_of(dot.results[0])
        elems = element_type(a.type), element_type(b.type), element_type(dot.results[0].type)
        if len(out_shape) != 2:
            continue
        on_tiles = tile_kind(*elems, out_shape, shape_of(a)[-1], amx, amx_int8) is not None
        # vdpbf16ps: the conversion decides (dot._bf16_pairs) and drops the mark otherwise
        if not on_tiles and not (bf16_dot and elems == (BFloat16Type(), BFloat16Type(), Float32Type())):
            continue
        k = keys.of(b)
        if k is None or not _writes_after(func, dot):
            continue
        dot.parent_block().insert_op_before(tcpu.PanelKeyOp(k), dot)
        marked += 1
    return marked


@dataclass(frozen=True)
class ShareDotPanels(ModulePass):
    name = "share-dot-panels"

    amx: bool = True
    amx_int8: bool = False
    bf16_dot: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [o for o in op.ops if o.name == "tt.func"]:
            mark(func, self.amx, self.amx_int8, self.bf16_dot)
