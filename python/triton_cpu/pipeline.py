"""The compiler's middle and back end, as the backend's stages call them.

ttir_to_ttcir: TTIR text -> TritonCPU IR (xDSL module), through the passes of
    `ttcir_passes` in order (insert-bounds-checks only in the bounds-checked mode,
    prefetch-next-program unless the `prefetch` option is off);
ttcir_to_llir: TritonCPU IR -> LLVM IR text, optimized with LLVM O3 for the host.
ttcir_stage: the ttcir stage's work around ttir_to_ttcir (which text to parse, the
    metadata). The backend's stages run these in the compiler worker (llvm_worker.py), or
    here with TRITON_CPU_LLVM_IN_PROCESS=1.
"""
from xdsl.passes import PassPipeline
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from triton_cpu import amx, llvm
from triton_cpu.transforms.convert_triton_to_tcpu import ConvertTritonToTCPU
from triton_cpu.transforms.forward_stored_tiles import ForwardStoredTiles
from triton_cpu.transforms.inline_ptx import InlinePTX
from triton_cpu.transforms.insert_bounds_checks import InsertBoundsChecks
from triton_cpu.transforms.peel_accumulator_loops import PeelAccumulatorLoops
from triton_cpu.transforms.prefetch_next_program import PrefetchNextProgram
from triton_cpu.transforms.scoped_cse import ScopedCSE
from triton_cpu.transforms.split_bound_check_loops import SplitBoundCheckLoops
from triton_cpu.transforms.split_row_tiles import SplitRowTiles
from triton_cpu.transforms.transpose_column_tiles import TransposeColumnTiles
from triton_cpu.transforms.uniform_loop_increments import UniformLoopIncrements
from triton_cpu.transforms.share_dot_panels import ShareDotPanels
from triton_cpu.transforms.unroll_tile_dot_loops import UnrollTileDotLoops
from triton_cpu.transforms.version_single_iteration_loops import VersionSingleIterationLoops


def ttcir_passes(vector_bits: int, bounds_check: bool = False, bf16_dot: bool = False, prefetch: bool = True,
                 amx: bool = False, amx_int8: bool = False):
    return [
        InlinePTX(),
        UniformLoopIncrements(),
        TransposeColumnTiles(),
        SplitRowTiles(),
        *([UnrollTileDotLoops(amx=amx, amx_int8=amx_int8)] if amx else []),
        VersionSingleIterationLoops(),
        ForwardStoredTiles(),
        *([PrefetchNextProgram(indirect=not bounds_check)] if prefetch else []),
        PeelAccumulatorLoops(),
        # not with bounds checks: a program that finds B's panels packed skips its loads
        *([ShareDotPanels(amx=amx, amx_int8=amx_int8, bf16_dot=bf16_dot)] if (amx or bf16_dot) and not bounds_check
          else []),
        ConvertTritonToTCPU(vector_bits=vector_bits, bf16_dot=bf16_dot, amx=amx, amx_int8=amx_int8),
        SplitBoundCheckLoops(),
        *([InsertBoundsChecks()] if bounds_check else []),
        ScopedCSE(),
        DeadCodeElimination(),
    ]


def vector_bits(options, host) -> int:
    return getattr(options, "vector_bits", 0) or host.vector_bits


def bf16_dot(bits: int, host, requested: bool | None = None) -> bool:
    """Whether tt.dot on bf16 runs on vdpbf16ps: the host must have it (AVX512-BF16 at 512
    bits, with AVX512-VL for the 256-bit form); `requested` (the kernel's `bf16_dot`
    option) forces the choice, else the host's cores decide (bf16_dot_pays)."""
    has = host.has("avx512bf16") and (bits == 512 or (bits == 256 and host.has("avx512vl")))
    return has and (bf16_dot_pays(host) if requested is None else requested)


def reciprocal_division(host, requested: bool | None = None) -> bool:
    """Whether fp32 vectors divided by a lane-uniform value go through its reciprocal
    (codegen/uniform_division.py); `requested` (the kernel's `reciprocal_division` option)
    forces the choice."""
    return reciprocal_division_pays(host) if requested is None else requested


def reciprocal_division_pays(host) -> bool:
    """Intel's cores divide a 512-bit vector once every ~9 cycles against two FMAs per
    cycle (Emerald Rapids, measured back to back), and the reciprocal path's five vector
    operations win: tutorial 02's softmax in a warm cache 1.03 -> 0.93 ms, Liger's 1.13-1.42
    -> 0.98-1.08 ms (benchmarks/bench_libraries.py). AMD's Zen cores divide 256 bits every ~3.5 cycles (Zen 3, AMD's and
    uops.info's tables), where the operation count says the two are about even, and they
    keep vdivps: on a Zen 3, tutorial 02's softmax on rows hot in the L1, one thread, took
    0.60-0.62 us per row with vdivps and 0.65-0.66 through the reciprocal."""
    return not host.cpu.startswith("znver")


