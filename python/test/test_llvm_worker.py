"""LLVM runs in a worker process (triton_cpu/llvm_worker.py): an LLVM abort becomes an exception
or a fallback compile, never the end of the user's process."""
import functools
import os
import multiprocessing
import warnings

import pytest
import torch

import triton
import triton.language as tl
from triton_cpu import llvm, llvm_worker
from triton_cpu.errors import LLVMCrashError, LLVMFallbackWarning

from conftest import run_in_threads

SMALL_IR = """
define float @f(float %a, float %b) {
  %c = fadd float %a, %b
  ret float %c
}
"""


def test_an_abort_in_the_worker_is_an_exception_and_the_next_request_works():
    with pytest.raises(llvm_worker.LLVMAborted) as err:
        llvm_worker.call("abort")
    assert err.value.returncode != 0
    out = llvm.optimize(SMALL_IR, llvm.host())
    assert "fadd float %a, %b" in out


def test_llvm_errors_come_back_with_llvm_message():
    with pytest.raises(RuntimeError, match="expected instruction opcode"):
        llvm.optimize("define void @f() {\n  bogus\n}\n", llvm.host())


def test_optimize_falls_back_to_the_next_pipeline_and_warns(monkeypatch):
    tried = []
    real_call = llvm_worker.call

    def call(op, ir_text, host, config):
        tried.append(config)
        if config["loop_vectorize"]:
            raise llvm_worker.LLVMAborted("LoopVectorize.cpp:1: Assertion `x' failed.", -6)
        return real_call(op, ir_text, host, config)

    monkeypatch.setattr(llvm_worker, "call", call)
    with pytest.warns(LLVMFallbackWarning, match="kernel 'k'.*LoopVectorize.*without the loop vectorizer"):
        out = llvm.optimize(SMALL_IR, llvm.host(), "k")
    assert "fadd" in out
    assert [c["loop_vectorize"] for c in tried] == [True, False]


def test_an_optimized_module_that_does_not_verify_falls_back(monkeypatch):
    """A pipeline whose output fails LLVM's verifier is a failure of that pipeline: the next
    one is used (code generation would otherwise abort on the broken module)."""
    tried = []
    real_call = llvm_worker.call

    def call(op, ir_text, host, config):
        tried.append(config)
        if config["loop_vectorize"]:
            return "", "Instruction does not dominate all uses!\n  %1 = shufflevector ..."
        return real_call(op, ir_text, host, config)

    monkeypatch.setattr(llvm_worker, "call", call)
    with pytest.warns(LLVMFallbackWarning, match="kernel 'k'.*does not verify.*dominate"):
        out = llvm.optimize(SMALL_IR, llvm.host(), "k")
    assert "fadd" in out and len(tried) == 2


def test_optimize_here_reports_an_output_that_does_not_verify(monkeypatch):
    """optimize_here verifies the module twice, before and after the pipeline: ("", the
    verifier's message) when the second check fails, (IR, "") otherwise. The failing check
    is simulated (a module O3 really breaks is the fuzz regression
    reverse_cumsum_then_scan_of_branch_value, which depends on the LLVM version)."""
    config = llvm.PIPELINES[0][1]
    text, invalid = llvm.optimize_here(SMALL_IR, llvm.host(), config)
    assert "fadd float %a, %b" in text and invalid == ""

    from llvmlite.binding.module import ModuleRef
    real_verify, calls = ModuleRef.verify, []

    def verify(self):
        calls.append(self)
        if len(calls) == 2:
            raise RuntimeError("Instruction does not dominate all uses!")
        return real_verify(self)

    monkeypatch.setattr(ModuleRef, "verify", verify)
    assert llvm.optimize_here(SMALL_IR, llvm.host(), config) == ("", "Instruction does not dominate all uses!")


def test_optimize_reports_every_pipeline_when_all_abort(monkeypatch):
    def call(op, *args):
        raise llvm_worker.LLVMAborted("Pass.cpp:7: Assertion `y' failed.", -6)

    monkeypatch.setattr(llvm_worker, "call", call)
    with pytest.raises(LLVMCrashError) as err:
        llvm.optimize(SMALL_IR, llvm.host(), "k")
    assert str(err.value).count("Assertion `y' failed") == len(llvm.PIPELINES)
    assert "kernel 'k'" in str(err.value)


