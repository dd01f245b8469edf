"""convert-triton-to-tcpu: lowers TTIR tensors to loop nests over native SIMD vectors.

Where each construct lives:

  core.py          fusion and materialization: evaluating a tensor value at loop
                   indices (splat, make_range, constants, loads, elementwise ops),
                   buffers, the policy of what is computed once, tensor stores
  store_groups.py  adjacent tile stores in one loop nest behind a run-time overlap check
  shape_ops.py     expand_dims, broadcast, trans, reshape, join, split, cat, gather, unsplat
  reductions.py    tt.reduce, tt.scan, tt.histogram (combine regions inlined)
  dot.py           tt.dot, tt.dot_scaled (register-blocked micro-kernel)
  map_elementwise.py  tt.map_elementwise (the user's scalar region per element)
  control_flow.py  scf.for / scf.while / scf.if carrying tensors
  calls.py         noinline calls returning tensors (inlined first)
  atomics.py       tt.atomic_rmw, tt.atomic_cas, tt.atomic_poll
  debug_ops.py     tt.print, tt.assert
  hints.py         ttg.barrier (nothing to compute on a CPU), tcpu.prefetch on tiles

This module walks each function in program order and calls the lowering registered
for each op (`LOWERINGS`); scalar `tt` ops become their `tcpu` counterparts and
`tt.func` becomes `func.func`. Anything that still holds a tensor afterwards raises
`UnsupportedError` naming the op, the kernel and the source line.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.traits import MemoryEffectKind, has_effects

from triton_cpu.analysis.axis_info import attr

from . import (atomics, calls, control_flow, debug_ops, dot, hints, map_elementwise, reductions, shape_ops,
               store_groups, write_guards)
from .core import Config, FuncLowering
from .util import is_tensor

# op name -> f(lowering, op). A lowering erases its op, or leaves it: a tensor op whose
# results are now in buffers is erased by the dead-code sweep once its users are gone; a
# scalar op left in place is for the code generator.
LOWERINGS = {
    "tt.store": FuncLowering.lower_store,
    "tt.reduce": reductions.lower_reduce,
    "tt.scan": reductions.lower_scan,
    "tt.histogram": reductions.lower_histogram,
    "tt.dot": dot.lower_dot,
    "tt.dot_scaled": dot.lower_dot_scaled,
    "tt.gather": shape_ops.prepare_gather,
    "tt.unsplat": shape_ops.lower_unsplat,
    "tt.map_elementwise": map_elementwise.lower_map_elementwise,
    "tt.atomic_rmw": atomics.lower_atomic,
    "tt.atomic_cas": atomics.lower_atomic,
    "tt.atomic_poll": atomics.lower_poll,
    "tt.print": debug_ops.lower_print,
    "tt.assert": debug_ops.lower_assert,
    "ttg.barrier": hints.drop,
    "tcpu.prefetch": hints.lower_prefetch,
    "scf.for": control_flow.lower_for,
    "scf.while": control_flow.lower_while,
    "scf.if": control_flow.lower_if,
    "scf.condition": control_flow.lower_condition,
    "scf.yield": control_flow.lower_yield,
}


def lower_function(f: Operation, config: Config):
    for blk in f.regions[0].blocks:
        store_groups.gather(blk)
    low = FuncLowering(f, config)
    ops = [op for blk in f.regions[0].blocks for op in low.ops_in_order(blk)]
    for blk in list(f.regions[0].blocks)[1:]:
        if any(is_tensor(a) for a in blk.args):
            raise low.unsupported(blk.first_op, "a tensor passed between blocks (cf.br)")
    # Analyse before rewriting: the analysis reads the TTIR producers.
    for op in ops:
        if op.name in ("tt.store", "tt.load"):
            low.axis.get(op.operands[0])
    low.panel_keys = {op.next_op: op for op in ops if op.name == "tcpu.panel_key"}
    to_materialize = low.materialization_plan(ops)
    tensor_ops = []  # erased once dead; any left alive is unsupported
    for op in ops:
        with low.at(op):
            _lower_op(low, op, to_materialize, tensor_ops)
    for mark in low.panel_keys.values():  # dots not lowered as tile kernels
        mark.detach()
        mark.erase()
    for op in low.loops_to_strip:
        control_flow.strip_yields(op)
    # Fused producers are dead now. Until nothing changes: a loop's tensor inits die only
    # once the loop is rebuilt without them, and they may be an earlier loop's results.
    _erase_dead(low, tensor_ops)
    pending = list(low.loops_to_strip)
    while True:
        ready = [op for op in pending if all(not r.uses for r in op.results if is_tensor(r))]
        if not ready:
            break
        for op in reversed(ready):  # inner loops first: their inits may be outer block arguments
            control_flow.strip_tensors(op)
            pending.remove(op)
        _erase_dead(low, tensor_ops)
    live = [op for op in tensor_ops if op.parent is not None]
    if live:
        # Name the op that keeps the others alive: it consumes tensors without being
        # lowered (a tensor yield, an unknown op, ...), not its first producer.
        live_set = set(live)
        culprits = [op for op in live
                    if not any(is_tensor(r) for r in op.results)
                    or any(u.operation not in live_set for r in op.results for u in r.uses)]
        op = (culprits or live)[0]
        raise low.unsupported(op, f"operation '{op.name}' on tensors")
    _to_func(f, low.kernel)


def _lower_op(low, op, to_materialize, tensor_ops):
    if op in low.grouped_done:
        return  # lowered with its group's first store (store_groups)
    name = op.name
    if op.next_op is None and low.pending_prefetches:  # a block's terminator
        hints.flush_prefetches(low, low.emitter_before(op))
    for r in op.results:
        if r in to_materialize and op.next_op is not None:
            low.materialize_at_definition(op, r)
        elif r in low.guarded and op.next_op is not None:
            write_guards.at_definition(low, op, r)
    lower = LOWERINGS.get(name)
    if lower is not None:
        lower(low, op)
    if op.parent is None or name.startswith("scf."):
        return
    if any(is_tensor(r) for r in op.results) or any(is_tensor(o) for o in op.operands):
        tensor_ops.append(op)
    elif name.startswith("tt.") and name not in ("tt.return", "tt.func", "tt.call"):
        low.lower_scalar(op)


def _erase_dead(low, ops):
    """Erases unused fused producers. An op that writes memory (an atomic, a descriptor
    store, ...) is dropped only once lowered: otherwise it stays alive and is reported."""
    for op in reversed(ops):
        if op.parent is not None and all(not r.uses for r in op.results) \
                and (op in low.lowered_effects or not has_effects(op, MemoryEffectKind.WRITE)):
            op.detach()
            op.erase()


def _to_func(f: Operation, kernel: str):
    region = f.regions[0]
    f.detach_region(region)
    vis = attr(f, "sym_visibility")
    new = func.FuncOp(kernel, attr(f, "function_type"), region, vis.data if vis else None,
                      arg_attrs=attr(f, "arg_attrs"))
    new.location = f.location  # the kernel's `def` line: its DWARF subprogram
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
    bf16_dot: bool = False
    amx: bool = False
    amx_int8: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        config = Config(vector_bits=self.vector_bits, bf16_dot=self.bf16_dot, amx=self.amx, amx_int8=self.amx_int8)
        calls.inline_tensor_calls(op)
        # Until none is left: lowering a function may outline new ones (map_elementwise).
        while funcs := [o for o in op.body.block.ops if o.name == "tt.func"]:
            for f in funcs:
                lower_function(f, config)
