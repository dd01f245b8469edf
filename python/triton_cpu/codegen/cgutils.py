"""Small llvmlite builder helpers, so that lowerings read like the code they generate."""
import llvmlite.ir as ir

class BFloatType(ir.Type):
    """LLVM's `bfloat` (llvmlite has no such type): only the operands of bf16 intrinsics
    (vdpbf16ps) use it; bf16 values otherwise live in registers as f32."""

    def _to_string(self):
        return "bfloat"

    def __eq__(self, other):
        return isinstance(other, BFloatType)

    def __hash__(self):
        return hash("bfloat")


I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
BF16 = BFloatType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


def lanes(t: ir.Type) -> int:
    return t.count if isinstance(t, ir.VectorType) else 1


def scalar_of(t: ir.Type) -> ir.Type:
    return t.element if isinstance(t, ir.VectorType) else t


def with_scalar(t: ir.Type, elem: ir.Type) -> ir.Type:
    return ir.VectorType(elem, t.count) if isinstance(t, ir.VectorType) else elem


class Literal(ir.Constant):
    """A constant printed as the LLVM text it is given. llvmlite prints a vector constant
    lane by lane (`<float 1.0, float 1.0, ...>`, each lane through struct pack/unpack);
    `splat (float 1.0)` and `undef` say the same in one word. The 10-op benchmark kernel's
    LLVM IR emission: 7.0-9.3 -> 5.6-6.1 ms (best of 25, Zen 3 VM)."""

    def __init__(self, t: ir.Type, text: str):
        self.type = t
        self.constant = text

    def _get_reference(self):
        return self.constant


def splat_const(t: ir.VectorType, elem: ir.Constant) -> ir.Constant:
    """A vector constant with the scalar constant `elem` in every lane."""
    return Literal(t, f"splat ({elem})")


def undef(t: ir.Type) -> ir.Constant:
    return Literal(t, "undef")


def const(t: ir.Type, value) -> ir.Constant:
    """A scalar constant, or a splat of it for a vector type."""
    if isinstance(t, ir.VectorType):
        return splat_const(t, ir.Constant(t.element, value))
    return ir.Constant(t, value)


def declare(module: ir.Module, name: str, ret: ir.Type, args, attrs=()) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
        for a in attrs:
            fn.attributes.add(a)
    return fn


def intrinsic_name(base: str, *types: ir.Type) -> str:
    def mangle(t):
        if isinstance(t, ir.VectorType):
            return f"v{t.count}{mangle(t.element)}"
        if isinstance(t, ir.PointerType):
            return "p0"
        if isinstance(t, ir.IntType):
            return f"i{t.width}"
        return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]
    return ".".join([base] + [mangle(t) for t in types])


def call_intrinsic(builder: ir.IRBuilder, base: str, overload, ret: ir.Type, args):
    name = intrinsic_name(base, *overload)
    fn = declare(builder.module, name, ret, [a.type for a in args])
    return builder.call(fn, args)


def splat(builder: ir.IRBuilder, value: ir.Value, n: int) -> ir.Value:
    vt = ir.VectorType(value.type, n)
    v = builder.insert_element(undef(vt), value, ir.Constant(I32, 0))
    mask_type = ir.VectorType(I32, n)
    shuffle = builder.shuffle_vector(v, undef(vt), ir.Constant(mask_type, None))
    # The all-zero mask as one word: llvmlite checks the mask's lanes when it builds the
    # instruction, then would print them one by one, the most frequent constant of a module.
    shuffle.operands[2] = Literal(mask_type, "zeroinitializer")
    return shuffle


def freeze(builder: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """LLVM's `freeze` (llvmlite's builder has none): `v` itself unless it is poison."""
    instr = ir.instructions.Instruction(builder.block, v.type, "freeze", [v])
    builder._insert(instr)  # noqa: SLF001 - llvmlite inserts custom instructions this way
    return instr


def every_lane(builder: ir.IRBuilder, mask: ir.Value) -> ir.Value:
    """An i1: every lane of the i1 vector `mask` is set (`llvm.vector.reduce.and`)."""
    return call_intrinsic(builder, "llvm.vector.reduce.and", [mask.type], I1, [mask])


def branch_value(builder: ir.IRBuilder, cond: ir.Value, on_true, on_false, weights=None,
                 names=("then", "else", "join")) -> ir.Value:
    """`on_true()` if cond else `on_false()`, each emitted in a block of its own and joined by
    a phi. `on_false` may be a value computed before instead: the false edge then goes
    straight to the join. `weights`: (true, false) branch weights, or None; `names`: the
    three blocks' names."""
    then_block = builder.append_basic_block(names[0])
    else_block = builder.append_basic_block(names[1]) if callable(on_false) else None
    join = builder.append_basic_block(names[2])
    results = [] if else_block is not None else [(on_false, builder.block)]
    br = builder.cbranch(cond, then_block, else_block or join)
    if weights is not None:
        br.set_weights(list(weights))
    for block, emit in ((then_block, on_true), (else_block, on_false)):
        if block is None:
            continue
        builder.position_at_end(block)
        results.append((emit(), builder.block))
        builder.branch(join)
    builder.position_at_end(join)
    phi = builder.phi(results[0][0].type)
    for value, block in results:
        phi.add_incoming(value, block)
    return phi


def split(builder: ir.IRBuilder, v: ir.Value, width: int):
    """Chunks of `width` lanes of a vector."""
    n = lanes(v.type)
    if n == width:
        return [v]
    undef_v = undef(v.type)
    return [builder.shuffle_vector(v, undef_v, ir.Constant(ir.VectorType(I32, width), list(range(i, i + width))))
            for i in range(0, n, width)]


def concat(builder: ir.IRBuilder, parts):
    """Concatenates equal-width vectors."""
    while len(parts) > 1:
        nxt = []
        for a, b in zip(parts[0::2], parts[1::2]):
            n = lanes(a.type) * 2
            nxt.append(builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, n), list(range(n)))))
        parts = nxt
    return parts[0]


def map_lanes(builder: ir.IRBuilder, fn, args, ret_elem: ir.Type):
    """Applies a scalar function lane by lane (for functions with no vector variant)."""
    n = lanes(args[0].type)
    if not isinstance(args[0].type, ir.VectorType):
        return fn(*args)
    out = undef(ir.VectorType(ret_elem, n))
    for i in range(n):
        k = ir.Constant(I32, i)
        r = fn(*[builder.extract_element(a, k) for a in args])
        out = builder.insert_element(out, r, k)
    return out
