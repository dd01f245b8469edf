"""Constructs that other people's kernels use and that Triton prints with ops of other
dialects or vendor libraries: tl.debug_barrier (`ttg.barrier`), tl.assume
(`llvm.intr.assume`), tensor constants with distinct elements, GPU vendor libdevice
modules and hand-written vendor extern calls. Each against torch."""
import os

import pytest
import torch
import triton
import triton.language as tl
from triton.language import core
from triton.language.extra.cuda import libdevice as cuda_libdevice
from triton.language.extra.hip import libdevice as hip_libdevice


@triton.jit
def barrier_kernel(x_ptr, tmp_ptr, out_ptr, N: tl.constexpr):
    """Liger's cross entropy pattern: write, barrier, read back."""
    offs = tl.arange(0, N)
    tl.store(tmp_ptr + offs, tl.load(x_ptr + offs) * 2)
    tl.debug_barrier()
    tl.store(out_ptr + offs, tl.load(tmp_ptr + N - 1 - offs) + 1)


def test_debug_barrier():
    x = torch.randn(64)
    tmp, out = torch.empty(64), torch.empty(64)
    barrier_kernel[(1,)](x, tmp, out, N=64)
    assert torch.equal(out, (x * 2).flip(0) + 1)


@triton.jit
def assume_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.assume(pid >= 0)
    tl.assume(n % BLOCK == 0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_assume():
    x = torch.randn(256)
    out = torch.empty(256)
    k = assume_kernel[(4,)](x, out, 256, BLOCK=64)
    assert torch.equal(out, x + 1)
    assert "llvm.intr.assume" in k.asm["ttir"]
    assert "llvm.assume" in k.asm["llir"]


_TABLE_TTIR = """
module {
  tt.func public @table(%o: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %m: !tt.ptr<i8> {tt.divisibility = 16 : i32}) {
    %t = arith.constant dense<[[0.5, -1.0, 2.0, 0x7F800000], [3.0, 0.0, -0.25, 0xFF800000]]> : tensor<2x4xf32>
    %b = arith.constant dense<[[true, false, true, true], [false, false, true, false]]> : tensor<2x4xi1>
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
    %c = tt.make_range {end = 2 : i32, start = 0 : i32} : tensor<2xi32>
    %c4 = arith.constant dense<4> : tensor<2x1xi32>
    %ce = tt.expand_dims %c {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
    %cm = arith.muli %ce, %c4 : tensor<2x1xi32>
    %re = tt.expand_dims %r {axis = 0 : i32} : tensor<4xi32> -> tensor<1x4xi32>
    %cb = tt.broadcast %cm : tensor<2x1xi32> -> tensor<2x4xi32>
    %rb = tt.broadcast %re : tensor<1x4xi32> -> tensor<2x4xi32>
    %off = arith.addi %cb, %rb : tensor<2x4xi32>
    %os = tt.splat %o : !tt.ptr<f32> -> tensor<2x4x!tt.ptr<f32>>
    %op = tt.addptr %os, %off : tensor<2x4x!tt.ptr<f32>>, tensor<2x4xi32>
    tt.store %op, %t : tensor<2x4x!tt.ptr<f32>>
    %ms = tt.splat %m : !tt.ptr<i8> -> tensor<2x4x!tt.ptr<i8>>
    %mp = tt.addptr %ms, %off : tensor<2x4x!tt.ptr<i8>>, tensor<2x4xi32>
    %bi = arith.extui %b : tensor<2x4xi1> to tensor<2x4xi8>
    tt.store %mp, %bi : tensor<2x4x!tt.ptr<i8>>
    tt.return
  }
}
"""


def test_tensor_constant_with_distinct_elements(tmp_path):
    """`arith.constant dense<[...]>` (Triton folds e.g. causal masks of constant ranges
    into such constants): compiled from TTIR text, as Triton's own tools allow."""
    path = tmp_path / "table.ttir"
    path.write_text(_TABLE_TTIR)
    k = triton.compile(str(path))
    out, mask = torch.empty(2, 4), torch.empty(2, 4, dtype=torch.int8)
    k[(1, 1, 1)](out, mask)
    inf = float("inf")
    assert torch.equal(out, torch.tensor([[0.5, -1.0, 2.0, inf], [3.0, 0.0, -0.25, -inf]]))
    assert torch.equal(mask, torch.tensor([[1, 0, 1, 1], [0, 0, 1, 0]], dtype=torch.int8))


@triton.jit
def vendor_libdevice_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, HIP: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if HIP:
        r = hip_libdevice.erf(x) + hip_libdevice.pow(tl.abs(x), y) + hip_libdevice.rsqrt(tl.abs(y) + 1)
    else:
        r = cuda_libdevice.erf(x) + cuda_libdevice.pow(tl.abs(x), y) + cuda_libdevice.rsqrt(tl.abs(y) + 1)
        r += cuda_libdevice.tanh(x) + cuda_libdevice.isnan(x / y).to(tl.float32)
    tl.store(out_ptr + offs, r)


@pytest.mark.parametrize("hip", [False, True], ids=["cuda", "hip"])
def test_vendor_libdevice_modules(hip):
    """FlagGems imports triton.language.extra.cuda.libdevice: the backend maps it (and
    HIP's) onto the CPU libdevice, so the calls compile to libm/libmvec, not __nv_*."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(64, generator=g), torch.randn(64, generator=g)
    x[3], y[3] = 0.0, 0.0
    out = torch.empty(64)
    k = vendor_libdevice_kernel[(1,)](x, y, out, N=64, HIP=hip)
    ref = torch.erf(x) + x.abs().pow(y) + torch.rsqrt(y.abs() + 1)
    if not hip:
        ref += torch.tanh(x) + torch.isnan(x / y).float()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert "__nv_" not in k.asm["ttir"] and "__ocml_" not in k.asm["ttir"]


@core.extern
def _nv_erf(x, _semantic=None):
    return core.extern_elementwise("libdevice", "/nonexistent/libdevice.10.bc", [x],
                                   {(core.float32, ): ("__nv_erff", core.float32),
                                    (core.float64, ): ("__nv_erf", core.float64)}, is_pure=True, _semantic=_semantic)


@core.extern
def _ocml_pow(x, y, _semantic=None):
    return core.extern_elementwise("ocml", "/nonexistent/ocml.bc", [x, y],
                                   {(core.float32, core.float32): ("__ocml_pow_f32", core.float32)}, is_pure=True,
                                   _semantic=_semantic)


@core.extern
def _nv_fast_exp(x, _semantic=None):
    return core.extern_elementwise("libdevice", "/nonexistent/libdevice.10.bc", [x],
                                   {(core.float32, ): ("__nv_fast_expf", core.float32)}, is_pure=True,
                                   _semantic=_semantic)


@triton.jit
def direct_extern_kernel(x_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if OP == "erf":
        r = _nv_erf(x)
    elif OP == "pow":
        r = _ocml_pow(tl.abs(x), x)
    else:
        r = _nv_fast_exp(x)
    tl.store(out_ptr + offs, r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_direct_vendor_extern_maps_to_libm(dtype):
    x = torch.randn(64, dtype=dtype)
    out = torch.empty_like(x)
    direct_extern_kernel[(1,)](x, out, N=64, OP="erf")
    torch.testing.assert_close(out, torch.erf(x))
    if dtype == torch.float32:
        direct_extern_kernel[(1,)](x, out, N=64, OP="pow")
        torch.testing.assert_close(out, x.abs().pow(x))


def test_unknown_extern_is_a_compile_error():
    """A vendor function with no CPU counterpart fails to compile, naming the function,
    the kernel and the line (not an undefined symbol when the kernel is loaded)."""
    x = torch.randn(64)
    with pytest.raises(Exception) as info:
        direct_extern_kernel[(1,)](x, torch.empty(64), N=64, OP="fast_exp")
    text = str(info.value)
    assert "__nv_fast_expf" in text and "direct_extern_kernel" in text
    assert f"{os.path.basename(__file__)}:" in text
