"""The plugin as Triton sees it: discovery, stages and dumps, options, errors."""
import inspect
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

from triton_cpu.errors import UnsupportedError


def test_backend_is_registered_and_active():
    assert "cpu" in triton.backends.backends
    target = triton.runtime.driver.active.get_current_target()
    assert target.backend == "cpu" and target.warp_size == 1


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def test_kernel_dump_writes_every_stage(tmp_path):
    script = tmp_path / "va.py"
    script.write_text(textwrap.dedent("""
        import torch, triton, triton.language as tl
        @triton.jit
        def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
        x = torch.randn(1000); y = torch.randn(1000); o = torch.empty(1000)
        add_kernel[(1,)](x, y, o, 1000, BLOCK=1024)
        assert torch.equal(o, x + y)
    """))
    dump = tmp_path / "dump"
    env = dict(os.environ, TRITON_KERNEL_DUMP="1", TRITON_ALWAYS_COMPILE="1", TRITON_DUMP_DIR=str(dump),
               TRITON_CACHE_DIR=str(tmp_path / "cache"))
    subprocess.run([sys.executable, str(script)], env=env, check=True)
    files = {p.suffix for p in dump.rglob("add_kernel.*")}
    assert {".ttir", ".ttcir", ".llir", ".asm"} <= files, files
    ttcir = next(dump.rglob("add_kernel.ttcir")).read_text()
    assert "tcpu.vload" in ttcir and "tensor<" not in ttcir
    llir = next(dump.rglob("add_kernel.llir")).read_text()
    assert "masked.load" in llir or "load <" in llir


def test_compiled_kernel_metadata_and_stages():
    x = torch.randn(64)
    k = add_kernel.warmup(x, x, x, 64, BLOCK=64, grid=(1,))
    assert set(k.asm) >= {"ttir", "ttcir", "llir", "asm", "so"}
    assert k.metadata.name == "add_kernel"
    assert isinstance(k.asm["so"], bytes) and k.asm["so"][:4] == b"\x7fELF"


def test_options_accept_what_triton_and_inductor_pass():
    x, y = torch.randn(100), torch.randn(100)
    out = torch.empty(100)
    add_kernel[(1,)](x, y, out, 100, BLOCK=128, num_warps=8, num_stages=3, num_ctas=1, maxnreg=None,
                     debug=False, enable_fp_fusion=True, sanitize_overflow=False)
    assert torch.equal(out, x + y)


def test_options_accept_gpu_vendor_tuning_knobs():
    """Autotune configs written for NVIDIA or AMD GPUs pass their knobs (upstream tutorial
    03's AMD configs: matrix_instr_nonkdim, waves_per_eu, kpack): accepted and ignored."""
    from dataclasses import fields
    from triton.backends.amd.compiler import HIPOptions
    from triton.backends.nvidia.compiler import CUDAOptions
    from triton_cpu.backend.compiler import CPUOptions
    ours = {f.name for f in fields(CPUOptions)}
    assert {f.name for f in fields(CUDAOptions)} - ours == set()
    assert {f.name for f in fields(HIPOptions)} - ours == set()
    x, y = torch.randn(100), torch.randn(100)
    out = torch.empty(100)
    add_kernel[(1,)](x, y, out, 100, BLOCK=128, matrix_instr_nonkdim=16, waves_per_eu=2, kpack=2)
    assert torch.equal(out, x + y)


def test_backend_hash_covers_package_and_host():
    from triton_cpu.backend.compiler import CPUBackend
    from triton_cpu import __version__, llvm
    h = CPUBackend(triton.runtime.driver.active.get_current_target()).hash()
    assert __version__ in h and llvm.host().key in h


def test_inductor_target_is_supported():
    from triton.backends.compiler import GPUTarget
    from triton_cpu.backend.compiler import CPUBackend
    assert CPUBackend.supports_target(GPUTarget("cpu", "", 32))


@triton.jit
def asm_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("shfl.sync.bfly.b32 $0, $1, 1, 31, 0xffffffff;", "=r,r", [x], dtype=tl.float32,
                                  is_pure=True, pack=1)
    tl.store(out_ptr + offs, y)


def test_unsupported_op_names_op_kernel_and_line():
    """A warp shuffle in inline assembly cannot run on a CPU: a clear error, not a crash."""
    x = torch.randn(64)
    out = torch.empty(64)
    with pytest.raises(UnsupportedError) as info:
        asm_kernel[(1,)](x, out, BLOCK=64)
    msg = str(info.value)
    src, first = inspect.getsourcelines(asm_kernel.fn)
    line = first + next(i for i, text in enumerate(src) if "inline_asm_elementwise" in text)
    assert "tt.elementwise_inline_asm" in msg and "shfl.sync.bfly.b32" in msg
    assert "asm_kernel" in msg
    assert f"{__file__}:{line}" in msg
    # The process is fine and the next kernel works.
    y = torch.randn(64)
    add_kernel[(1,)](x, y, out, 64, BLOCK=64)
    assert torch.equal(out, x + y)


