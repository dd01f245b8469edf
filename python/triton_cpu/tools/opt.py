"""triton-cpu-opt: runs named passes of this compiler on a .mlir file (for lit tests).

    triton-cpu-opt input.mlir -p convert-triton-to-tcpu{vector-bits=256},cse
    triton-cpu-opt input.mlir --emit-llvm [--vector-bits 256] [--no-opt]
                   [--math-lib sleef|libmvec|scalar] [--cpu-features +avx2,+fma]
"""
import argparse
import sys

from xdsl.passes import PassPipeline


def available_passes():
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    from triton_cpu.transforms.convert_triton_to_tcpu import ConvertTritonToTCPU
    from triton_cpu.transforms.forward_stored_tiles import ForwardStoredTiles
    from triton_cpu.transforms.inline_ptx import InlinePTX
    from triton_cpu.transforms.insert_bounds_checks import InsertBoundsChecks
    from triton_cpu.transforms.peel_accumulator_loops import PeelAccumulatorLoops
    from triton_cpu.transforms.prefetch_next_program import PrefetchNextProgram
    from triton_cpu.transforms.scoped_cse import ScopedCSE
    from triton_cpu.transforms.share_dot_panels import ShareDotPanels
    from triton_cpu.transforms.split_bound_check_loops import SplitBoundCheckLoops
    from triton_cpu.transforms.split_row_tiles import SplitRowTiles
    from triton_cpu.transforms.transpose_column_tiles import TransposeColumnTiles
    from triton_cpu.transforms.uniform_loop_increments import UniformLoopIncrements
    from triton_cpu.transforms.unroll_tile_dot_loops import UnrollTileDotLoops
    from triton_cpu.transforms.version_single_iteration_loops import VersionSingleIterationLoops
    passes = [InlinePTX, UniformLoopIncrements, PeelAccumulatorLoops, TransposeColumnTiles, SplitRowTiles,
              UnrollTileDotLoops, ShareDotPanels,
              PrefetchNextProgram, VersionSingleIterationLoops, ForwardStoredTiles, ConvertTritonToTCPU, SplitBoundCheckLoops,
              InsertBoundsChecks, ScopedCSE,
              CommonSubexpressionElimination, DeadCodeElimination]
    return {p.name: (lambda p=p: p) for p in passes}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="triton-cpu-opt", description=__doc__.splitlines()[0])
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file (default: stdin)")
    parser.add_argument("-p", "--passes", default="", help="comma-separated pass pipeline")
    parser.add_argument("--emit-llvm", action="store_true", help="print LLVM IR of the TritonCPU IR input")
    parser.add_argument("--no-opt", action="store_true", help="with --emit-llvm: skip LLVM's O3 pipeline")
    parser.add_argument("--vector-bits", type=int, default=256, help="with --emit-llvm: SIMD width")
    parser.add_argument("--math-lib", default="libmvec", choices=("sleef", "libmvec", "scalar"),
                        help="with --emit-llvm: vector math library (codegen/math_lib.py)")
    parser.add_argument("--cpu-features", default=None,
                        help="with --emit-llvm: LLVM feature string the math calls may use (default: the host's)")
    args = parser.parse_args(argv)

    from triton_cpu.dialects.ttir import make_context, parse_ttir
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    module = parse_ttir(text)
    if args.passes:
        PassPipeline.parse_spec(available_passes(), args.passes).apply(make_context(), module)
    if args.emit_llvm:
        from triton_cpu import llvm
        from triton_cpu.codegen.llvm_emitter import emit_llvm
        from triton_cpu.codegen.math_lib import MathLib
        from triton_cpu.pipeline import kernel_name
        math = MathLib(args.vector_bits, args.math_lib, args.cpu_features)
        out = emit_llvm(module, kernel_name(module), args.vector_bits, math=math)
        if not args.no_opt:
            out = llvm.optimize(out, llvm.host())
        print(out)
    else:
        print(module)
    return 0


if __name__ == "__main__":
    sys.exit(main())
