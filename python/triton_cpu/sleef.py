"""Where SLEEF is, what it exports, and which math library kernels use.

SLEEF is found by CMake when the package is built (CMakeLists.txt writes the library's path
and version to `_C/build_config.json`). It is optional: without it, kernels call glibc's
libmvec and, for what libmvec lacks, scalar libm per lane (codegen/math_lib.py).

The library a kernel uses is the `math_lib` compile option, resolved here: a launch keyword
(`math_lib="libmvec"`), else the TRITON_CPU_MATH_LIB environment variable, else "auto"
(SLEEF when found, libmvec otherwise). Being a compile option, it is part of the kernel
cache key. `python -m triton_cpu` prints the choice.
"""
import ctypes
import functools
import json
import os

CONFIG_PATH = os.path.join(os.path.dirname(__file__), "_C", "build_config.json")
LIBRARIES = ("sleef", "libmvec", "scalar")


@functools.lru_cache(None)
def build_config() -> dict:
    """What CMake found at install time ({} for a build that predates the file)."""
    try:
        with open(CONFIG_PATH) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


@functools.lru_cache(None)
def _handle():
    path = build_config().get("sleef_library")
    if not path:
        return None
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None  # removed since the package was built: `status()` says so


def library_path() -> str | None:
    """The SLEEF shared library kernels link, or None when SLEEF is unavailable."""
    return build_config().get("sleef_library") if _handle() is not None else None


def available() -> bool:
    return _handle() is not None


def version() -> str | None:
    return build_config().get("sleef_version") if available() else None


@functools.lru_cache(None)
def exports(symbol: str) -> bool:
    """Does the SLEEF found at install time export `symbol`?"""
    lib = _handle()
    return lib is not None and hasattr(lib, symbol)


def status() -> str:
    """One line for diagnostics: SLEEF's path and version, or why it is not used."""
    path = build_config().get("sleef_library")
    if path is None:
        return "not found when the package was built (install libsleef-dev and reinstall)"
    if not available():
        return f"{path} was found at build time but cannot be loaded now"
    return f"{path} (version {version() or 'unknown'})"


def resolve(requested: str | None) -> str:
    """The math library a kernel compiles against: `requested` (an option value or None),
    else TRITON_CPU_MATH_LIB, else auto. Raises ValueError for an unknown name or for
    "sleef" when SLEEF is unavailable (a silent fallback would misreport the accuracy)."""
    choice = (requested or os.environ.get("TRITON_CPU_MATH_LIB", "") or "auto").strip().lower()
    if choice == "auto":
        return "sleef" if available() else "libmvec"
    if choice not in LIBRARIES:
        raise ValueError(f"math_lib / TRITON_CPU_MATH_LIB must be one of auto, {', '.join(LIBRARIES)}; "
                         f"got {choice!r}")
    if choice == "sleef" and not available():
        raise ValueError(f"math_lib='sleef' was requested but SLEEF is {status()}")
    return choice
