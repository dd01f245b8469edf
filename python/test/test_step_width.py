"""The loop step: one native register of lanes instead of two when that turns a gather or
scatter into a vector access (tiles whose rows are 16 elements, read at 512 bits)."""
import pytest
import torch
import triton
import triton.language as tl


@triton.jit
def rows_of_16_kernel(x, y, stride_x, stride_y, n_rows, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    row, col = i // 16, i % 16
    m = row < n_rows
    v = tl.load(x + row * stride_x + col, mask=m, other=0.0)
    tl.store(y + row * stride_y + col, v * 3.0, mask=m)


@pytest.mark.parametrize("vector_bits", [256, 512])
@pytest.mark.parametrize("n_rows", [8, 13])
def test_rows_of_16(vector_bits, n_rows):
    x = torch.randn(n_rows, 48)
    y = torch.zeros(n_rows, 32)
    k = rows_of_16_kernel[(triton.cdiv(n_rows * 16, 64),)](x, y, 48, 32, n_rows, B=64, vector_bits=vector_bits)
    expected = torch.zeros(n_rows, 32)
    expected[:, :16] = x[:, :16] * 3.0
    torch.testing.assert_close(y, expected, rtol=0, atol=0)
    ir = k.asm["ttcir"]
    assert "tcpu.gather" not in ir and "tcpu.scatter" not in ir
    assert "vector<16xf32>" in ir
