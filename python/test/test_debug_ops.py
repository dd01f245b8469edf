"""tl.device_print / print and tl.device_assert, end to end."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton
import triton.language as tl


def _run_script(tmp_path, body):
    script = tmp_path / "k.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"))
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def test_device_print_gpu_format(tmp_path):
    lines = _run_script(tmp_path, """
        import torch, triton, triton.language as tl
        @triton.jit
        def k(x_ptr, N: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, N))
            tl.device_print("x: ", x)
            print("pid", tl.program_id(0))
        k[(2,)](torch.tensor([5, -3, 0, 12], dtype=torch.int32), N=4)
    """)
    expected = {f"pid ({p}, 0, 0) idx ({i}) x: {v}" for p in range(2) for i, v in enumerate([5, -3, 0, 12])}
    expected |= {f"pid ({p}, 0, 0) idx () pid: {p}" for p in range(2)}
    assert set(lines) == expected and len(lines) == len(expected)


def test_device_print_2d_hex_and_floats(tmp_path):
    lines = _run_script(tmp_path, """
        import torch, triton, triton.language as tl
        @triton.jit
        def k(x_ptr, y_ptr):
            r = tl.arange(0, 2)[:, None]
            c = tl.arange(0, 16)[None, :]
            x = tl.load(x_ptr + r * 16 + c)
            tl.device_print("h", x, hex=True)
            y = tl.load(y_ptr + tl.arange(0, 2))
            tl.device_print("", y)
        k[(1,)](torch.arange(32, dtype=torch.int16), torch.tensor([1.5, -0.25]))
    """)
    assert "pid (0, 0, 0) idx (0,  0) h: 0x0000" in lines
    assert "pid (0, 0, 0) idx (1, 15) h: 0x001f" in lines
    assert "pid (0, 0, 0) idx (0): 1.500000" in lines
    assert "pid (0, 0, 0) idx (1): -0.250000" in lines


def test_device_print_signedness(tmp_path):
    lines = _run_script(tmp_path, """
        import torch, triton, triton.language as tl
        @triton.jit
        def k(x_ptr):
            x = tl.load(x_ptr + tl.arange(0, 2))
            tl.device_print("s", x)
            tl.device_print("u", x.to(tl.uint8, bitcast=True))
        k[(1,)](torch.tensor([-1, 5], dtype=torch.int8))
    """)
    assert "pid (0, 0, 0) idx (0) s: -1" in lines
    assert "pid (0, 0, 0) idx (0) u: 255" in lines
    assert "pid (0, 0, 0) idx (1) u: 5" in lines


@triton.jit
def assert_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_assert(x > 0, "x must be positive")
    tl.store(x_ptr + tl.arange(0, N), x + 1)


def test_device_assert_raises_and_stops_the_program():
    x = torch.tensor([3, 1, 0, 7], dtype=torch.int32)
    with pytest.raises(RuntimeError) as info:
        assert_kernel[(1,)](x, N=4, debug=True)
    msg = str(info.value)
    assert "device-side assert" in msg and "x must be positive" in msg
    assert f"{__file__}:" in msg and "block: [0, 0, 0]" in msg
    assert torch.equal(x, torch.tensor([3, 1, 0, 7], dtype=torch.int32))  # the store never ran
    ok = torch.tensor([1, 2, 3, 4], dtype=torch.int32)
    assert_kernel[(1,)](ok, N=4, debug=True)  # the next launch works
    assert torch.equal(ok, torch.tensor([2, 3, 4, 5], dtype=torch.int32))


def test_device_assert_is_dropped_without_debug():
    x = torch.tensor([0, 0], dtype=torch.int32)
    assert_kernel[(1,)](x, N=2)  # Triton omits asserts unless debug
    assert torch.equal(x, torch.tensor([1, 1], dtype=torch.int32))


@triton.jit
def overflow_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


def test_integer_overflow_check_in_debug_mode():
    x = torch.tensor([2**31 - 1, 1], dtype=torch.int32)
    y = torch.tensor([1, 1], dtype=torch.int32)
    out = torch.empty(2, dtype=torch.int32)
    with pytest.raises(RuntimeError, match="device-side assert"):
        overflow_kernel[(1,)](x, y, out, N=2, debug=True, sanitize_overflow=True)


@triton.jit
def assert_pid_kernel(x_ptr):
    pid = tl.program_id(0)
    tl.device_assert(pid != 5, "program 5 fails")
    tl.store(x_ptr + pid, pid)


def test_device_assert_reports_the_failing_program():
    x = torch.full((8,), -1, dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"block: \[5, 0, 0\]"):
        assert_pid_kernel[(8,)](x, debug=True)
    assert x[5] == -1
