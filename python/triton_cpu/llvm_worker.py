"""The compiler worker: LLVM, and the compiler's Python stages, in a helper process.

llvmlite's LLVM is built with assertions enabled: when a pass trips one on a kernel we emit
(LLVM 22's loop vectorizer does on some scalar min/max reduction loops), LLVM calls abort()
and, run in-process, would take the user's interpreter with it (their notebook, training job,
test session). The compile stages therefore run in one long-lived worker process per user
process: the ttcir and llir stages whole (stages.py: TTIR text in, TritonCPU IR and LLVM IR
text out), and the assembly (`llvm.to_asm`). When the worker dies on a request the
caller gets `LLVMAborted` carrying what LLVM printed, and the next request starts a fresh
worker; `stages.llir` and `llvm.optimize` use that to retry with a more conservative
pipeline.

The worker is a child that the compile server (compile_server.py) forks for this process,
with the compiler imported already; with the server off (TRITON_CPU_COMPILE_SERVER=0, or
where it cannot start) it is a process spawned here, which imports the compiler as it boots.

Protocol: length-prefixed pickles over a socket (the server's child) or the worker's stdin
and stdout, one request at a time (a lock serializes threads). A reply carries the result,
or the exception (pickled with its traceback text, which becomes a note of the exception
raised here; by type name and message when it does not pickle), and the warnings the request
issued, issued again here. The worker's stderr goes to a temporary file, copied to ours after
each request and read for LLVM's message when the worker dies. The worker runs outside our
session, so Ctrl-C reaches only the user's process; it exits when its input closes, i.e.
when the user's process exits. A process forked from the user's starts its own worker.

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
# Objects allocated (net) since the last collection after which a reply other than "asm" collects
# (serve_loop): a client that never asks for assembly still has its garbage freed.
_COLLECT_AFTER = 200_000
# Young collections per collection of the next older generation (Python's default thresholds).
_OLDER_EVERY = 10


class LLVMAborted(RuntimeError):
    """The worker process died while LLVM ran a request (an LLVM assertion or crash)."""

    def __init__(self, detail: str, returncode: int):
        self.detail = detail
        self.returncode = returncode
        super().__init__(f"LLVM worker exited with status {returncode}: {detail}")


def _operations():
    from triton_cpu import llvm, stages
    # "abort" does what a failing LLVM assertion does: tests use it to check the crash path;
    # "whoami" says where the worker runs (its pid, directory and environment); "collector"
    # whether the cyclic collector is on during a request and how many objects it tracks.
    return {"optimize": llvm.optimize_here, "asm": llvm.asm_here, "ttcir": stages.ttcir_here,
            "llir": stages.llir_here, "abort": os.abort,
            "whoami": lambda: (os.getpid(), os.getcwd(), dict(os.environ)),
            "collector": lambda: (gc.isenabled(), len(gc.get_objects()))}


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


class _ServerUnresponsive(Exception):
    """The compile server's child did not greet (compile_server.greeted)."""


