# oz0's fork server of a Python harness (put after loader.py, which calls _serve when its last
# argument before the harness's is --fork): once the harness's dependencies are loaded and warmed
# up, each job's session is a fork of this process, which shares with it the pages of what was
# loaded (copy on write) and nothing else:
#
#   the node ── request on fd 0 (a unix socket): the session's directories, environment, gateway
#   │           addresses, and its stdin, stdout, stderr and report socket (SCM_RIGHTS)
#   └─ this process (single-threaded: no thread of a library's is copied into a session)
#       └─ C, the session's keeper (a fork): new user, mount, PID, IPC and UTS namespaces (and a
#          network one, in strict), owned by a user namespace of its own; the session's own
#          directories shown, the others' and this process's hidden, a fresh /tmp and /dev/shm;
#          it reports on the report socket and waits
#           └─ G, PID 1 of the session's namespace: a fresh /proc; passes SIGTERM, SIGINT and
#              SIGHUP on to the session's processes; ends them all when the harness exits
#               └─ H, the harness: the session's pipes as 0, 1 and 2, its working directory, the
#                  job's environment, no capability left; runs the harness as the loader would.
#                  A session forked ahead of its job ("ahead") has the environment without the
#                  job's part: H says it is ready and reads the job's (a bind line) first.
#
# In tier none (no namespaces, as a session started at its job has none) C forks H alone, H in a
# process group of its own.
#
# C and G are made with glibc's _Fork, which runs no fork hook: a dependency's (os.register_at_fork,
# pthread_atfork) would otherwise run in this process, which sees every session's directory, and in
# C before its namespaces. The hooks run when G forks H, in G (after it dropped its capabilities)
# and in H: inside the session's sandbox, with nothing of a sibling's in view. No dependency code
# runs here once it serves: no hook, no signal handler of a library's, no collection of its
# garbage (frozen).

import ctypes as _ctypes
import fcntl
import gc as _gc
import re
import select as _select
import signal as _signal
import socket as _socket
import struct as _struct

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT = 1, 4, 24, 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_MAX_REQUEST = 1 << 20

_libc = _ctypes.CDLL(None, use_errno=True)
try:
    _bare_fork = _ctypes.PyDLL(None, use_errno=True)._Fork  # glibc 2.34
    _bare_fork.restype, _bare_fork.argtypes = _ctypes.c_int, []
except AttributeError:
    _bare_fork = None  # the loader then reports that this harness does not fork


def _fork_bare():
    """A fork that runs no fork hook (see the top): for this process's own code only."""
    pid = _bare_fork()
    if pid < 0:
        err = _ctypes.get_errno()
        raise OSError(err, "fork: %s" % os.strerror(err))
    return pid


def _check(result, what):
    if result != 0:
        err = _ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _mount(src, dst, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()
    _check(_libc.mount(enc(src), enc(dst), enc(fstype), _ctypes.c_ulong(flags), enc(data)), "mount %s" % dst)


def _prctl(option, arg):
    _check(_libc.prctl(option, _ctypes.c_ulong(arg), 0, 0, 0), "prctl %d" % option)


def _drop_capabilities():
    """Nothing of the capabilities a new user namespace gives its maker is left: the bounding set
    emptied, the ambient set cleared, the effective, permitted and inheritable sets zeroed."""
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, _ctypes.c_ulong(cap), 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (_ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (_ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")


def _own_namespaces(strict):
    """Unshares the session's namespaces, owned by a new user namespace in which this process
    keeps its ids."""
    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWUTS
    if strict:
        flags |= _CLONE_NEWNET
    _check(_libc.unshare(flags), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)), ("gid_map", "%d %d 1" % (gid, gid))):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)
    _libc.sethostname(b"oz0-session", 11)


