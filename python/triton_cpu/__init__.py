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
    it keeps between processes: Triton's installation hash, the host CPU, link stubs)."""
    import os
    from triton import knobs
    return os.path.join(knobs.cache.home_dir, ".triton", "cpu", *parts)


def load_json(path: str):
    """The JSON value stored at `path`, or None when it cannot be read or parsed."""
    import json
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def store_json(path: str, value) -> None:
    """Writes `value` to `path` atomically (another process reads the old file or the new
    one, never a part); a directory or disk that refuses it is ignored (these files are
    memos: without them the value is computed again)."""
    import json
    import os
    import threading
    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(value, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def files_under(root: str):
    """Every file below `root` in a fixed order (sorted, `__pycache__` left out): what a
    signature of installed sources stats."""
    import os
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            yield os.path.join(dirpath, name)