class _Worker:
    """A worker serving this process: requests go to `wfile`, replies come from `rfile`, its
    stderr is written to `self.stderr`. A child of the compile server (compile_server.py)
    when that is on and `server`, else a process spawned here."""

    def __init__(self, server: bool = True):
        self.owner = os.getpid()
        self.stderr = tempfile.TemporaryFile()
        self.forwarded = 0
        self.proc = self.sock = None
        self.lost = False  # the server's child closed the connection (it died)
        self.greeted = False  # the server's child said it serves us (its first request checks)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(_import_roots() + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        from triton_cpu import compile_server
        if server and compile_server.enabled():
            try:
                self.sock = compile_server.connect(self.stderr.fileno(), env)
                self.rfile, self.wfile = self.sock.makefile("rb"), self.sock.makefile("wb")
                return
            except OSError:
                self.sock = None
        # -P (Python 3.11+): the current directory is not put first on the worker's path.
        flags = ["-P"] if sys.version_info >= (3, 11) else []
        self.proc = subprocess.Popen([sys.executable, *flags, "-m", __name__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env, close_fds=True,
                                     start_new_session=True)
        self.rfile, self.wfile = self.proc.stdout, self.proc.stdin

    def alive(self) -> bool:
        if self.owner != os.getpid():
            return False
        return self.proc.poll() is None if self.proc is not None else not self.lost

    def _exit_status(self) -> int:
        """The status the worker died with (-1 for a server's child: not ours to wait for)."""
        if self.proc is not None:
            return self.proc.wait()
        self.lost = True
        return -1

    def request(self, op: str, args: tuple):
        if self.sock is not None and not self.greeted:
            from triton_cpu import compile_server
            if not compile_server.greeted(self.sock):
                raise _ServerUnresponsive(self._new_stderr().strip())
            self.greeted = True
        payload = pickle.dumps((op, args), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.wfile.write(_HEADER.pack(len(payload)) + payload)
            self.wfile.flush()
            head = self.rfile.read(_HEADER.size)
            body = self.rfile.read(_HEADER.unpack(head)[0]) if len(head) == _HEADER.size else b""
            if not body:
                raise EOFError
        except (BrokenPipeError, ConnectionResetError, EOFError):
            code = self._exit_status()
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
        for f in (self.wfile, self.rfile):
            try:
                f.close()
            except Exception:  # noqa: BLE001 (a broken pipe is closed all the same)
                pass
        if self.sock is not None:
            self.sock.close()  # the server's child sees the end of its input and exits
        else:
            try:
                if kill:
                    self.proc.kill()
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                self.proc.kill()
        self.stderr.close()


_lock = threading.Lock()
_worker = None
_spawn_failed = False
_server_failed = False  # a server's child did not greet: this process spawns its workers


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
            _worker = _Worker(server=not _server_failed)
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
    global _server_failed, _worker
    if not in_process():
        with _lock:
            worker = _current()
            if worker is not None:
                try:
                    return worker.request(op, args)
                except _ServerUnresponsive as e:
                    from triton_cpu import compile_server
                    warnings.warn(f"triton-cpu: the compile server's worker did not answer within "
                                  f"{compile_server.HANDSHAKE_TIMEOUT:g} s; this process compiles in a "
                                  f"worker of its own" + (f" (the worker said: {e})" if str(e) else ""),
                                  RuntimeWarning, stacklevel=2)
                    _server_failed = True
                    worker.close(kill=True)
                    _worker = None
                    worker = _current()
                    if worker is not None:
                        return worker.request(op, args)
    return _operations()[op](*args)


@atexit.register
def _stop():
    if _worker is not None:
        _worker.close()


def prepare():
    """A worker's (or the compile server's) start: the compiler's imports, then the loaded
    objects frozen out of the cyclic collector's sight (they live as long as the process;
    each compile's transient IR is what it collects)."""
    global _in_worker
    _in_worker = True
    try:
        from triton_cpu import stages
        stages.preload()
    except Exception:  # noqa: BLE001 (a request that needs the module reports the error)
        pass
    gc.freeze()


def serve():
    """A spawned worker: requests on stdin, replies on stdout, anything LLVM or Python
    prints on stderr; the compiler's imports run while the user's process runs Triton's
    frontend."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    prepare()
    serve_loop(sys.stdin.buffer, replies)


def serve_loop(requests, replies):
    """Answers requests until the input ends. Each reply carries the warnings its request
    issued; an exception is sent pickled with its traceback (or, when it does not pickle,
    by type name and message)."""
    global _in_worker
    _in_worker = True
    sys.stdout = sys.stderr  # prints go to stderr, not into the replies
    operations = _operations()
    # The collector runs between requests, not during them: a compile builds hundreds of
    # thousands of short-lived IR objects in cycles (an op and its block), and collections
    # triggered mid-stage cost 2-3 ms per kernel (the 10-op kernel of compile_time.py). The
    # collection after an "asm" reply (a kernel's last stage here) overlaps the caller's
    # assembling and linking; any other reply collects once enough objects piled up.
    gc.disable()
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
        counts = gc.get_count()
        if op == "asm" or counts[0] > _COLLECT_AFTER:
            # The young generation holds the request's garbage (nothing was promoted during
            # it); older ones as often as the collector's own thresholds would have them.
            gc.collect(2 if counts[2] >= _OLDER_EVERY else 1 if counts[1] >= _OLDER_EVERY else 0)


if __name__ == "__main__":
    # Run as `python -m`, this file is the module __main__: serve from the package's own
    # module, whose `_in_worker` the compiler's code (llvm.optimize) reads.
    from triton_cpu import llvm_worker
    llvm_worker.serve()
