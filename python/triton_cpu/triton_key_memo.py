"""Stock Triton's `triton_key()`, remembered on disk between processes.

`triton.runtime.cache.triton_key()` is the part of every kernel's cache key that names the
Triton installation: a hash of Triton's Python sources and of its ~500 MB `libtriton.so`.
Triton computes it once per process, on the first kernel, cache hit or not: 0.3-0.4 s on
a 2-core Zen 3, about 40% of a fresh process's first kernel.

Its value depends only on the files it reads, so `install()` replaces it with a function
that looks the value up in a small JSON file keyed by the *stat signature* of those files
(path, size, mtime, inode of every file under triton/compiler, triton/backends,
triton/language, runtime/cache.py and `_C/libtriton*`, plus Triton's version). On a miss
(a first run, or any of the files changed, as a pip upgrade does) it calls the original
function and stores its result: the value is always stock Triton's own, never recomputed
here, so cache keys are unchanged. The file lives in `$TRITON_HOME/.triton/cpu/`
(default `~/.triton/cpu/`); when it cannot be read or written the original runs, as
without this module. `TRITON_CPU_KEY_MEMO=0` leaves Triton's function alone.

Triton itself swaps this function for a constant in its compile-worker processes
(`triton/_compile_warmup_pool.py`); this is the same substitution, made persistent.
"""
import functools
import hashlib
import os
import sysconfig
import threading

from triton_cpu import env_flag, files_under, load_json, store_json

_lock = threading.Lock()


def signature() -> str:
    """A digest of the stat signature of every file stock `triton_key()` reads (and a few
    more of the same directories): any edit, reinstall or upgrade changes it."""
    import triton
    root = os.path.dirname(os.path.abspath(triton.__file__))
    ext = sysconfig.get_config_var("EXT_SUFFIX").split(".")[-1]
    paths = [os.path.join(root, "runtime", "cache.py"), os.path.join(root, "_C", f"libtriton.{ext}")]
    for sub in ("compiler", "backends", "language"):
        paths += files_under(os.path.join(root, sub))
    parts = [triton.__version__]
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            parts.append(f"{p}:missing")
            continue
        parts.append(f"{p}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def memo_path() -> str:
    from triton_cpu import user_path
    return user_path("triton_key.json")


def _read(path: str, sig: str):
    entry = load_json(path)
    if isinstance(entry, dict) and entry.get("signature") == sig and isinstance(entry.get("key"), str):
        return entry["key"]
    return None


def _write(path: str, sig: str, key: str) -> None:
    store_json(path, {"signature": sig, "key": key})


def memoized(original):
    """`original` (stock triton_key) looked up on disk first; stored after a miss."""

    @functools.lru_cache(None)
    def triton_key() -> str:
        with _lock:
            sig = signature()
            path = memo_path()
            key = _read(path, sig)
            if key is None:
                key = original()
                _write(path, sig, key)
            return key

    triton_key.original = original
    return triton_key


def install() -> None:
    """Put the memoized function in place of `triton.runtime.cache.triton_key` (and the
    autotuner's imported name), unless disabled, already installed, or already computed
    in this process (then there is nothing left to save)."""
    if not env_flag("TRITON_CPU_KEY_MEMO", True):
        return
    from triton.runtime import autotuner, cache
    current = cache.triton_key
    if hasattr(current, "original") or getattr(current, "__module__", None) != "triton.runtime.cache":
        return  # ours already, or replaced by Triton's compile workers / someone else
    info = getattr(current, "cache_info", None)
    if info is not None and info().currsize:
        return
    replacement = memoized(current)
    cache.triton_key = replacement
    if getattr(autotuner, "triton_key", None) is current:
        autotuner.triton_key = replacement