def _unescape(path):
    """A path as /proc/self/mountinfo writes it (space, tab, newline and backslash in octal)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def _mounts_under(top):
    """The mount points under top, in the order they were mounted (a parent before its children)."""
    top = top.rstrip("/") + "/"
    with open("/proc/self/mountinfo") as f:
        return [p for p in (_unescape(line.split()[4]) for line in f) if p.startswith(top)]


def _own_files(sessions, work, state):
    """The session's view of the files: a fresh /tmp and /dev/shm (what the server's sandbox
    showed under /tmp, the plugin say, shown again), and of the sessions' directory only its own
    working and state directories, where the node made them: neither a sibling's nor the
    server's. (What the node hides, the server's sandbox hides already.)"""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    below = lambda p, d: p == d or p.startswith(d.rstrip("/") + "/")
    kept = []  # (mount point, O_PATH descriptor, is a directory) under /tmp, to show again
    for point in _mounts_under("/tmp"):
        if below(point, sessions) or any(below(point, k) for k, _, _ in kept):
            continue  # the sessions' directory is made afresh; a nested mount comes with its parent
        kept.append((point, os.open(point, os.O_PATH | os.O_CLOEXEC), os.path.isdir(point)))
    own = [(d, os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)) for d in (work, state)]
    _mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=1777")
    _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "mode=1777")
    for point, fd, is_dir in kept:
        if is_dir:
            os.makedirs(point, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(point), 0o755, exist_ok=True)
            open(point, "a").close()
        _mount("/proc/self/fd/%d" % fd, point, None, _MS_BIND | _MS_REC)
        os.close(fd)
    covered = os.path.isdir(sessions)
    if covered:  # it is not under /tmp: hide what it holds
        _mount("tmpfs", sessions, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
    for d, fd in own:
        os.makedirs(d, 0o755, exist_ok=True)
        _mount("/proc/self/fd/%d" % fd, d, None, _MS_BIND | _MS_REC)
        os.close(fd)
    if covered:
        _mount(None, sessions, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def _loopback_up():
    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        req = _struct.pack("16sH14x", b"lo", 0)
        flags = _struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, _struct.pack("16sH14x", b"lo", flags | _IFF_UP))
    finally:
        s.close()


def _listen(addresses):
    """Listening sockets on the gateway's addresses, in the session's own network: the node serves
    the gateway on them, and nothing else is reachable."""
    _loopback_up()
    out = []
    for addr in addresses:
        host, _, port = addr.rpartition(":")
        s = _socket.socket(_socket.AF_INET6 if ":" in host.strip("[]") else _socket.AF_INET, _socket.SOCK_STREAM)
        s.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        s.bind((host.strip("[]"), int(port)))
        s.listen(128)
        out.append(s)
    return out


def _report(sock, message, fds=()):
    data = json.dumps(message).encode()
    if fds:
        sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _struct.pack("%di" % len(fds), *fds))])
    else:
        sock.send(data)


def _tell_exits(told):
    """Has this process's os._exit (the harness kit's way out) tell G first: the code it exits
    with, once its files are closed, so that G ends the session at once rather than when the
    kernel has unmapped this process's memory (7 ms and more for a framework's). A process this
    one forks does not tell."""
    real_exit, me = os._exit, os.getpid()

    def _exit(code):
        if os.getpid() == me:
            try:
                os.closerange(0, told)  # the session's pipes end now, as they would at the exit
                os.closerange(told + 1, 1 << 20)
                os.write(told, b"%d" % (code & 0xFF))
            except BaseException:
                pass  # G then sees the exit itself
        real_exit(code)

    os._exit = _exit


def _harness(request, stdio, entry, args, told=None):
    """H: the session's pipes, directory and environment, then the harness, as the loader runs it."""
    for i, fd in enumerate(stdio):
        os.dup2(fd, i)
    for fd in stdio:
        if fd > 2:
            os.close(fd)
    os.chdir(request["dir"])
    os.environ.clear()
    env = dict(kv.split("=", 1) for kv in request["env"])
    os.environ.update(env)
    _gc.enable()
    for sig, handler in _library_handlers.items():
        _signal.signal(sig, handler)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    _signal.signal(_signal.SIGHUP, _signal.SIG_DFL)
    if request.get("ahead"):
        # Made before its job: the frameworks' warm-ups run again here, in the session's own
        # sandbox, so that the pages a run writes are this process's own copies before its job
        # comes (a forked process's first run pays a copy-on-write fault for each, 10-15 ms of an
        # ADK job). Then it is ready, as a loader says it, and the job's environment (its key, its
        # trace context, the plugin's import path) comes with the bind line.
        started = _time.monotonic()
        warmed, failed = _warm_up_aside()
        ready = dict(_loaded_report, at=_time.time(), ahead=True, ahead_warmed=warmed,
                     ahead_failed=failed, ahead_seconds=round(_time.monotonic() - started, 3))
        os.write(1, (json.dumps(ready) + "\n").encode())
        message = _read_bind()
    else:
        message = {"env": env}
    _bind(message, entry)
    if told is not None:
        _tell_exits(told)
    _run(entry, args)


