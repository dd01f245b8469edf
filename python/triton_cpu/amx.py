"""Whether kernels of this process may use Intel AMX tiles, and the OS's permission for them.

A bf16 `tl.dot` runs on AMX's tile registers (convert_triton_to_tcpu/dot.py) when the host
has AMX-TILE and AMX-BF16 (LLVM reports them only where the OS saves the tile state; an int8
one when it has AMX-INT8 too) and Linux has granted this process the tile data state:
without that permission the first tile instruction raises SIGILL. The permission is asked for once per process, in the process
that runs the kernels (the backend resolves the `amx` option there, and the driver checks
again when it loads a kernel that uses tiles, `EXPORTED_MARK`).
"""
import functools

# A symbol every kernel library that uses tile instructions defines (codegen/amx_tiles.py).
EXPORTED_MARK = "triton_cpu_uses_amx_tiles"


@functools.lru_cache(None)
def permitted() -> bool:
    """Asks Linux for the AMX tile state (once per process); whether it is granted."""
    from triton_cpu._C import _native
    return bool(_native.request_amx_permission())


def available(host) -> bool:
    """The host has AMX's tiles with bf16 dot products."""
    return host.has("amx-tile") and host.has("amx-bf16")


def resolve(host, requested: bool | None) -> bool:
    """The `amx` option's value for a kernel: False when asked so, else whether tiles can
    run here (the host has them and the process holds the permission, asked for now).
    True where they cannot run falls back to the vector code, as `bf16_dot` does."""
    if requested is False or not available(host):
        return False
    return permitted()
