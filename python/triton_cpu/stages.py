"""The ttcir and llir stages, run in the compiler worker (llvm_worker.py) or in this process.

The Python half of the compiler (xDSL, our passes, the LLVM IR emitter) takes ~0.45 s to
import, more than half of a first kernel's compile time, and the user's process would pay it
on its first cache miss. The compile server imports it once per machine and forks each
process's worker with it loaded (compile_server.py); without the server the worker imports
it as it boots, which the driver starts when Triton first selects it (driver.py), so the
import overlaps what Triton does before the first compile. Either way the user's process
never imports xDSL. The stages send the worker text and get text back:

  ttcir  the TTIR text (without source locations when the code needs none, see
         pipeline.ttcir_stage) -> the TritonCPU IR text, the kernel's name and buffer
         bytes; the worker keeps the module under a handle for the llir stage.
  llir   the handle (or, after the worker was restarted or when an IR override replaced the
         stage's output, the TritonCPU IR text) -> optimized LLVM IR text.

LLVM runs inside the worker's llir request: when it aborts there (llvm_worker.LLVMAborted),
the request is sent again to a new worker with the next of llvm.PIPELINES, through the
retry loop llvm.optimize uses for its own requests (llvm.with_fallback: the same warning and
error). Exceptions raised in the
worker (an unsupported op's UnsupportedError with its kernel and line, an internal error)
are raised here with their type and message; warnings are issued again here.

`llvm_worker.in_process()` (TRITON_CPU_LLVM_IN_PROCESS=1, or no Python to start) runs both
stages in this process, with the module passed between them as an object.
"""
import dataclasses
import itertools
import os
import types

from triton_cpu import llvm_worker

# In the worker: TritonCPU modules the ttcir stage made, by handle, waiting for their llir
# stage (a few at most: one per kernel being compiled; the oldest are dropped).
_MODULES: dict = {}
_KEEP = 16
_TOKEN = os.urandom(8).hex()  # per worker process: a handle from an earlier worker never matches
_COUNTER = itertools.count()


class TTCIRText(str):
    """The ttcir stage's output when the worker made it: the IR text (what Triton writes to
    its cache) and the handle of the module the worker keeps for the llir stage."""
    handle: str | None = None


def _plain(options):
    """The options as a namespace of plain values (the worker does not import Triton)."""
    if dataclasses.is_dataclass(options):
        return types.SimpleNamespace(**{f.name: getattr(options, f.name) for f in dataclasses.fields(options)})
    return options


def locations_needed(bare_text: str | None) -> bool:
    """Whether the ttcir stage parses the TTIR with its source locations from the start: no
    text without them was given (line tables, bounds checks need them), or the kernel
    asserts (its message names file:line)."""
    return bare_text is None or "tt.assert" in bare_text


def ttcir(full_text, bare_text, options, host):
    """(the stage's output for llir, kernel name, buffer bytes); `full_text` a function that
    returns the TTIR with source locations, `bare_text` the TTIR without them or None."""
    if llvm_worker.in_process():
        from triton_cpu.pipeline import ttcir_stage
        return ttcir_stage(full_text, bare_text, options, host)
    full = full_text() if locations_needed(bare_text) else None
    options = _plain(options)
    try:
        text, name, shared, handle = llvm_worker.call("ttcir", full, bare_text, options, host)
    except Exception as e:
        from triton_cpu.errors import UnsupportedError
        if full is not None or not isinstance(e, UnsupportedError):
            raise
        # Lowered without locations, it failed: again with them, so the error names its line.
        text, name, shared, handle = llvm_worker.call("ttcir", full_text(), None, options, host)
    out = TTCIRText(text)
    out.handle = handle
    return out, name, shared


def llir(src, options, host, kernel: str) -> str:
    """Optimized LLVM IR text for the ttcir stage's output `src` (a module in this process,
    a TTCIRText from the worker, or TritonCPU IR text)."""
    if llvm_worker.in_process() or not isinstance(src, str):
        from triton_cpu.pipeline import ttcir_to_llir
        return ttcir_to_llir(src, options, host)
    from triton_cpu.llvm import with_fallback
    handle = getattr(src, "handle", None)
    options = _plain(options)

    def attempt(i):
        # After an abort the module died with the worker: the next one parses the text.
        return llvm_worker.call("llir", handle if i == 0 else None, str(src), options, host, i), ""
    return with_fallback(kernel, attempt)


