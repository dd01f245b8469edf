"""unroll-tile-dot-loops: a loop whose dot runs on AMX tiles over a short K is unrolled, so
that the dots of consecutive iterations form a chain the conversion runs as one tile
kernel.

Runs on TTIR when the kernel may use AMX tiles, after uniform-loop-increments and before
prefetch-next-program. A matmul's K loop carries its accumulator through one tt.dot per
iteration; on AMX each dot loads every 16 x 16 block of C into the tile registers and
stores it back (convert_triton_to_tcpu/dot.py, tile_kernel), and with BLOCK_K = 64 bf16
(two tile products per block of C) that round trip of C through the L1 costs as much as
the products. Unrolled by U, the loop body holds U dots, each reading the
one before; the conversion lowers such a chain as one tile kernel over U * BLOCK_K
(`dot._chained_next`), C's round trip taken once. The sums are the same in the same
order (each tile of C takes the products of K in order either way).

    %r = scf.for %k = %lb to %ub step %s iter_args(%acc = %c0, ...) {
      ... %d = tt.dot %a, %b, %acc ... scf.yield %d, ...
    }
  =>
    %n = (max(ub - lb, 0) + s - 1) / s                       (i64: the trip count)
    %mid = min(lb + (n / U) * U * s, ub)
    %m = scf.for %k = %lb to %mid step U*s iter_args(...) {
      body(%k); body(%k + s); ...; body(%k + (U-1)*s)  (each on the values the one before yields)
    }
    %r = scf.for %k = %mid to %ub step %s iter_args(%m...) { body }   (the remaining iterations)

Which loops: an scf.for with a constant positive step and signed bounds of an integer
type, at most _MAX_BODY_OPS ops, holding (directly in its body) a tt.dot whose C0 is a
block argument read by that dot alone and whose result only goes to that argument's
yield, accumulated in its own type (fp32 for bf16, i32 for int8: a rounding after each
dot must not become one after the chain) and eligible for AMX tiles (dot.tile_kind).
U = the number of iterations that make a chain's A rows _CHAIN_ROW_BYTES long, at most
as many as keep the chain's A buffers within _CHAIN_A_BYTES (the L1); no unroll below 2.

Measured (2-core Intel Xeon with AMX, tutorial 03's kernel, bf16 1024^3, 128 x 256 blocks):
before this pass, BLOCK_K = 128 took 1.81-1.92 ms against 2.05-2.18 ms for 64 after a
256 MiB cache flush, 1.37-1.51 against 1.73-1.84 warm; 256 was slower again (2.25-2.36 ms:
its 64 KiB A buffer out of the L1), 32 much slower (2.89-3.10). With it, against the same
kernel with a store between its iterations (no chain), one process, ratios pair by pair:
1.22x warm, neutral after a 960 MiB flush, where the misses on the operands dominate; 32
runs as fast as 128. int8, 128 x 256 x 64: 1.69-1.75 -> 1.09-1.14 ms warm (benchmarks/
RESULTS.md).
"""
from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, i64
from xdsl.ir import Block, BlockArgument
from xdsl.passes import ModulePass

from triton_cpu.analysis.axis_info import element_type, shape_of
from triton_cpu.analysis.loops import constant_int
from triton_cpu.dialects.compat import arith
from triton_cpu.transforms.convert_triton_to_tcpu.dot import INT8_TILES, tile_kind
from triton_cpu.transforms.loop_rewrites import InsertBefore, copy_iteration

_CHAIN_ROW_BYTES = 256
_CHAIN_A_BYTES = 32 * 1024
_MAX_BODY_OPS = 300


def unroll_factor(loop: scf.ForOp, amx: bool, amx_int8: bool) -> int:
    """How many iterations of `loop` one chain of tile dots should cover (1: not unrolled)."""
    step = constant_int(loop.operands[2])
    if step is None or step <= 0 or not isinstance(loop.operands[0].type, IntegerType):
        return 1
    if "unsignedCmp" in loop.attributes or "unsignedCmp" in loop.properties:
        return 1
    body = loop.body.block
    if sum(1 for _ in body.walk()) > _MAX_BODY_OPS:
        return 1
    yielded = body.last_op.operands
    for d in body.ops:
        if d.name != "tt.dot":
            continue
        a, b, c0 = d.operands
        if not (isinstance(c0, BlockArgument) and c0.block is body and c0.index >= 1):
            continue
        if yielded[c0.index - 1] is not d.results[0] or len(list(c0.uses)) != 1 or len(list(d.results[0].uses)) != 1:
            continue
        out_shape = shape_of(d.results[0])
        K = shape_of(a)[-1]
        kind = tile_kind(element_type(a.type), element_type(b.type), element_type(d.results[0].type), out_shape,
                         K, amx, amx_int8)
        if kind is None:
            continue
        elem_bytes = 1 if kind is INT8_TILES else 2
        row_bytes = K * elem_bytes
        a_bytes = prod(shape_of(a)) * elem_bytes
        return max(1, min(_CHAIN_ROW_BYTES // row_bytes, _CHAIN_A_BYTES // a_bytes))
    return 1


def unroll(loop: scf.ForOp, factor: int) -> None:
    """Rewrites `loop` as a loop over groups of `factor` iterations, each group the body
    copied `factor` times, then `loop` itself over the iterations left."""
    lb, ub, step_v = loop.operands[:3]
    step = constant_int(step_v)
    t = lb.type
    b = InsertBefore(loop)

    def wide(v):
        return v if t == i64 else b.emit(arith.ExtSIOp(v, i64))
    lb64, ub64 = wide(lb), wide(ub)
    trips = b.emit(arith.MaxSIOp(b.emit(arith.SubiOp(ub64, lb64)), b.const(0, i64)))
    if step > 1:
        trips = b.emit(arith.DivSIOp(b.emit(arith.AddiOp(trips, b.const(step - 1, i64))), b.const(step, i64)))
    groups = b.emit(arith.DivSIOp(trips, b.const(factor, i64)))
    mid = b.emit(arith.AddiOp(lb64, b.emit(arith.MuliOp(groups, b.const(factor * step, i64)))))
    mid = b.emit(arith.MinSIOp(mid, ub64))  # lb + groups * factor * step may pass ub by < step
    if t != i64:
        mid = b.emit(arith.TruncIOp(mid, t))

    body = loop.body.block
    new_body = Block(arg_types=[a.type for a in body.args])
    iv, carried = new_body.args[0], list(new_body.args[1:])
    for u in range(factor):
        if u:
            c = arith.ConstantOp(IntegerAttr(u * step, t))
            add = arith.AddiOp(new_body.args[0], c.result)
            new_body.add_ops([c, add])
            iv = add.result
        carried = copy_iteration(body, iv, carried, new_body)
    new_body.add_op(scf.YieldOp(*carried))
    main = scf.ForOp(lb, mid, b.const(factor * step, t), list(loop.operands[3:]), new_body)
    main.attributes.update(loop.attributes)  # loop hints (tt.num_stages, ...)
    b.block.insert_op_before(main, loop)
    loop.operands = (mid, ub, step_v, *main.results)


@dataclass(frozen=True)
class UnrollTileDotLoops(ModulePass):
    name = "unroll-tile-dot-loops"

    amx: bool = True
    amx_int8: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if isinstance(o, scf.ForOp)]:
            factor = unroll_factor(loop, self.amx, self.amx_int8)
            if factor > 1:
                unroll(loop, factor)
