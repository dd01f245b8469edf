"""The compiler worker: LLVM, and the compiler's Python stages, in a helper process.

llvmlite's LLVM is built with assertions enabled: when a pass trips one on a kernel we emit
(LLVM 22's loop vectorizer does on some scalar min/max reduction loops), LLVM calls abort()
and, run in-process, would take the user's interpreter with it (their notebook, training job,
test session). The compile stages therefore run in one long-lived worker process per user
process: the ttcir and llir stages whole (stages.py: TTIR text in, TritonCPU IR and LLVM IR
text out; the worker also imports the compiler, ~0.45 s, while the user's process runs
Triton's frontend), and the assembly (`llvm.to_asm`). When the worker dies on a request the
caller gets `LLVMAborted` carrying what LLVM printed, and the next request starts a fresh
worker; `stages.llir` and `llvm.optimize` use that to retry with a more conservative
pipeline.

Protocol: length-prefixed pickles over the worker's stdin and stdout, one request at a time (a
lock serializes threads). A reply carries the result, or the exception (pickled with its
traceback text, which becomes a note of the exception raised here; by type name and message
when it does not pickle), and the warnings the request issued, issued again here. The
worker's stderr goes to a temporary file, copied to ours after each request and read for
LLVM's message when the worker dies. The worker runs in its own session, so Ctrl-C reaches
only the user's process; it exits when its stdin closes, i.e. when the user's process exits.
A process forked from the user's starts its own worker.

`TRITON_CPU_LLVM_IN_PROCESS=1` runs everything in the calling process instead (to debug the
compiler under pdb or LLVM under gdb); so does a Python whose `sys.executable` cannot be
started.
"""
import atexit
import builtins
import gc
import os
import pickle
import re
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
import warnings

from triton_cpu import env_flag
from triton_cpu.errors import UnsupportedError

_HEADER = struct.Struct("<Q")


class LLVMAborted(RuntimeError):
    """The worker process died while LLVM ran a request (an LLVM assertion or crash)."""

    def __init__(self, detail: str, returncode: int):
        self.detail = detail
        self.returncode = returncode
        super().__init__(f"LLVM worker exited with status {returncode}: {detail}")


def _operations():
    from triton_cpu import llvm, stages
    # "abort" does what a failing LLVM assertion does: tests use it to check the crash path.
    return {"optimize": llvm.optimize_here, "asm": llvm.asm_here, "ttcir": stages.ttcir_here,
            "llir": stages.llir_here, "abort": os.abort}


_in_worker = False  # set in the worker process: its own requests run where they are


def in_process() -> bool:
    return _in_worker or _spawn_failed or env_flag("TRITON_CPU_LLVM_IN_PROCESS", False)


