"""Ops that compute nothing on a CPU.

ttg.barrier (`tl.debug_barrier`) orders the threads of one GPU program; here a program
runs on one thread, in program order, so it is dropped. (llvm.intr.assume, which Triton
only allows on scalars, needs no lowering: it stays for the code generator, which emits
LLVM's assume.)
"""
from xdsl.ir import Operation


def drop(low, op: Operation):
    op.detach()
    op.erase()
