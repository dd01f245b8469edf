"""Errors the compiler reports to users."""


def _location(op):
    if op is None:
        return None
    from triton_cpu.dialects.ttir import user_location
    # The user's line, not a frame inside Triton's library an op was inlined from.
    while op is not None:
        loc = user_location(op)
        if loc is not None:
            return loc
        op = op.parent_op()
    return None


class UnsupportedError(RuntimeError):
    """A construct the CPU backend cannot compile; names the op, the kernel and the source line."""

    def __init__(self, message: str, kernel: str | None = None, location=None, op_name: str | None = None):
        super().__init__(message)
        self.kernel = kernel
        self.location = location
        self.op_name = op_name

    @classmethod
    def at(cls, op, kernel: str, what: str) -> "UnsupportedError":
        loc = _location(op)
        where = f"{loc[0]}:{loc[1]}" if loc else "<unknown location>"
        name = op.name if op is not None else None
        msg = (f"triton-cpu: {what} is not supported by the CPU backend yet\n"
               f"  in kernel '{kernel}' at {where}")
        if name:
            msg += f"\n  (TTIR op '{name}')"
        return cls(msg, kernel, loc, name)


class LLVMCrashError(RuntimeError):
    """LLVM aborted (an assertion of llvmlite's LLVM) on a kernel we emitted: a compiler bug,
    reported with LLVM's message instead of ending the user's process."""


class LLVMFallbackWarning(UserWarning):
    """LLVM aborted on a kernel with the O3 pipeline and a more conservative one compiled it."""