@triton.jit
def min_all_axes_kernel(X, Y, S: tl.constexpr):
    # Found by scripts/fuzz.py (seed 6579): LLVM 22's loop vectorizer asserts on the scalar
    # min reduction loop of this kernel.
    x = tl.load(X + tl.arange(0, 2)[:, None, None] * 32 + tl.arange(0, 16)[None, :, None] * S +
                tl.arange(0, 1)[None, None, :])
    tl.store(Y, tl.min(x, axis=None))


def test_a_kernel_llvm_aborts_on_compiles_in_this_process():
    x = (torch.arange(64) % 7 - 3).to(torch.bfloat16)
    y = torch.zeros(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLVMFallbackWarning)  # whether LLVM aborts depends on its version
        min_all_axes_kernel[(1,)](x, y, S=1)
    assert y.item() == torch.cat([x[0:16], x[32:48]]).float().min().item()


@triton.jit
def wrapped_gather_kernel(X, Y):
    r = tl.arange(0, 64)
    v = tl.load(X + ((r - 32) % 32 + 32))  # C remainder: lanes 0-31 read 1-32, the rest 32-63
    tl.store(Y + r, v)


def test_the_retry_after_an_abort_reads_the_tritoncpu_ir_text(monkeypatch):
    """After LLVM aborts in the llir stage, the next pipeline runs in a new worker, which
    parses the ttcir stage's text: it must read back everything the conversion prints.
    Here a vector of pointers (a gather's addresses), which xDSL's vector.extract refused
    (fuzz seed 376437: a backend error instead of the fallback compile)."""
    real_call, tried = llvm_worker.call, []

    def call(op, *args):
        if op == "llir":
            tried.append(args[0])  # the module's handle, None when the text is parsed
            if len(tried) == 1:
                raise llvm_worker.LLVMAborted("LoopVectorize.cpp:1: Assertion `x' failed.", -6)
        return real_call(op, *args)

    monkeypatch.setattr(llvm_worker, "call", call)
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    x, y = torch.randn(64), torch.empty(64)
    with pytest.warns(LLVMFallbackWarning, match="wrapped_gather_kernel"):
        compiled = wrapped_gather_kernel[(1,)](x, y)
    assert "!tt.ptr<f32> from vector<" in compiled.asm["ttcir"]  # what the test is about
    assert len(tried) == 2 and tried[0] is not None and tried[1] is None
    r = torch.arange(64)
    assert torch.equal(y, x[torch.fmod(r - 32, 32) + 32])


def test_in_process_knob(monkeypatch):
    def no_worker(*args):
        raise AssertionError("the LLVM worker was used despite TRITON_CPU_LLVM_IN_PROCESS=1")

    monkeypatch.setenv("TRITON_CPU_LLVM_IN_PROCESS", "1")
    monkeypatch.setattr(llvm_worker, "_current", no_worker)
    assert llvm_worker.in_process()
    assert "fadd" in llvm.optimize(SMALL_IR, llvm.host())


@triton.jit
def scale_kernel(x_ptr, out_ptr, factor: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * factor)


def _compile_in_child(queue):
    x = torch.arange(16, dtype=torch.float32)
    out = torch.empty(16)
    scale_kernel[(1,)](x, out, factor=7.0, BLOCK=16)
    queue.put(torch.equal(out, x * 7.0))


def test_a_forked_child_compiles_with_its_own_worker():
    llvm.optimize(SMALL_IR, llvm.host())  # the parent has a worker
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_compile_in_child, args=(queue,))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert queue.get(timeout=5) is True
    assert "fadd" in llvm.optimize(SMALL_IR, llvm.host())  # the parent's worker still answers


def test_threads_compiling_different_kernels_at_once():
    factors = [2.0, 3.0, 5.0, 11.0]
    results = {}
    x = torch.arange(32, dtype=torch.float32)

    def run(f):
        out = torch.empty(32)
        scale_kernel[(1,)](x, out, factor=f, BLOCK=32)
        results[f] = torch.equal(out, x * f)

    run_in_threads(*(functools.partial(run, f) for f in factors))
    assert results == {f: True for f in factors}


@triton.jit
def add_constant_kernel(x_ptr, out_ptr, C: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + C)


