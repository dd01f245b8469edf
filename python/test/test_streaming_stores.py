"""Streaming (non-temporal) stores: a launch whose tensor stores write more than the
threshold (the last-level cache by default) stores its aligned full vectors past the
caches. Results must be the same either way, aligned or not, masked tails included."""
import platform

import pytest
import torch
import triton
import triton.language as tl

from triton_cpu.backend import driver as D

X86 = platform.machine().lower() in ("x86_64", "amd64")


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)


@triton.jit
def scale_and_count_kernel(x_ptr, y_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + 1.0, mask=m)
    tl.atomic_add(count_ptr, 1)


@pytest.fixture
def threshold():
    """Sets the launcher's streaming threshold for one test, restoring the default."""
    mod = D.launcher_module()
    yield mod.set_streaming_bytes
    mod.set_streaming_bytes(D.streaming_bytes())


@pytest.mark.parametrize("limit", [1, 0])  # 1 byte: every launch streams; 0: none does
@pytest.mark.parametrize("offset", [0, 1, 16])  # output 64-byte aligned, or not
@pytest.mark.parametrize("vector_bits", [256, 512])
def test_results_with_and_without_streaming(threshold, limit, offset, vector_bits):
    threshold(limit)
    n = 100_000 + 37
    x = torch.randn(n)
    out = torch.zeros(n + offset)
    y = out[offset:]
    k = scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, vector_bits=vector_bits)
    torch.testing.assert_close(y, x * 2.0 + 1.0, rtol=0, atol=0)
    assert (out[:offset] == 0).all()
    if X86:
        assert "vmovnt" in k.asm["asm"]


@pytest.mark.skipif(not X86, reason="streaming stores are emitted for x86 only")
def test_no_streaming_in_a_kernel_with_atomics(threshold):
    """x86 orders non-temporal stores with nothing but a fence: a kernel whose programs
    synchronize through atomics keeps cached stores."""
    threshold(1)
    n = 4096
    x = torch.randn(n)
    y = torch.empty(n)
    count = torch.zeros(1, dtype=torch.int32)
    k = scale_and_count_kernel[(n // 512,)](x, y, count, n, BLOCK=512)
    torch.testing.assert_close(y, x * 2.0 + 1.0, rtol=0, atol=0)
    assert count.item() == n // 512
    assert "vmovnt" not in k.asm["asm"]


def test_default_threshold_is_the_last_level_cache(monkeypatch):
    assert D.streaming_bytes() == D.cache_sizes()["l3"]  # 0 (never) when unknown
    monkeypatch.setenv("TRITON_CPU_STREAMING_STORES", "0")
    assert D.streaming_bytes() == 0