def _warm_threads(n=4):
    """Starts and joins n threads at once: a job's first threads (a thread pool's, an exporter's,
    the harness kit's reader) then reuse their stacks, which libc keeps, rather than map and fault
    in new ones (a fresh fork's first thread starts took 2 to 3 ms each)."""
    import threading

    threads = [threading.Thread(target=lambda: None, name="oz0-warm-up") for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _warm_up_aside():
    """The warm-ups (lean), run in a session forked ahead as if elsewhere: in a scratch directory
    of its fresh /tmp (its HOME and TMPDIR too), removed after, and with stdout and stderr to
    /dev/null, so that the job finds its directories empty and its output its own."""
    import shutil
    import tempfile

    scratch = tempfile.mkdtemp(prefix="oz0-warm-up-", dir="/tmp")
    saved_env = {k: os.environ.get(k) for k in ("HOME", "TMPDIR")}
    saved_fds = [os.dup(1), os.dup(2)]
    cwd = os.getcwd()
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.environ.update(HOME=scratch, TMPDIR=scratch)
        tempfile.tempdir = None  # as a process starting here would see it
        os.chdir(scratch)
        _warm_threads()
        return _warm_up(lean=True)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.dup2(saved_fds[0], 1)
        os.dup2(saved_fds[1], 2)
        for fd in saved_fds + [null]:
            os.close(fd)
        os.chdir(cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        tempfile.tempdir = None
        shutil.rmtree(scratch, ignore_errors=True)


def _init_of(harness_pid, told):
    """G, PID 1 of the session's namespace: passes the node's signals on, reaps, and when the
    harness exits (or says it is exiting: _tell_exits) ends whatever it left; returns the
    harness's wait status. From then on no process of the session runs: SIGKILL is on each."""
    def forward(sig, frame):
        try:
            os.kill(-1, sig)
        except ProcessLookupError:
            pass
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, forward)
    pidfd = os.pidfd_open(harness_pid)
    watch = [told, pidfd]
    status = None
    while status is None:
        try:
            ready, _, _ = _select.select(watch, [], [])
        except InterruptedError:
            continue
        if told in ready:
            said = os.read(told, 16)
            if said.isdigit():
                status = (int(said) & 0xFF) << 8  # as a wait status: exited with that code
            else:
                watch.remove(told)  # it exited without a word, or garbled it: the wait says
        if status is None and pidfd in ready:
            try:
                _, status = os.waitpid(harness_pid, 0)
            except InterruptedError:
                continue
    try:
        os.kill(-1, _signal.SIGKILL)  # what the harness left goes with it
    except ProcessLookupError:
        pass  # it left nothing
    return status


def _keeper(request, fds, entry, args):
    """C: builds the session's namespaces and files, starts it, reports its start and its end."""
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)  # the server's SIG_IGN would reap for us
    stdio, report = fds[:3], _socket.socket(fileno=fds[3])
    sandboxed = request["tier"] != "none"
    try:
        _prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL)  # the fork server's end is the session's
        listeners = []
        if sandboxed:
            _own_namespaces(request["tier"] == "strict")
            _own_files(request["sessions"], request["dir"], request["state"])
            if request.get("listen"):
                listeners = _listen(request["listen"])
    except BaseException as err:
        _report(report, {"error": "the session's sandbox could not be made: %s: %s" % (type(err).__name__, err)})
        os._exit(1)
    said_r, said_w = os.pipe()  # G tells C the harness's wait status there
    # Unsandboxed, H is forked as Python forks (its hooks run here: tier none hides nothing).
    pid = _fork_bare() if sandboxed else os.fork()
    if pid == 0:
        os.close(said_r)
        try:
            report.close()
            for s in listeners:
                s.close()
            if not sandboxed:
                os.close(said_w)
                os.setpgid(0, 0)
                _prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL)
                _harness(request, stdio, entry, args)
                os._exit(0)
            # G: PID 1 of the session; what goes wrong with it is the session's to see. Its
            # capabilities go before the fork that runs the dependencies' hooks.
            os.dup2(stdio[2], 2)
            _prctl(_PR_SET_DUMPABLE, 0)
            _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
            _drop_capabilities()
            told_r, told_w = os.pipe()  # the harness says there that it is exiting
            harness = os.fork()
            if harness == 0:
                os.close(said_w)
                os.close(told_r)
                _harness(request, stdio, entry, args, told=told_w)
                os._exit(0)
            os.close(told_w)
            for fd in stdio:
                os.close(fd)
            status = _init_of(harness, told_r)
            # The session's stderr ends with its processes: the node does not wait for this
            # process's exit to see it end. What is left is reaped after the word: the keeper,
            # which reports it, is not kept from a core by this process's own exit meanwhile.
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
            os.write(said_w, str(status).encode())
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    break
                except InterruptedError:
                    continue
            os._exit(0)
        except SystemExit as done:
            os._exit(done.code if isinstance(done.code, int) else 1)
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(1)
    os.close(said_w)
    for fd in stdio:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    _report(report, {"started": True}, [pidfd] + [s.fileno() for s in listeners])
    os.close(pidfd)
    for s in listeners:
        s.close()
    # G says the harness's status once the harness has exited (or said it is exiting) and every
    # other process of the session has SIGKILL on it: none runs again, and that is the session's
    # end, said at once; the unmapping of their memory and G's own exit are not waited for.
    # Unsandboxed, or when G ends without a word, the status is the wait's.
    said = os.read(said_r, 64)
    if sandboxed and said:
        _report(report, {"exit": int(said)})
        os._exit(0)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    _report(report, {"exit": status})
    os._exit(0)


