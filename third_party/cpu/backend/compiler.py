"""CPUBackend: the compilation pipeline Triton runs for `GPUTarget("cpu", ...)`.

Stages (each stage's text is dumped under TRITON_KERNEL_DUMP=1):
  ttir   stock Triton passes over the frontend's IR
  ttcir  TTIR -> TritonCPU IR (xDSL: scf/vector/memref/arith + tcpu)
  llir   TritonCPU IR -> LLVM IR (llvmlite), LLVM O3 for the host CPU
  asm    host assembly (for inspection)
  so     shared object linked with libTritonCPURuntime
"""
import functools
import gc
import hashlib
import os
from dataclasses import dataclass, fields
from typing import Optional, Tuple, Union

from triton.backends.compiler import BaseBackend, GPUTarget, Language

from triton_cpu import env_flag


@functools.lru_cache(None)
def _source_hash() -> str:
    """Hash of this package's code, so a plugin upgrade never hits a stale cache entry."""
    import triton_cpu
    root = os.path.dirname(triton_cpu.__file__)
    h = hashlib.sha256(triton_cpu.__version__.encode())
    for base in (root, os.path.dirname(__file__)):
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".py", ".c", ".so")):
                    with open(os.path.join(dirpath, f), "rb") as fh:
                        h.update(f.encode())
                        h.update(fh.read())
    return h.hexdigest()


@dataclass(frozen=True)
class CPUOptions:
    # Fields read by stock Triton, the autotuner and Inductor; GPU-only ones are accepted and ignored.
    num_warps: int = 1
    num_ctas: int = 1
    num_stages: int = 1
    warp_size: int = 1
    maxnreg: Optional[int] = None
    ir_override: Optional[str] = None
    enable_fp_fusion: bool = True
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    supported_fp8_dtypes: Tuple[str, ...] = ("fp8e5", "fp8e5b16", "fp8e4nv", "fp8e4b8", "fp8e4b15")
    deprecated_fp8_dot_operand_dtypes: Tuple[str, ...] = ()
    default_dot_input_precision: str = "ieee"
    # tf32 is accepted (tl.dot picks it whenever allowed) and computed in full fp32.
    allowed_dot_input_precisions: Tuple[str, ...] = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")
    max_num_imprecise_acc_default: int = 0
    extern_libs: Optional[tuple] = None
    debug: bool = False
    backend_name: str = "cpu"
    sanitize_overflow: bool = False
    arch: Optional[str] = None
    instrumentation_mode: str = ""
    fpsan_homomorphic_casts: bool = False
    # Tuning knobs of the NVIDIA and AMD backends: kernels written for a GPU pass them (e.g.
    # upstream tutorial 03's AMD autotune configs pass matrix_instr_nonkdim); accepted, ignored.
    ptx_version: Optional[int] = None
    ptx_options: Optional[str] = None
    sched4reg: bool = False
    enable_reflect_ftz: bool = True
    clc: bool = False
    min_shared_mem: Optional[int] = None
    waves_per_eu: int = 0
    matrix_instr_nonkdim: int = 0
    kpack: int = 1
    allow_flush_denorm: bool = False
    schedule_hint: str = ""
    llvm_fn_attrs: Union[str, Tuple[Tuple[str, str], ...]] = ""
    wgp_cu_mode: str = "wgp"
    # CPU-specific.
    num_threads: int = 0  # threads for one launch; 0: TRITON_CPU_NUM_THREADS / OMP_NUM_THREADS / all cores
    vector_bits: int = 0  # SIMD width the lowering targets; 0: the host's
    # Check every access to user memory against the launch's tensor storages (README,
    # "Bounds checks"); default: the TRITON_CPU_BOUNDS_CHECK environment variable.
    bounds_check: bool = False
    # DWARF line tables from the kernel's source lines (gdb, perf); default: on unless
    # Triton's TRITON_DISABLE_LINE_INFO knob is set, as for the GPU backends.
    line_info: bool = True
    # Vector math library: "sleef", "libmvec" or "scalar" (libm per lane); default: the
    # TRITON_CPU_MATH_LIB environment variable, else SLEEF when it was found at install time.
    math_lib: str = ""
    # Prefetch the tile a load reads in the next program / iteration (prefetch-next-program);
    # default: on unless TRITON_CPU_PREFETCH=0.
    prefetch: bool = True
    # bf16 tl.dot on vdpbf16ps (True) or widened to fp32 FMAs (False); default: the host's
    # choice (pipeline.bf16_dot_pays). Only where the host has AVX512-BF16.
    bf16_dot: Optional[bool] = None
    # fp32 vectors divided by a value every lane shares through its reciprocal and two FMAs
    # (correctly rounded, codegen/uniform_division.py) instead of vdivps; default: the host's
    # choice (pipeline.reciprocal_division_pays).
    reciprocal_division: Optional[bool] = None
    # bf16 and int8 tl.dot on AMX tiles (tdpbf16ps, tdpbssd) where the host has them and
    # Linux grants the process the tile state (triton_cpu/amx.py); False keeps the vector
    # code. Resolved by parse_options in the process that runs the kernel.
    amx: Optional[bool] = None

    def __post_init__(self):
        object.__setattr__(self, "extern_libs", tuple(dict(self.extern_libs or {}).items()))
        assert self.num_warps > 0 and (self.num_warps & (self.num_warps - 1)) == 0, \
            "num_warps must be a power of 2"

    def hash(self):
        key = "_".join(f"{k}-{v}" for k, v in sorted(self.__dict__.items()))
        return hashlib.sha256(key.encode()).hexdigest()