# -- the worker's side ----------------------------------------------------------------------

def ttcir_here(full_text, bare_text, options, host):
    from triton_cpu.pipeline import ttcir_stage
    module, name, shared = ttcir_stage(full_text, bare_text, options, host)
    handle = f"{_TOKEN}:{next(_COUNTER)}"
    _MODULES[handle] = module
    while len(_MODULES) > _KEEP:
        del _MODULES[next(iter(_MODULES))]
    return str(module), name, shared, handle


def llir_here(handle, text, options, host, first: int) -> str:
    from triton_cpu.pipeline import ttcir_to_llir
    module = _MODULES.pop(handle, None) if handle is not None else None
    return ttcir_to_llir(module if module is not None else text, options, host, first)


def preload():
    """The worker's imports at boot: everything the two stages use."""
    import importlib
    for name in ("triton_cpu.pipeline", "triton_cpu.codegen.llvm_emitter"):
        importlib.import_module(name)
    from triton_cpu.dialects.ttir import make_context
    make_context()


# A row softmax's TTIR (Triton 3.9, source locations stripped): the compile server compiles
# it once after its imports (warm_up), so that the code paths, caches and LLVM objects a first
# compile initializes are ready in every worker it forks.
_WARM_UP_TTIR = """\
module {
  tt.func public @warm_up(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) attributes {noinline = false} {
    %x = arith.constant dense<0xFF800000> : tensor<128xf32>
    %offs = arith.constant 128 : i32
    %offs_0 = tt.get_program_id x : i32
    %offs_1 = arith.muli %offs_0, %offs : i32
    %offs_2 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_3 = tt.splat %offs_1 : i32 -> tensor<128xi32>
    %offs_4 = arith.addi %offs_3, %offs_2 : tensor<128xi32>
    %x_5 = tt.splat %n : i32 -> tensor<128xi32>
    %x_6 = arith.cmpi slt, %offs_4, %x_5 : tensor<128xi32>
    %x_7 = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %x_8 = tt.addptr %x_7, %offs_4 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %x_9 = tt.load %x_8, %x_6, %x : tensor<128x!tt.ptr<f32>>
    %e = "tt.reduce"(%x_9) <{axis = 0 : i32}> ({
    ^bb0(%e_13: f32, %e_14: f32):
      %e_15 = arith.maxnumf %e_13, %e_14 : f32
      tt.reduce.return %e_15 : f32
    }) : (tensor<128xf32>) -> f32
    %e_10 = tt.splat %e : f32 -> tensor<128xf32>
    %e_11 = arith.subf %x_9, %e_10 : tensor<128xf32>
    %e_12 = math.exp %e_11 : tensor<128xf32>
    %0 = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %1 = tt.addptr %0, %offs_4 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %2 = "tt.reduce"(%e_12) <{axis = 0 : i32}> ({
    ^bb0(%arg3: f32, %arg4: f32):
      %5 = arith.addf %arg3, %arg4 : f32
      tt.reduce.return %5 : f32
    }) : (tensor<128xf32>) -> f32
    %3 = tt.splat %2 : f32 -> tensor<128xf32>
    %4 = arith.divf %e_12, %3 : tensor<128xf32>
    tt.store %1, %4, %x_6 : tensor<128x!tt.ptr<f32>>
    tt.return
  }
}
"""


def warm_up():
    """Compiles _WARM_UP_TTIR through the three worker-side stages and drops the result."""
    import types
    from triton_cpu import llvm
    host, options = llvm.host(), types.SimpleNamespace()  # the pipeline's defaults
    _, _, _, handle = ttcir_here(None, _WARM_UP_TTIR, options, host)
    llvm.asm_here(llir_here(handle, None, options, host, 0), host)
