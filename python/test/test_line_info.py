"""DWARF line tables from the kernel's source lines: gdb breaks on `kernel.py:LINE`, and
TRITON_DISABLE_LINE_INFO turns them off as for the GPU backends."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest
import torch

import triton
import triton.language as tl

from conftest import source_line

KERNEL = textwrap.dedent("""\
    import torch, triton, triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)

    x, y, out = torch.randn(4096), torch.randn(4096), torch.empty(4096)
    add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    print("correct" if torch.equal(out, x + y) else "WRONG")
""")
# The store's line: a store is always an instruction of its own. (A load's line can be left
# without an instruction in the unmasked path: x86 folds the load into the add, which
# carries the add's line, and only the masked path keeps the load's line.)
STORE_LINE = 10


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed (apt-get install gdb)")
def test_gdb_breaks_on_a_kernel_source_line(tmp_path):
    script = tmp_path / "vector_add.py"
    script.write_text(KERNEL)
    commands = tmp_path / "gdb.cmds"
    commands.write_text(textwrap.dedent(f"""\
        set breakpoint pending on
        set pagination off
        set auto-load safe-path /
        break vector_add.py:{STORE_LINE}
        run
        bt 2
        delete
        continue
    """))
    env = dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1",
               TRITON_CPU_NUM_THREADS="1")
    env.pop("TRITON_DISABLE_LINE_INFO", None)
    res = subprocess.run(["gdb", "-batch", "-nx", "-x", str(commands), "--args", sys.executable, str(script)],
                         env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out = res.stdout
    assert f"Breakpoint 1, add_kernel () at vector_add.py:{STORE_LINE}" in out, out[-3000:] + res.stderr[-2000:]
    assert re.search(rf"^{STORE_LINE}\s+tl.store\(out_ptr \+ offs, x \+ y, mask=mask\)$", out, re.M), out[-3000:]
    # The kernel is the launcher's entry itself: its caller is the launcher's program loop.
    assert "#0  add_kernel () at vector_add.py" in out, out[-3000:]
    assert re.search(r"^#1  .* in run_range", out, re.M), out[-3000:]
    assert "correct" in out  # the kernel ran to completion after the breakpoint


@triton.jit
def scale_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.exp(x) * 2.0)


def test_llvm_ir_carries_the_kernel_lines():
    x, out = torch.randn(64), torch.empty(64)
    k = scale_kernel[(1,)](x, out, BLOCK=64)
    torch.testing.assert_close(out, torch.exp(x) * 2.0)
    llir = k.asm["llir"]
    def_line = source_line(scale_kernel, "def scale_kernel")[0]
    load_line = source_line(scale_kernel, "x = tl.load")[0]
    store_line = source_line(scale_kernel, "tl.store")[0]
    assert re.search(rf'!DISubprogram\(name: "scale_kernel".*line: {def_line},', llir)
    assert 'filename: "test_line_info.py"' in llir
    assert "emissionKind: LineTablesOnly" in llir
    for line in (load_line, store_line):
        assert re.search(rf"!DILocation\(line: {line}, column: \d+, scope: !\d+\)", llir), line
    assert "!dbg" in llir


@triton.jit
def scale_kernel_no_lines(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)


def test_disable_line_info_knob(monkeypatch):
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "1")
    x, out = torch.randn(64), torch.empty(64)
    k = scale_kernel_no_lines[(1,)](x, out, BLOCK=64)
    torch.testing.assert_close(out, x * 2.0)
    assert "!dbg" not in k.asm["llir"] and "DICompileUnit" not in k.asm["llir"]
    assert k.metadata.line_info is False


@triton.jit
def cat_descriptor_kernel(x_desc, y_desc, z_desc, dim: tl.constexpr):
    z = tl.cat(x_desc.load([0]), y_desc.load([0]), dim=dim)
    z_desc.store([0], z)


def test_line_zero_locations_assemble():
    # Code LLVM gives no line (line 0) before the prologue: once made the assembler fail
    # ("unassigned file number 1") with DWARF 5 line tables.
    from triton.tools.tensor_descriptor import TensorDescriptor
    x, y, z = torch.rand(128), torch.rand(128), torch.empty(256)
    cat_descriptor_kernel[(1,)](TensorDescriptor.from_tensor(x, block_shape=[128]),
                                TensorDescriptor.from_tensor(y, block_shape=[128]),
                                TensorDescriptor.from_tensor(z, block_shape=[256]), dim=0)
    assert torch.equal(z, torch.cat([x, y]))