def _without_gc(stage):
    """`stage` run with Python's cyclic garbage collector paused.

    The stages in Python (TTIR parsing, lowering, the LLVM IR emitter) build hundreds of
    thousands of short-lived IR objects, many in reference cycles (an op and its block).
    Collections during a stage find them alive and promote them to the oldest generation,
    which then fills up and forces a full collection over every object of the process
    (~90 ms with torch loaded, once every few kernels). Paused, nothing is promoted: the
    next young-generation collection after the stage frees them at the cost of the young
    objects only. The collector's previous state is restored (left off if it was off)."""
    @functools.wraps(stage)
    def run(*args):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return stage(*args)
        finally:
            if was_enabled:
                gc.enable()
    return run


class CPUBackend(BaseBackend):
    binary_ext = "so"

    @staticmethod
    def supports_target(target: GPUTarget):
        # Inductor builds GPUTarget("cpu", "", 32); the driver uses (cpu, <host cpu>, 1).
        return target.backend == "cpu"

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        from triton_cpu import llvm, triton_key_memo
        self.host = llvm.host()
        # Triton hashes its 500 MB libtriton.so for the first kernel of every process;
        # remember that hash between processes (triton_key_memo).
        triton_key_memo.install()

    def hash(self) -> str:
        import triton_cpu
        return f"triton_cpu-{triton_cpu.__version__}-{_source_hash()[:16]}-{self.host.key}"

    def parse_options(self, opts) -> CPUOptions:
        from triton import knobs
        names = {f.name for f in fields(CPUOptions)}
        args = {k: v for k, v in opts.items() if k in names and v is not None}
        if "enable_fp_fusion" not in args:
            args["enable_fp_fusion"] = knobs.language.default_fp_fusion
        args.setdefault("arch", self.host.cpu)
        if "line_info" not in args:
            args["line_info"] = not knobs.compilation.disable_line_info
        if "bounds_check" not in args:
            args["bounds_check"] = env_flag("TRITON_CPU_BOUNDS_CHECK", False)
        if "prefetch" not in args:
            args["prefetch"] = env_flag("TRITON_CPU_PREFETCH", True)
        from triton_cpu import amx, sleef
        args["amx"] = amx.resolve(self.host, args.get("amx"))
        args["math_lib"] = sleef.resolve(args.get("math_lib"))
        if "supported_fp8_dtypes" in args:
            args["supported_fp8_dtypes"] = tuple(args["supported_fp8_dtypes"])
        if "allowed_dot_input_precisions" in args:
            args["allowed_dot_input_precisions"] = tuple(args["allowed_dot_input_precisions"])
        return CPUOptions(**args)

    def pack_metadata(self, metadata):
        return (metadata.num_threads, metadata.name, bool(getattr(metadata, "bounds_check", False)))

    def get_codegen_implementation(self, options):
        from triton_cpu.language.custom_types import convert_custom_types
        return {"min_dot_size": lambda lhs_type, rhs_type: (1, 1, 1), "convert_custom_types": convert_custom_types}

    def get_module_map(self):
        # The GPU vendors' libdevice modules too: real kernel libraries import them directly.
        from triton_cpu.language import libdevice
        return {name: libdevice for name in ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice",
                                             "triton.language.extra.hip.libdevice")}

    def load_dialects(self, ctx):
        pass

    @staticmethod
    def make_ttir(mod, metadata, options):
        from triton._C.libtriton import ir, passes
        pm = ir.pass_manager(mod.context)
        pm.enable_debug()
        passes.common.add_inliner(pm)
        passes.ttir.add_rewrite_tensor_descriptor_to_pointer(pm)
        passes.common.add_canonicalizer(pm)
        passes.ttir.add_combine(pm)
        passes.ttir.add_reorder_broadcast(pm)
        passes.common.add_cse(pm)
        passes.ttir.add_triton_licm(pm)
        passes.common.add_symbol_dce(pm)
        passes.ttir.add_loop_unroll(pm)
        pm.run(mod, "make_ttir")
        return mod

    @staticmethod
    def make_ttcir(mod, metadata, options, host):
        from triton_cpu import stages
        # Source locations cost a third of the parse time: read them only when the code
        # needs them (line tables, bounds checks, asserts name file:line) or to point an
        # error at its line (pipeline.ttcir_stage).
        bare = None if options.line_info or options.bounds_check else mod.str_nodebug()
        module, name, shared = stages.ttcir(lambda: str(mod), bare, options, host)
        metadata["name"] = name
        metadata["shared"] = shared
        metadata["num_threads"] = options.num_threads
        return module

    @staticmethod
    def make_llir(src, metadata, options, host):
        from triton_cpu import stages
        return stages.llir(src, options, host, metadata["name"])

    @staticmethod
    def make_asm(src, metadata, options, host):
        from triton_cpu import llvm
        return llvm.to_asm(src, host, metadata["name"])

    @staticmethod
    def make_so(src, metadata, options, host):
        from triton_cpu import llvm
        return llvm.to_shared_object(metadata["name"], src, host)

    def add_stages(self, stages, options, language):
        # Triton calls this on a cache miss, before its frontend: the LLVM worker process
        # boots while the kernel is parsed and lowered.
        from triton_cpu import llvm_worker
        llvm_worker.start()
        if language != Language.TRITON:
            raise NotImplementedError("the CPU backend compiles Triton kernels only (not Gluon)")
        host = self.host
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options)
        stages["ttcir"] = _without_gc(lambda src, metadata: self.make_ttcir(src, metadata, options, host))
        stages["llir"] = _without_gc(lambda src, metadata: self.make_llir(src, metadata, options, host))
        stages["asm"] = lambda src, metadata: self.make_asm(src, metadata, options, host)
        stages["so"] = lambda src, metadata: self.make_so(src, metadata, options, host)
        from triton import knobs
        if knobs.runtime.add_stages_inspection_hook is not None:
            knobs.runtime.add_stages_inspection_hook(self, stages, options, language, None)