def test_per_launch_num_threads_option():
    n = 1 << 16
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    add_kernel[(64,)](x, y, out, n, BLOCK=1024, num_threads=1)
    assert torch.equal(out, x + y)


@pytest.mark.parametrize("bits", [128, 256, 512])
def test_vector_width_option(bits):
    """The lowering is correct for every SIMD width (LLVM legalizes wider vectors)."""
    n = 1000
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    add_kernel[(1,)](x, y, out, n, BLOCK=1024, vector_bits=bits)
    assert torch.equal(out, x + y)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


@pytest.mark.parametrize("enabled", [True, False])
def test_python_stages_pause_the_garbage_collector(monkeypatch, enabled):
    """The Python stages run with the cyclic collector paused (their transient IR objects
    are not promoted to the oldest generation) and leave it as they found it."""
    import gc
    from triton_cpu.backend.compiler import CPUBackend
    seen = []
    make_ttcir = CPUBackend.make_ttcir

    def spy(*args):
        seen.append(gc.isenabled())
        return make_ttcir(*args)
    monkeypatch.setattr(CPUBackend, "make_ttcir", staticmethod(spy))
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        x = torch.randn(48)
        out = torch.empty(48)
        scale_kernel[(1,)](x, out, 48, BLOCK=64 if enabled else 128)  # compiled by this test only
        assert torch.equal(out, x * 3.0)
        assert seen == [False] and gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


LINK_SCRIPT = textwrap.dedent("""
    import torch, triton, triton.language as tl
    from triton_cpu import llvm

    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        # exp inline, log from the vector math library, fp16 through the runtime's helpers
        y = tl.exp(x) + tl.log(tl.abs(x) + 1.0) + x.to(tl.float16).to(tl.float32)
        tl.store(out_ptr + offs, y, mask=mask)

    x = torch.randn(1000)
    out = torch.empty(1000)
    k[(4,)](x, out, 1000, BLOCK=256)
    ref = torch.exp(x) + torch.log(x.abs() + 1.0) + x.half().float()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    print("direct" if llvm._binutils() is not None else "driver")
""")


@pytest.mark.parametrize("env,path", [({}, "direct"), ({"CC": "cc"}, "driver"),
                                      ({"TRITON_CPU_DIRECT_LINK": "0"}, "driver")])
def test_kernels_link_with_binutils_or_the_compiler_driver(tmp_path, env, path):
    """A kernel's object is linked by `as` and `ld` directly, or by `$CC` when CC is set or
    TRITON_CPU_DIRECT_LINK=0; both give a kernel that loads and computes the same."""
    script = tmp_path / "link.py"
    script.write_text(LINK_SCRIPT)
    full_env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"), **env)
    for name in ("CC", "TRITON_CPU_DIRECT_LINK"):
        if name not in env:
            full_env.pop(name, None)
    res = subprocess.run([sys.executable, str(script)], env=full_env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.split()[-1] == path


def test_libraries_linked_are_those_the_kernel_refers_to():
    """ld reads a library only when the assembly refers to a symbol it may define (the
    runtime is always linked, SLEEF apart): libm's symbol table alone is half of a link."""
    from triton_cpu import llvm
    got = "\tmovq\ttcpu_streaming_bytes@GOTPCREL(%rip), %rax\n"
    assert llvm._libraries("k:\n" + got + "\tretq\n") == []
    assert llvm._libraries("k:\n\tcallq\t_ZGVdN8v_logf@PLT\n") == ["mvec"]
    assert llvm._libraries("k:\n\tcallq\tsinf@PLT\n\tcallq\t__truncsfhf2@PLT\n") == ["m", "gcc"]
    assert llvm._libraries("k:\n\tcallq\tSleef_expf8_u10avx2@PLT\n\tjmp\tk@PLT\n") == []
    assert llvm._libraries("k:\n\tcallq\t*memset@GOTPCREL(%rip)\n") == ["m"]  # libc: harmless


@triton.jit
def _libm_and_sleef_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, CASE: tl.constexpr):
    # CASE (unused) gives each test case its own compilation: Triton keeps compiled kernels
    # in memory whatever TRITON_CACHE_DIR says.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.store(out_ptr + offs, tl.log(x) + libdevice.pow(x, x), mask=offs < n)


