"""LLVM in a helper process, so that an LLVM assertion ends the helper and not the user's Python.

llvmlite's LLVM is built with assertions enabled: when a pass trips one on a kernel we emit
(LLVM 22's loop vectorizer does on some scalar min/max reduction loops), LLVM calls abort()
and, run in-process, would take the user's interpreter with it (their notebook, training job,
test session). The compile stages that run LLVM (`llvm.optimize`, `llvm.to_asm`) therefore send
their IR to one long-lived worker process per user process. When the worker dies on a request
the caller gets `LLVMAborted` carrying what LLVM printed, and the next request starts a fresh
worker; `llvm.optimize` uses that to retry with a more conservative pipeline.

Protocol: length-prefixed pickles over the worker's stdin and stdout, one request at a time (a
lock serializes threads). The worker's stderr goes to a temporary file, copied to ours after
each request and read for LLVM's message when the worker dies. The worker runs in its own
session, so Ctrl-C reaches only the user's process; it exits when its stdin closes, i.e. when
the user's process exits. A process forked from the user's starts its own worker.

`TRITON_CPU_LLVM_IN_PROCESS=1` runs LLVM in the calling process instead (to debug LLVM itself
under gdb); so does a Python whose `sys.executable` cannot be started.
"""
import atexit
import builtins
import hashlib
import os
import pickle
import re
import struct
import subprocess
import sys
import tempfile
import threading

from triton_cpu import env_flag

_HEADER = struct.Struct("<Q")
# What a link reads of the environment of the process that started the worker, hashed
# (environment_key): the worker's links ahead see it as it was then.
_CALLER_ENV = "TRITON_CPU_WORKER_CALLER_ENV"


class LLVMAborted(RuntimeError):
    """The worker process died while LLVM ran a request (an LLVM assertion or crash)."""

    def __init__(self, detail: str, returncode: int):
        self.detail = detail
        self.returncode = returncode
        super().__init__(f"LLVM worker exited with status {returncode}: {detail}")


def _operations():
    from triton_cpu import llvm
    # "abort" does what a failing LLVM assertion does: tests use it to check the crash path.
    return {"optimize": llvm.optimize_here, "asm": llvm.asm_here, "abort": os.abort}


def in_process() -> bool:
    return _spawn_failed or env_flag("TRITON_CPU_LLVM_IN_PROCESS", False)


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
        env[_CALLER_ENV] = environment_key()
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
        if reply[0] == "ok":
            return reply[1]
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


def environment_key() -> str:
    """A hash of the environment variables a link reads: the tools' search path and the
    compiler driver's variables, where link stubs are kept (TRITON_HOME, HOME), and this
    backend's own settings (TRITON_CPU_*)."""
    items = sorted((k, v) for k, v in os.environ.items()
                   if (k in _LINK_ENVIRONMENT or k.startswith("TRITON_CPU_")) and k != _CALLER_ENV)
    return hashlib.sha256(repr(items).encode()).hexdigest()


_LINK_ENVIRONMENT = ("PATH", "CC", "HOME", "TRITON_HOME", "COMPILER_PATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX")


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


class Ahead:
    """What the worker does for a module it has just optimized before it is asked to.

    Triton's next two stages ask for that module's assembly ("asm", the text `optimize`
    returned) and then for the shared object built from that assembly ("shared_object").
    Right after answering "optimize" the worker forks a child that generates the module's
    object code and links it (`llvm.link`), on the other core, and itself generates the
    assembly while the compiling process is still writing its cache files. The answers
    are used only for requests with the same text and host; anything else is computed as
    usual, and "shared_object" answers None (the caller assembles and links) unless the
    child linked the module whose assembly the caller holds.

    The child links in the environment the worker was started with: "shared_object"
    carries a hash of what a link reads of the caller's (`environment_key`) and gets None
    when that has changed since (CC, PATH or TRITON_HOME set by then would change the link).

    The fork is the only way to run two code generations at once: llvmlite serializes
    every call into LLVM with one lock per process. The child only reads the module and
    writes its result to a file; an LLVM abort in it ends the child, and the caller then
    links as before. An abort while generating the assembly ends the worker, reported by
    the caller's next request, normally the "asm" of the same kernel. Off with
    `TRITON_CPU_LLVM_AHEAD=0`: the worker reads it when it starts, the caller at each link."""

    def __init__(self, ir_text: str, h, reply_fds):
        from triton_cpu import llvm
        self.ir_text, self.host = ir_text, h
        self.environment = os.environ.get(_CALLER_ENV)
        fd, self.path = tempfile.mkstemp(prefix="triton-cpu-ahead-", suffix=".so")
        os.close(fd)
        try:
            self.pid = os.fork()
        except OSError:  # no process to spare: the caller links
            self.pid = None
        if self.pid == 0:
            status = 1
            try:
                for f in reply_fds:  # the worker's pipes are its own: a reader must see EOF when it dies
                    os.close(f)
                data = llvm.link("kernel", h, obj=llvm.object_here(ir_text, h))
                with open(self.path, "wb") as f:
                    f.write(data)
                status = 0
            finally:
                os._exit(status)
        try:
            self.asm = ("ok", llvm.asm_here(ir_text, h))
        except Exception as e:
            self.asm = ("err", type(e).__name__, str(e))

    def answers(self, op: str, args: tuple) -> bool:
        if op == "asm":
            return args == (self.ir_text, self.host)
        return op == "shared_object" and self.asm[0] == "ok" and args == (self.asm[1], self.host, self.environment)

    def shared_object(self):
        """The child's shared object, or None when it failed."""
        if self.pid is None:
            return None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if status != 0:
            return None
        with open(self.path, "rb") as f:
            return f.read()

    def close(self):
        if self.pid is not None:
            os.waitpid(self.pid, 0)
            self.pid = None
        try:
            os.unlink(self.path)
        except OSError:
            pass


def serve():
    """The worker's loop: answers requests until its stdin closes."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything LLVM or Python prints goes to stderr, not into the replies
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    operations = _operations()
    work_ahead = env_flag("TRITON_CPU_LLVM_AHEAD", True) and hasattr(os, "fork")
    ahead = None
    try:
        while True:
            head = requests.read(_HEADER.size)
            if len(head) < _HEADER.size:
                return
            op, args = pickle.loads(requests.read(_HEADER.unpack(head)[0]))
            try:
                if ahead is not None and ahead.answers(op, args):
                    reply = ahead.asm if op == "asm" else ("ok", ahead.shared_object())
                elif op == "shared_object":
                    reply = ("ok", None)
                else:
                    reply = ("ok", operations[op](*args))
            except Exception as e:  # reported to the caller, the worker goes on
                reply = ("err", type(e).__name__, str(e))
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
            replies.write(_HEADER.pack(len(data)) + data)
            replies.flush()
            if op == "optimize" and reply[0] == "ok" and reply[1][0] and work_ahead:
                if ahead is not None:
                    ahead.close()
                ahead = Ahead(reply[1][0], args[1], (replies.fileno(), requests.fileno()))
    finally:
        if ahead is not None:
            ahead.close()


if __name__ == "__main__":
    serve()
