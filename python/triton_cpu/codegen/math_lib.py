"""Vectorized math: glibc's libmvec where it has a variant, LLVM intrinsics for what
the hardware does natively, scalar libm per lane otherwise.

Accuracy: libmvec's documented maximum error is 4 ulp (glibc manual, "Errors in
Math Functions"); sqrt/floor/ceil/fma/fabs are exact hardware instructions.
fp16 and bf16 inputs are computed in fp32 and rounded once.
"""
import llvmlite.ir as ir

from triton_cpu.codegen import cgutils as cg

# libm name (double variant) -> number of vector arguments, for functions libmvec has.
_LIBMVEC = {
    "exp": 1, "log": 1, "sin": 1, "cos": 1, "pow": 2, "exp2": 1, "log2": 1, "log10": 1, "exp10": 1,
    "expm1": 1, "log1p": 1, "tan": 1, "tanh": 1, "sinh": 1, "cosh": 1, "asin": 1, "acos": 1, "atan": 1,
    "asinh": 1, "acosh": 1, "atanh": 1, "atan2": 2, "erf": 1, "erfc": 1, "cbrt": 1, "hypot": 2,
}

# MLIR math op -> libm double name.
MATH_OPS = {
    "math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.log10": "log10",
    "math.sin": "sin", "math.cos": "cos", "math.tan": "tan", "math.tanh": "tanh", "math.sinh": "sinh",
    "math.cosh": "cosh", "math.asin": "asin", "math.acos": "acos", "math.atan": "atan", "math.asinh": "asinh",
    "math.acosh": "acosh", "math.atanh": "atanh", "math.erf": "erf", "math.expm1": "expm1",
    "math.log1p": "log1p", "math.cbrt": "cbrt", "math.powf": "pow", "math.atan2": "atan2",
}

# Native LLVM intrinsics (one instruction or an exact expansion).
INTRINSICS = {
    "math.sqrt": "llvm.sqrt", "math.floor": "llvm.floor", "math.ceil": "llvm.ceil", "math.absf": "llvm.fabs",
    "math.fma": "llvm.fma", "math.trunc": "llvm.trunc", "math.roundeven": "llvm.roundeven",
    "math.round": "llvm.round", "math.copysign": "llvm.copysign",
}


class MathLib:
    def __init__(self, vector_bits: int):
        self.vector_bits = vector_bits

    def call(self, builder: ir.IRBuilder, base: str, args, ret_elem: ir.Type | None = None):
        """`base` (a libm double name) applied elementwise to f32/f64 scalars or vectors."""
        elem = cg.scalar_of(args[0].type)
        ret_elem = ret_elem or elem
        n = cg.lanes(args[0].type)
        bits = 32 if elem == cg.F32 else 64
        if (isinstance(args[0].type, ir.VectorType) and _LIBMVEC.get(base) == len(args) and ret_elem == elem
                and elem in (cg.F32, cg.F64)):
            # Chunks of the widest libmvec variant the host has, down to its 128-bit (SSE) one.
            w = min(self.vector_bits // bits, n)
            if n % w == 0 and w * bits >= 128:
                return self._vector_call(builder, base, args, elem, w, bits)
        name = base + "f" if elem == cg.F32 else base
        fn = cg.declare(builder.module, name, ret_elem, [elem] * len(args))
        fn.attributes.add("nounwind")
        return cg.map_lanes(builder, lambda *xs: builder.call(fn, list(xs)), args, ret_elem)

    @staticmethod
    def _vector_call(builder, base, args, elem, w, bits):
        # x86 vector ABI names: b = SSE (128-bit), d = AVX2 (256), e = AVX-512 (512).
        isa = {128: "b", 256: "d", 512: "e"}[w * bits]
        suffix = "f" if elem == cg.F32 else ""
        name = f"_ZGV{isa}N{w}{'v' * len(args)}_{base}{suffix}"
        vt = ir.VectorType(elem, w)
        fn = cg.declare(builder.module, name, vt, [vt] * len(args))
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
        chunks = [cg.split(builder, a, w) for a in args]
        outs = [builder.call(fn, list(parts)) for parts in zip(*chunks)]
        return cg.concat(builder, outs)
