"""triton_cpu: a CPU backend for stock Triton.

The compiler lives in the subpackages (`dialects`, `analysis`, `transforms`,
`codegen`, `llvm`); the plugin Triton loads is `triton_cpu.backend`.
"""
__version__ = "0.1.0"


def env_flag(name: str, default: bool) -> bool:
    """An on/off environment variable (1/true/on/yes, 0/false/off/no, any case); anything
    else, or unset, is `default`."""
    import os
    value = os.environ.get(name, "").strip().lower()
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    return default


def user_path(*parts: str) -> str:
    """A path under this backend's per-user directory, `$TRITON_HOME/.triton/cpu` (what
    it keeps between processes: Triton's installation hash, link stubs)."""
    import os
    from triton import knobs
    return os.path.join(knobs.cache.home_dir, ".triton", "cpu", *parts)
