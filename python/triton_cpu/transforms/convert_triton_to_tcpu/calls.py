"""Calls to `noinline` functions.

A call with scalar arguments and results stays a call: the code generator emits it
(the callee also receives the caller's program ids). A call that returns tensors (stock
Triton allows that; tensor arguments it rejects) is inlined before the lowering, since
tensors live in the caller's loop nests and buffers: `noinline` is a code-size hint, so
inlining keeps the meaning. Only single-block callees are inlined; a callee with early
returns that returns tensors is reported as unsupported.
"""
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation

from triton_cpu.errors import UnsupportedError

from .util import is_tensor


def inline_tensor_calls(module: ModuleOp):
    funcs = {o.properties["sym_name"].data: o for o in module.body.block.ops if o.name == "tt.func"}
    changed = True
    while changed:  # a callee may itself call tensor-returning functions
        changed = False
        for call in [o for o in module.walk() if o.name == "tt.call" and any(is_tensor(r) for r in o.results)]:
            callee = funcs[call.properties["callee"].root_reference.data]
            _inline(call, callee)
            changed = True
    # Callees left without callers (all their calls inlined) go.
    called = {o.properties["callee"].root_reference.data for o in module.walk() if o.name == "tt.call"}
    for name, f in funcs.items():
        vis = f.properties.get("sym_visibility")
        if name not in called and vis is not None and vis.data == "private" \
                and any(isinstance(t, TensorType) for t in f.properties["function_type"].outputs.data):
            f.detach()
            f.erase()


def _inline(call: Operation, callee: Operation):
    blocks = list(callee.regions[0].blocks)
    if len(blocks) != 1:
        caller = call
        while caller.name != "tt.func":
            caller = caller.parent_op()
        raise UnsupportedError.at(call, caller.properties["sym_name"].data,
                                  "a noinline function with early returns that returns a tensor")
    body = blocks[0]
    mapper = dict(zip(body.args, call.operands))
    for op in body.ops:
        if op is body.last_op:  # tt.return
            for r, v in zip(call.results, op.operands):
                r.replace_all_uses_with(mapper.get(v, v))
            break
        call.parent_block().insert_op_before(op.clone(value_mapper=mapper), call)
    call.detach()
    call.erase()