def bf16_dot_pays(host) -> bool:
    """Whether vdpbf16ps beats widening bf16 to fp32 for the FMA micro-kernel (where every
    product of two bf16 is exact too). AMD's Zen 4/5 issue it at the FMA's rate with twice
    the products per instruction (Zen 5: the bf16 matmul 1.7x faster on it). Intel's cores
    issue it once every ~2 cycles against two FMAs per cycle (Emerald Rapids: 2.27 against
    0.56 cycles per 512-bit instruction, measured back to back): half the products per
    cycle, and the tutorial's bf16 matmul at 1024^3 took 13.6 ms on it against 7.5-7.9 ms
    widened. Unknown cores keep the widening (exact products, fp32 sums, no flushed
    denormals)."""
    return host.cpu.startswith("znver")


def kernel_name(module) -> str:
    names = [op.properties["sym_name"].data for op in module.body.block.ops
             if op.name in ("tt.func", "func.func") and
             (op.properties.get("sym_visibility") is None or op.properties["sym_visibility"].data == "public")]
    if len(names) != 1:
        raise RuntimeError(f"triton-cpu: expected one public kernel in the module, found {names}")
    return names[0]


def ttir_to_ttcir(ttir_text: str, options, host):
    from triton_cpu.dialects.ttir import make_context, parse_ttir
    module = parse_ttir(ttir_text)
    name = kernel_name(module)
    ctx = make_context()
    bits = vector_bits(options, host)
    tiles = bool(getattr(options, "amx", False)) and amx.available(host)
    passes = ttcir_passes(bits, getattr(options, "bounds_check", False),
                          bf16_dot(bits, host, getattr(options, "bf16_dot", None)), getattr(options, "prefetch", True),
                          tiles, tiles and host.has("amx-int8"))
    PassPipeline(tuple(passes)).apply(ctx, module)
    return module, name


def ttcir_stage(full_text, bare_text: str | None, options, host):
    """(TritonCPU module, kernel name, buffer bytes) for the TTIR of a kernel. `bare_text` is
    the TTIR without source locations, a third faster to parse, used when the code does not
    need them (line tables, bounds checks and asserts do) and the lowering succeeds; else
    `full_text` (a string, or a function that returns it), so that an error names its line;
    with `full_text` None, that error is raised for the caller to send the full text."""
    from triton_cpu.errors import UnsupportedError
    from triton_cpu.stages import locations_needed
    full = full_text if isinstance(full_text, str) else None
    if locations_needed(bare_text):
        module, name = ttir_to_ttcir(full or full_text(), options, host)
    else:
        try:
            module, name = ttir_to_ttcir(bare_text, options, host)
        except UnsupportedError:
            if full_text is None:
                raise
            module, name = ttir_to_ttcir(full or full_text(), options, host)
    return module, name, buffer_bytes(module)


def buffer_bytes(module) -> int:
    """Memory one program needs for its materialized tensors (stack or scratch): what the
    backend reports as `metadata.shared`, 0 when it needs none (as a GPU kernel without
    shared memory reports; upstream's tests check that)."""
    total = 0
    for op in module.walk():
        if op.name == "memref.alloca":
            t = op.results[0].type
            width = getattr(t.element_type, "bitwidth", None) or 64
            size = max(1, width // 8)
            for d in t.get_shape():
                size *= d
            total += (size + 63) & ~63
    return total


def ttcir_to_llir(module, options, host, first_pipeline: int = 0) -> str:
    """LLVM IR text, optimized, for a TritonCPU module (or its text); LLVM's pipelines are
    tried from llvm.PIPELINES[first_pipeline] on (llvm.optimize)."""
    from triton_cpu.codegen.llvm_emitter import emit_llvm
    from triton_cpu.codegen.math_lib import MathLib
    if isinstance(module, str):
        from triton_cpu.dialects.ttir import parse_ttir
        module = parse_ttir(module)
    name = kernel_name(module)
    bits = vector_bits(options, host)
    math = MathLib(bits, getattr(options, "math_lib", "") or "libmvec", host.features)
    text = emit_llvm(module, name, bits, getattr(options, "line_info", False),
                     getattr(options, "enable_fp_fusion", True), math,
                     reciprocal_division(host, getattr(options, "reciprocal_division", None)))
    return llvm.optimize(text, host, name, first_pipeline)
