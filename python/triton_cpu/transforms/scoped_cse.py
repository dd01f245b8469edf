"""scoped-cse: common subexpression elimination of side-effect-free ops, in one walk.

The conversion emits the same constant, index cast or splat once per chunk or per loop
nest (about a third of a softmax kernel's ops, 338 -> 219), and leaves them to be merged.
xDSL's `cse` pass does that at ~100 us per op (tutorial 02's softmax: 14-24 ms of a
~250 ms compile, more than printing the module), hashing every op through its generic
operation wrapper and handling read-only ops between writes. This pass merges only ops
without memory effects and without regions, which is what the conversion duplicates
(a load read twice is left to LLVM's GVN, which knows about aliasing):

  * an op is keyed by its name, operands, result types, properties and attributes (xDSL's
    attribute equality: -0.0 and 0.0 differ, as in `cse`);
  * a block's ops are visited in order, each block with a table layered over those of the
    blocks enclosing it (an op found there precedes the region, so it dominates the block);
    the blocks of one region do not see each other's (no dominance between them assumed);
  * a repeated op's results are replaced by the first one's, and the op is erased.
"""
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free


def _key(op: Operation):
    """An identity of what `op` computes (hashable unless an attribute is not), or None
    when it cannot be merged."""
    if op.regions or not op.results or op.successors or not is_side_effect_free(op):
        return None
    return (op.name, tuple(op.operands), tuple(r.type for r in op.results),
            tuple(sorted(op.properties.items())), tuple(sorted(op.attributes.items())))


def _cse_block(block: Block, outer: list[dict]):
    seen: dict = {}
    scopes = outer + [seen]
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                _cse_block(inner, scopes)
        key = _key(op)
        if key is None:
            continue
        try:
            first = next((s[key] for s in reversed(scopes) if key in s), None)
        except TypeError:  # an attribute without a hash: keep the op
            continue
        if first is None:
            seen[key] = op
            continue
        Rewriter.replace_op(op, [], first.results)


@dataclass(frozen=True)
class ScopedCSE(ModulePass):
    name = "scoped-cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for region in op.regions:
            for block in region.blocks:
                _cse_block(block, [])
