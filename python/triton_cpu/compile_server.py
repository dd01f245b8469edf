"""The compile server: a process that has imported the compiler once and forks a compiler
worker (llvm_worker.py) for each process that connects.

A worker spawned per user process spends ~0.6 s starting Python and importing xDSL, our
passes and llvmlite before its first request, and a first kernel waits for that. The server
pays it once per machine: the first process that needs a worker starts the server with one
end of a socket pair, the server imports the compiler, forks a child that serves that
process over the pair, and then listens on a Unix socket in Linux's abstract namespace.
Every later process connects there and gets its own forked child, whose imports are done.
A child serves exactly one process, as the spawned worker did: an LLVM abort ends that
child only (the caller's next request connects again), and the child exits when its
process closes the connection (on exit, or after a request was interrupted).

Each child takes its process's environment and working directory, and writes its stderr
(LLVM's crash reports, Python's warnings) to a file the process passed along with its
first message (SCM_RIGHTS), which the process reads as it read the spawned worker's.

After forking its first child the server compiles a warm-up kernel (stages.warm_up), so
that later children start with the caches and LLVM objects a first compile fills.

The socket's name holds the user's id and a hash of what the compiler is: the Python
executable, PYTHONPATH, the size and modification time of every file of this package and
of xDSL's and llvmlite's `__init__.py` (rewritten when either is installed again). Editing
the compiler (an editable install) or upgrading xDSL thus names a new server; the old one
is not reused. The server accepts only connections from its own user (SO_PEERCRED), and
exits after TRITON_CPU_COMPILE_SERVER_IDLE seconds without a new connection (default 600);
`TRITON_CPU_COMPILE_SERVER=0` turns it off, and each process then spawns its own worker
(llvm_worker.py). When two processes start a server at the same time, the second finds the
name taken: it serves its own process and exits.
"""
import gc
import hashlib
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys

_HEADER = struct.Struct("<Q")
DEFAULT_IDLE = 600
# How long a process waits for its forked worker's greeting (the server may still be
# importing the compiler, on a busy machine): past it, it spawns a worker of its own.
HANDSHAKE_TIMEOUT = 60.0
_GREETING = b"\x01"


def idle_seconds() -> int:
    """How long a server waits for a new connection before it exits
    (TRITON_CPU_COMPILE_SERVER_IDLE, seconds; default 600)."""
    value = os.environ.get("TRITON_CPU_COMPILE_SERVER_IDLE", "").strip()
    try:
        seconds = int(value) if value else DEFAULT_IDLE
    except ValueError:
        seconds = -1
    if seconds <= 0:
        raise ValueError(f"TRITON_CPU_COMPILE_SERVER_IDLE={value!r}: expected a positive number of seconds")
    return seconds


def enabled() -> bool:
    """TRITON_CPU_COMPILE_SERVER=0 turns the server off; it needs Linux (abstract sockets)."""
    from triton_cpu import env_flag
    return sys.platform.startswith("linux") and env_flag("TRITON_CPU_COMPILE_SERVER", True)


def address() -> bytes:
    """The server's socket name (abstract namespace) for this user and this compiler: every
    file of this package (an editable install changes as it is edited), and the files that
    say which xDSL and llvmlite are installed."""
    import importlib.util
    from triton_cpu import files_under
    h = hashlib.sha256()
    h.update(f"{sys.executable}\n{sys.version}\n{os.environ.get('PYTHONPATH', '')}\n".encode())
    paths = [p for root in sys.modules[__name__.split(".")[0]].__path__ for p in files_under(root)]
    for name in ("xdsl", "llvmlite"):
        spec = importlib.util.find_spec(name)
        paths.append(spec.origin if spec is not None and spec.origin else name)
    for path in paths:
        try:
            st = os.stat(path)
            h.update(f"{path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{path}: none\n".encode())
    return f"\0triton-cpu-compiler-{os.getuid()}-{h.hexdigest()[:24]}".encode()


def greeted(sock: socket.socket) -> bool:
    """Whether the worker at the other end greets within HANDSHAKE_TIMEOUT (a server that
    accepts but never forks, stopped or wedged, would otherwise hang every compile)."""
    sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        return sock.recv(1) == _GREETING
    except OSError:  # timeout included
        return False
    finally:
        sock.settimeout(None)