@pytest.mark.skipif(llvm_worker.in_process(), reason="compiles in this process (TRITON_CPU_LLVM_IN_PROCESS)")
def test_the_worker_collects_each_kernels_garbage_after_its_assembly(monkeypatch):
    """The worker runs a request with the cyclic collector off and collects after a kernel's
    last request (serve_loop): during a request it reports the collector off, and twenty
    more kernels leave the objects it tracks about where five left them (uncollected, these
    small kernels' IR added ~17000 objects in reference cycles; collected, ~60)."""
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    x = torch.randn(64)

    def compile_kernels(constants):
        for c in constants:
            out = torch.empty(64)
            add_constant_kernel[(1,)](x, out, C=float(c), BLOCK=64)
            assert torch.equal(out, x + float(c))
    compile_kernels(range(5))
    enabled, before = llvm_worker.call("collector")
    compile_kernels(range(5, 25))
    _, after = llvm_worker.call("collector")
    assert not enabled
    assert after - before < 5_000, (before, after)


# -- the compile stages in the worker (triton_cpu/stages.py) ---------------------------------

@triton.jit
def add_one_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)


def test_the_stages_run_in_the_worker_and_this_process_never_imports_xdsl(tmp_path):
    """A kernel compiled in a fresh process: its ttcir and llir stages ran in the worker (the
    TritonCPU IR came back as text with the worker's handle), and xDSL was not imported here
    (llvmlite's binding is, only when the host CPU is not remembered yet: llvm.host)."""
    import subprocess
    import sys
    script = tmp_path / "child.py"
    script.write_text(
        "import sys, torch, triton, triton.language as tl\n"
        "from triton_cpu import stages\n"
        "seen = []\n"
        "real = stages.ttcir\n"
        "def spy(*a):\n"
        "    out = real(*a)\n"
        "    seen.append(getattr(out[0], 'handle', None))\n"
        "    return out\n"
        "stages.ttcir = spy\n"
        "@triton.jit\n"
        "def k(x_ptr, out_ptr, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)\n"
        "x = torch.arange(8.0); y = torch.empty(8)\n"
        "k[(1,)](x, y, BLOCK=8)\n"
        "assert torch.equal(y, x * 2), y\n"
        "assert seen and seen[0], seen\n"
        "print(sorted(m for m in sys.modules if m == 'xdsl' or m.startswith(('xdsl.', 'triton_cpu.pipeline'))))\n")
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TRITON_CPU_LLVM_IN_PROCESS", None)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_an_llvm_abort_in_the_llir_stage_recompiles_with_the_next_pipeline(monkeypatch, tmp_path):
    """The worker dies in the llir request (simulated for the first pipeline): the stage is
    sent again, with the TritonCPU IR text, to a new worker that starts at the next
    pipeline, and the compile warns."""
    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    real_call = llvm_worker.call
    firsts = []

    def call(op, *args):
        if op == "llir":
            handle, text, options, host, first = args
            firsts.append((first, handle is not None, len(text) > 0))
            if first == 0:
                raise llvm_worker.LLVMAborted("LoopVectorize.cpp:1: Assertion `x' failed.", -6)
        return real_call(op, *args)

    monkeypatch.setattr(llvm_worker, "call", call)
    if llvm_worker.in_process():
        pytest.skip("TRITON_CPU_LLVM_IN_PROCESS=1: the stages run in this process")
    x = torch.arange(16.0)
    out = torch.empty(16)
    with pytest.warns(LLVMFallbackWarning, match="kernel 'add_one_kernel'.*LoopVectorize"):
        add_one_kernel[(1,)](x, out, BLOCK=16)
    assert torch.equal(out, x + 1)
    assert firsts == [(0, True, True), (1, False, True)]


def test_an_error_in_the_worker_keeps_its_type_message_and_traceback():
    """An exception raised by a stage in the worker is raised here as itself, with the
    worker's traceback as a note (an internal error: bad TTIR text)."""
    import types
    if llvm_worker.in_process():
        pytest.skip("TRITON_CPU_LLVM_IN_PROCESS=1: no worker")
    options = types.SimpleNamespace(line_info=False, bounds_check=False, prefetch=True, vector_bits=0)
    with pytest.raises(Exception) as err:
        llvm_worker.call("ttcir", "this is not TTIR", None, options, llvm.host())
    assert type(err.value).__name__ == "ParseError"
    assert any("raised in the compiler worker process" in n and "Traceback" in n
               for n in getattr(err.value, "__notes__", []))
    # The worker survived it.
    assert "fadd" in llvm.optimize(SMALL_IR, llvm.host())