def llvm_message(stderr: str) -> str:
    """The line of an LLVM crash report that says what failed (assertion or fatal error)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for marker in ("Assertion", "LLVM ERROR", "UNREACHABLE"):
        for ln in lines:
            if marker in ln:
                # "python: /path/of/the/llvm/build/Pass.cpp:123: ..." -> "Pass.cpp:123: ..."
                return re.sub(r"^\S+: /\S*/(?=[^/\s]+:\d+: )", "", ln)
    return lines[-1] if lines else "no message"


def _import_roots():
    """Directories the worker needs on its path: where this package and llvmlite live."""
    import llvmlite
    roots = []
    for mod in (sys.modules[__name__.split(".")[0]], llvmlite):
        root = os.path.dirname(os.path.dirname(os.path.abspath(mod.__file__)))
        if root not in roots:
            roots.append(root)
    return roots


class _Worker:
    def __init__(self):
        self.owner = os.getpid()
        self.stderr = tempfile.TemporaryFile()
        self.forwarded = 0
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(_import_roots() + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        # -P (Python 3.11+): the current directory is not put first on the worker's path.
        flags = ["-P"] if sys.version_info >= (3, 11) else []
        self.proc = subprocess.Popen([sys.executable, *flags, "-m", __name__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env, close_fds=True,
                                     start_new_session=True)

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def request(self, op: str, args: tuple):
        payload = pickle.dumps((op, args), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(_HEADER.pack(len(payload)) + payload)
            self.proc.stdin.flush()
            head = self.proc.stdout.read(_HEADER.size)
            body = self.proc.stdout.read(_HEADER.unpack(head)[0]) if len(head) == _HEADER.size else b""
            if not body:
                raise EOFError
        except (BrokenPipeError, EOFError):
            code = self.proc.wait()
            raise LLVMAborted(llvm_message(self._new_stderr()), code) from None
        except BaseException:
            # Interrupted mid-request (KeyboardInterrupt): the reply would desynchronize the pipe.
            self.close(kill=True)
            raise
        sys.stderr.write(self._new_stderr())
        reply = pickle.loads(body)
        for category, message in reply[-1]:  # the warnings the request issued
            warnings.warn(message, category, stacklevel=4)
        if reply[0] == "ok":
            return reply[1]
        if reply[0] == "exc":  # the exception itself, pickled
            exc, trace = reply[1], reply[2]
            # A user error needs no compiler traceback; add_note is Python 3.11's.
            if not isinstance(exc, UnsupportedError) and hasattr(exc, "add_note"):
                exc.add_note(f"(raised in the compiler worker process)\n{trace}")
            raise exc
        exc_type = getattr(builtins, reply[1], None)
        if not (isinstance(exc_type, type) and issubclass(exc_type, Exception)):
            exc_type = RuntimeError
        raise exc_type(reply[2])

    def _new_stderr(self) -> str:
        self.stderr.seek(self.forwarded)
        data = self.stderr.read()
        self.forwarded += len(data)
        return data.decode(errors="replace")

    def close(self, kill=False):
        if self.owner != os.getpid():
            return  # a forked child must not stop its parent's worker
        try:
            if kill:
                self.proc.kill()
            else:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except Exception:  # noqa: BLE001 (a broken pipe is closed all the same)
                pass
        self.stderr.close()


_lock = threading.Lock()
_worker = None
_spawn_failed = False


def _reset_after_fork():
    global _lock, _worker
    _lock = threading.Lock()  # another thread may have held it at fork time
    _worker = None


os.register_at_fork(after_in_child=_reset_after_fork)


def _current() -> "_Worker | None":
    """This process's live worker, started (again, after an abort) when needed; None when
    `sys.executable` cannot be started (then LLVM runs here, see `in_process`)."""
    global _worker, _spawn_failed
    if _worker is None or not _worker.alive():
        if _worker is not None:
            _worker.close(kill=True)
            _worker = None
        try:
            _worker = _Worker()
        except OSError:
            _spawn_failed = True
    return _worker


def start():
    """Starts the worker ahead of its first request, so that its imports overlap our lowering."""
    if not in_process():
        with _lock:
            _current()


def call(op: str, *args):
    """Runs `llvm.<op>_here(*args)` in the worker (or here, see `in_process`); raises
    LLVMAborted when LLVM ends the worker (the next call starts a new one)."""
    if not in_process():
        with _lock:
            worker = _current()
            if worker is not None:
                return worker.request(op, args)
    return _operations()[op](*args)


@atexit.register
def _stop():
    if _worker is not None:
        _worker.close()


def serve():
    """The worker's loop: answers requests until its stdin closes. Each reply carries the
    warnings its request issued; an exception is sent pickled with its traceback (or, when
    it does not pickle, by type name and message)."""
    global _in_worker
    _in_worker = True
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything LLVM or Python prints goes to stderr, not into the replies
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    operations = _operations()
    try:  # the compiler's imports, while the user's process runs Triton's frontend
        from triton_cpu import stages
        stages.preload()
    except Exception:  # noqa: BLE001 (a request that needs the module reports the error)
        pass
    # What is loaded now lives as long as the worker: the cyclic collector stops visiting
    # it (each compile's transient IR is what it collects).
    gc.freeze()
    while True:
        head = requests.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return
        op, args = pickle.loads(requests.read(_HEADER.unpack(head)[0]))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                reply = ("ok", operations[op](*args))
            except Exception as e:  # reported to the caller, the worker goes on
                reply = ("exc", e, traceback.format_exc())
        issued = [(w.category, str(w.message)) for w in caught]
        try:
            data = pickle.dumps((*reply, issued), protocol=pickle.HIGHEST_PROTOCOL)
            if reply[0] == "exc":
                pickle.loads(data)  # an exception whose constructor takes other arguments fails here
        except Exception:  # noqa: BLE001 (an exception object that does not pickle)
            e = reply[1]
            data = pickle.dumps(("err", type(e).__name__, f"{e}\n(raised in the compiler worker process)\n{reply[2]}",
                                 issued), protocol=pickle.HIGHEST_PROTOCOL)
        replies.write(_HEADER.pack(len(data)) + data)
        replies.flush()


if __name__ == "__main__":
    # Run as `python -m`, this file is the module __main__: serve from the package's own
    # module, whose `_in_worker` the compiler's code (llvm.optimize) reads.
    from triton_cpu import llvm_worker
    llvm_worker.serve()