@pytest.mark.parametrize("stubs", [True, False])
@pytest.mark.parametrize("math_lib", ["sleef", "libmvec", "scalar"])
def test_kernels_name_the_libraries_they_call(stubs, math_lib, monkeypatch, tmp_path):
    """A kernel that calls SLEEF, libmvec or libm names each library it calls (DT_NEEDED, by
    its real SONAME) and loads and computes right, whether ld linked the stubs
    (llvm._link_stub) or, when they cannot be made, the libraries themselves."""
    from triton_cpu import llvm, sleef
    if math_lib == "sleef" and not sleef.available():
        pytest.skip("SLEEF is not installed")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    if stubs:
        monkeypatch.setenv("TRITON_HOME", str(tmp_path))
    else:
        monkeypatch.setattr(llvm, "_link_stub", lambda *args: None)
    x = torch.rand(100) + 0.5
    out = torch.empty(100)
    k = _libm_and_sleef_kernel[(1,)](x, out, 100, BLOCK=128, CASE=f"{stubs}-{math_lib}", math_lib=math_lib)
    torch.testing.assert_close(out, torch.log(x) + torch.pow(x, x), rtol=1e-5, atol=1e-5)
    needed = llvm.elf_dynamic_strings(k.kernel, 1)
    want = {"sleef": llvm._elf_soname(sleef.library_path()) if sleef.available() else None,
            "libmvec": "libmvec.so.1", "scalar": "libm.so.6"}[math_lib]
    assert want in needed and "libTritonCPURuntime.so" in needed
    assert ("Sleef_" in k.asm["asm"]) == (math_lib == "sleef")
    if stubs and llvm._binutils() is not None:  # (stubs are for ld run directly only)
        made = (tmp_path / ".triton" / "cpu" / "link-stubs").glob("*.stub")
        assert want in {llvm._elf_soname(str(p)) for p in made}


def test_the_host_cpu_is_remembered_per_machine(tmp_path):
    """The first process detects the host through LLVM and stores it; the next reads it from
    $TRITON_HOME/.triton/cpu/host.json without loading llvmlite's binding, and gets the
    same host (compared with LLVM's own detection); an unreadable file is detected again."""
    script = textwrap.dedent("""
        import sys, triton
        from triton_cpu import llvm
        h = llvm.host()
        loaded = "llvmlite.binding" in sys.modules
        detected = llvm._detect_host()
        print(h == detected, loaded)
    """)
    env = dict(os.environ, TRITON_HOME=str(tmp_path))

    def run():
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run() == ["True", "True"]  # detected, stored
    memo = tmp_path / ".triton" / "cpu" / "host.json"
    assert memo.exists()
    assert run() == ["True", "False"]  # read back: no LLVM loaded for it
    memo.write_text("{not json")
    assert run() == ["True", "True"]


@triton.jit
def scalars_kernel(ints_ptr, floats_ptr, b: tl.int1, i8: tl.int8, u8: tl.uint8, i16: tl.int16, u16: tl.uint16,
                   i32: tl.int32, u32: tl.uint32, i64: tl.int64, u64: tl.uint64, h: tl.float16,
                   bf: tl.bfloat16, f: tl.float32, d: tl.float64):
    tl.store(ints_ptr + 0, b.to(tl.int64))
    tl.store(ints_ptr + 1, i8.to(tl.int64))
    tl.store(ints_ptr + 2, u8.to(tl.int64))
    tl.store(ints_ptr + 3, i16.to(tl.int64))
    tl.store(ints_ptr + 4, u16.to(tl.int64))
    tl.store(ints_ptr + 5, i32.to(tl.int64))
    tl.store(ints_ptr + 6, u32.to(tl.int64))
    tl.store(ints_ptr + 7, i64)
    tl.store(ints_ptr + 8, u64.to(tl.int64, bitcast=True))
    tl.store(floats_ptr + 0, h.to(tl.float64))
    tl.store(floats_ptr + 1, bf.to(tl.float64))
    tl.store(floats_ptr + 2, f.to(tl.float64))
    tl.store(floats_ptr + 3, d)


def test_scalar_arguments_of_every_type_reach_the_kernel():
    """The kernel loads its arguments from the launcher's slots at entry (runtime.h): each
    scalar type at its width and signedness, fp16 and bf16 from their 16-bit patterns."""
    ints = torch.zeros(9, dtype=torch.int64)
    floats = torch.zeros(4, dtype=torch.float64)
    ivals = [True, -100, 200, -30000, 60000, -2_000_000_000, 4_000_000_000, -(2**62) - 7, 2**63 + 5]
    fvals = [1.0 / 3, -1.0 / 3, 1.0 / 7, 1.0 / 11]
    scalars_kernel[(1, )](ints, floats, *ivals, *fvals)
    assert ints.tolist() == [1, -100, 200, -30000, 60000, -2_000_000_000, 4_000_000_000, -(2**62) - 7,
                             2**63 + 5 - 2**64]
    expected = [torch.tensor(fvals[0], dtype=torch.float16).item(), torch.tensor(fvals[1], dtype=torch.bfloat16).item(),
                torch.tensor(fvals[2], dtype=torch.float32).item(), fvals[3]]
    assert floats.tolist() == expected
