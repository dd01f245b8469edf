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
        # libmvec ISA letter by register width: b = SSE, d = AVX2, e = AVX-512.
        self.isa = {128: "b", 256: "d", 512: "e"}.get(vector_bits, "b")

    @staticmethod
    def _scalar_name(base: str, elem: ir.Type) -> str:
        return base + "f" if elem == cg.F32 else base

    def call(self, builder: ir.IRBuilder, base: str, args, ret_elem: ir.Type | None = None):
        """`base` (a libm double name) applied elementwise to f32/f64 scalars or vectors."""
        elem = cg.scalar_of(args[0].type)
        ret_elem = ret_elem or elem
        n = cg.lanes(args[0].type)
        nargs = _LIBMVEC.get(base)
        if isinstance(args[0].type, ir.VectorType) and nargs == len(args) and ret_elem == elem:
            width = self.vector_bits // elem.width if hasattr(elem, "width") else self.vector_bits // (
                32 if elem == cg.F32 else 64)
            if n >= width or n >= 2:
                w = min(width, n)
                if n % w == 0 and w >= (4 if elem == cg.F32 else 2):
                    return self._vector_call(builder, base, args, elem, w)
        name = self._scalar_name(base, elem)
        fn = cg.declare(builder.module, name, ret_elem, [elem] * len(args))
        fn.attributes.add("nounwind")
        return cg.map_lanes(builder, lambda *xs: builder.call(fn, list(xs)), args, ret_elem)

    def _vector_call(self, builder, base, args, elem, w):
        isa = self.isa
        # libmvec's SSE variants are 128-bit: 4 floats / 2 doubles.
        suffix = "f" if elem == cg.F32 else ""
        name = f"_ZGV{isa}N{w}{'v' * len(args)}_{base}{suffix}"
        vt = ir.VectorType(elem, w)
        fn = cg.declare(builder.module, name, vt, [vt] * len(args))
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
        chunks = [cg.split(builder, a, w) for a in args]
        outs = [builder.call(fn, list(parts)) for parts in zip(*chunks)]
        return cg.concat(builder, outs)

    def lane_width(self, elem: ir.Type) -> int:
        return self.vector_bits // (32 if elem == cg.F32 else 64)