def connect(stderr_fd: int, env: dict) -> socket.socket:
    """A connection to a worker forked by the server, started first when none is listening;
    its stderr is `stderr_fd`. `env` is the environment the server is started with. Raises
    OSError when neither works."""
    addr = address()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(addr)
    except OSError:
        sock.close()
        sock = _start(addr, env)
    try:
        body = pickle.dumps((dict(os.environ), os.getcwd()), protocol=pickle.HIGHEST_PROTOCOL)
        socket.send_fds(sock, [_HEADER.pack(len(body))], [stderr_fd])
        sock.sendall(body)
    except OSError:
        sock.close()
        raise
    return sock


class _Server(subprocess.Popen):
    """A server this process started: it outlives the process by design, so no
    ResourceWarning when the object goes while the server still runs."""

    def __del__(self):
        pass


_servers = []  # reaped (poll) when another one starts


def _start(addr: bytes, env: dict) -> socket.socket:
    """Starts a server in its own session, detached from our stdio, and returns our end
    of the socket pair its first child serves."""
    for server in _servers[:]:
        if server.poll() is not None:
            _servers.remove(server)
    ours, theirs = socket.socketpair()
    try:
        flags = ["-P"] if sys.version_info >= (3, 11) else []
        _servers.append(_Server(
            [sys.executable, *flags, "-m", __name__, str(theirs.fileno()), addr[1:].decode(), str(idle_seconds())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
            pass_fds=[theirs.fileno()], start_new_session=True))
    except OSError:
        ours.close()
        raise
    finally:
        theirs.close()
    return ours


# -- the server's side ----------------------------------------------------------------------

def _recv_exact(sock: socket.socket, n: int, head: bytes = b"") -> bytes:
    data = head
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _serve_client(sock: socket.socket):
    """In a forked child: take the client's environment, directory and stderr, then answer
    its requests until it closes the connection."""
    from triton_cpu import llvm_worker, stages
    stages._TOKEN = os.urandom(8).hex()  # handles of this child's modules are its own
    head, fds, _, _ = socket.recv_fds(sock, _HEADER.size, 1)
    if not head:
        return
    body = _recv_exact(sock, _HEADER.unpack(_recv_exact(sock, _HEADER.size, head))[0])
    env, cwd = pickle.loads(body)
    for fd in fds:
        os.dup2(fd, 2)
        os.dup2(fd, 1)
        os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    try:
        os.chdir(cwd)
    except OSError:
        pass
    sock.sendall(_GREETING)
    llvm_worker.serve_loop(sock.makefile("rb"), sock.makefile("wb"))


def _fork_child(conn: socket.socket, listener):
    sys.stderr.flush()
    if os.fork() == 0:
        try:
            if listener is not None:
                listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _serve_client(conn)
        except BaseException:  # noqa: BLE001 (the client sees the connection close)
            import traceback
            traceback.print_exc()  # into the client's stderr file once it is ours
        finally:
            os._exit(0)
    conn.close()


def _same_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1] == os.getuid()


def main(first_fd: int, name: str, idle: int):
    os.chdir("/")  # not the first client's directory (each child takes its client's)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:  # first, so that processes starting meanwhile queue here instead of starting servers
        listener.bind(b"\0" + name.encode())
        listener.listen(64)
    except OSError:  # another server has the name: serve our process, then exit
        listener.close()
        listener = None
    from triton_cpu import llvm_worker
    llvm_worker.prepare()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    _fork_child(socket.socket(fileno=first_fd), listener)
    if listener is None:
        return
    try:  # while the first child serves (a later first call's ttcir and llir ~20 ms faster)
        from triton_cpu import stages
        stages.warm_up()
        gc.collect()
        gc.freeze()
    except Exception:  # noqa: BLE001 (cold children are still correct)
        pass
    while select.select([listener], [], [], idle)[0]:
        try:
            conn, _ = listener.accept()
        except OSError:
            continue
        if _same_user(conn):
            _fork_child(conn, listener)
        else:
            conn.close()


if __name__ == "__main__":
    # Run as `python -m`, this file is __main__: the package's own module does the work.
    from triton_cpu import compile_server
    compile_server.main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