_library_handlers = {}
_loaded_report = {}


def _quiet_handlers():
    """Sets to its default each signal a library handles in Python (its handler would run its
    code here); returns them, for the harness."""
    handlers = {}
    for sig in _signal.valid_signals():
        try:
            handler = _signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        if callable(handler) and handler is not _signal.default_int_handler:
            handlers[sig] = handler
            _signal.signal(sig, _signal.SIG_DFL)
    return handlers


def _serve(entry, args, report):
    """The fork server: a session forked for each request on fd 0, until the node closes it.
    report is what it said once loaded, which a session forked ahead says again as it is ready."""
    control = _socket.socket(fileno=0)
    global _library_handlers, _loaded_report
    _loaded_report = report
    _library_handlers = _quiet_handlers()
    _gc.disable()  # our own garbage only, from here: the dependencies' is frozen
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)  # the keepers are reaped by the kernel
    while True:
        try:
            data, ancdata, _, _ = control.recvmsg(_MAX_REQUEST, _socket.CMSG_SPACE(4 * 4))
        except InterruptedError:
            continue
        if not data:
            os._exit(0)  # the node let go
        fds = []
        for level, kind, payload in ancdata:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += list(_struct.unpack("%di" % (len(payload) // 4), payload[: len(payload) - len(payload) % 4]))
        try:
            request = json.loads(data)
        except ValueError:
            request = None
        if request is None or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        if _fork_bare() == 0:
            control.close()
            _keeper(request, fds, entry, args)
        for fd in fds:
            os.close(fd)
