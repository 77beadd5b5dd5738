# oz0's fork server of a Python harness (put after loader.py, which calls _serve when its last
# argument before the harness's is --fork): once the harness's dependencies are loaded and warmed
# up, each job's session is a fork of this process, which shares with it the pages of what was
# loaded (copy on write) and nothing else:
#
#   the node ── request on fd 0 (a unix socket): the session's directories, environment, gateway
#   │           addresses, and its stdin, stdout, stderr and report socket (SCM_RIGHTS)
#   └─ this process (single-threaded: no thread of a library's is copied into a session)
#       └─ G, cloned straight into new user, mount, PID, IPC and UTS namespaces (and a network
#          one, in strict), owned by the new user namespace, of which it is PID 1: it shows the
#          session its own directories (the others' and this process's hidden), a fresh /tmp,
#          /dev/shm and /proc; reports on the report socket that the session started; passes
#          SIGTERM, SIGINT and SIGHUP on to the session's processes; ends them all when the
#          harness exits, and reports how it exited
#           └─ H, the harness: the session's pipes as 0, 1 and 2, its working directory, the
#              job's environment, no capability left; runs the harness as the loader would.
#              A session forked ahead of its job ("ahead") has the environment without the
#              job's part: H says it is ready and reads the job's (a bind line) first.
#
# In tier none (no namespaces, as a session started at its job has none) C, a keeper forked
# from this process, forks H, H in a process group of its own, and reports.
#
# G (with clone3) and C (with glibc's _Fork) run no fork hook: a dependency's
# (os.register_at_fork, pthread_atfork) would otherwise run in this process, which sees every
# session's directory. The hooks run when G or C forks H, in G (after it dropped its
# capabilities) or C and in H: inside the session's sandbox, with nothing of a sibling's in view.
# No dependency code runs here once it serves: no hook, no signal handler of a library's, no
# collection of its garbage (frozen). A kernel that refuses clone3 (before Linux 5.3, or a seccomp
# filter) gets no fork server: the loader says so, and sessions are made ahead one at a time.

import ctypes as _ctypes
import errno
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

_SYS_CLONE3 = 435  # one number on every architecture
try:
    # PyDLL, as _Fork: the GIL stays held across the call, so the child returns holding it.
    _clone3 = _ctypes.PyDLL(None, use_errno=True).syscall
    _clone3.restype, _clone3.argtypes = _ctypes.c_long, [_ctypes.c_long, _ctypes.c_void_p, _ctypes.c_size_t]
except AttributeError:
    _clone3 = None  # the loader then reports that this harness does not fork


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


def _namespace_flags(request):
    """The session's namespaces: user, mount, PID, IPC and UTS, and network in strict. The new
    user namespace owns the others."""
    flags = _CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWUTS
    if request["tier"] == "strict":
        flags |= _CLONE_NEWNET
    return flags


def _own_ids(uid, gid):
    """Keeps, in the process's new user namespace, the ids it had in its maker's."""
    for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)), ("gid_map", "%d %d 1" % (gid, gid))):
        with open("/proc/self/" + name, "w") as f:
            f.write(text)
    _libc.sethostname(b"oz0-session", 11)


def _own_sandbox(request):
    """In the session's new namespaces: its files, and in strict its network's listeners."""
    _own_files(request["sessions"], request["dir"], request["state"])
    return _listen(request["listen"]) if request.get("listen") else []


def _clone_session(request):
    """Forks this process straight into the session's new namespaces, the child PID 1 of its own
    (clone3, which runs no fork hook, as _fork_bare): one fork of the server a session, where a
    keeper's unshare and fork took two (each fork and exit of a process that holds a framework
    costs 5 to 7 ms of a core). Raises OSError when the kernel refuses."""
    args = _struct.pack("=8Q", _namespace_flags(request), 0, 0, 0, _signal.SIGCHLD, 0, 0, 0)
    buf = _ctypes.create_string_buffer(args, len(args))
    pid = _clone3(_SYS_CLONE3, buf, _ctypes.c_size_t(len(args)))
    if pid < 0:
        err = _ctypes.get_errno()
        raise OSError(err, "clone3: %s" % os.strerror(err))
    return pid


def _has_clone3():
    """Whether the kernel takes clone3 (Linux 5.3, and no seccomp filter that refuses it): asked
    with arguments it refuses as too short, which makes nothing."""
    if _clone3 is None:
        return False
    return _clone3(_SYS_CLONE3, None, _ctypes.c_size_t(0)) < 0 and _ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM)


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
    """C, in tier none (no namespaces, as a session started at its job has none): forks the
    harness, H, as Python forks (the fork hooks run here and in H: tier none hides nothing), in a
    process group of its own, and reports its start and its end."""
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)  # the server's SIG_IGN would reap for us
    stdio, report = fds[:3], _socket.socket(fileno=fds[3])
    _prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL)  # the fork server's end is the session's
    pid = os.fork()
    if pid == 0:
        report.close()
        os.setpgid(0, 0)
        _prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL)
        _harness(request, stdio, entry, args)
        os._exit(0)
    for fd in stdio:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    _report(report, {"started": True}, [pidfd])
    os.close(pidfd)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    _report(report, {"exit": status})
    os._exit(0)


def _session(request, fds, entry, args, ids):
    """G, cloned by the server straight into the session's new namespaces (_clone_session), PID 1
    of them: builds the session's files and reports its start; forks the harness, H; and once H
    has exited (or said it is exiting) and the rest of the session has SIGKILL on it, reports H's
    wait status. What goes wrong with it is the session's to see. ids: the server's uid and gid,
    which G keeps in its user namespace."""
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)  # the server's SIG_IGN would reap for us
    stdio, report = fds[:3], _socket.socket(fileno=fds[3])
    try:
        _prctl(_PR_SET_PDEATHSIG, _signal.SIGKILL)  # the fork server's end is the session's
        _own_ids(*ids)
        listeners = _own_sandbox(request)
    except BaseException as err:
        _report(report, {"error": "the session's sandbox could not be made: %s: %s" % (type(err).__name__, err)})
        os._exit(1)
    try:
        pidfd = os.pidfd_open(os.getpid())
        _report(report, {"started": True}, [pidfd] + [s.fileno() for s in listeners])
        os.close(pidfd)
        for s in listeners:
            s.close()
        os.dup2(stdio[2], 2)
        _prctl(_PR_SET_DUMPABLE, 0)
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        # Its capabilities go before the fork that runs the dependencies' hooks.
        _drop_capabilities()
        told_r, told_w = os.pipe()  # the harness says there that it is exiting
        harness = os.fork()
        if harness == 0:
            os.close(told_r)
            report.close()
            _harness(request, stdio, entry, args, told=told_w)
            os._exit(0)
        os.close(told_w)
        for fd in stdio:
            os.close(fd)
        status = _init_of(harness, told_r)
        # The session's stderr ends with its processes: the node does not wait for this
        # process's exit to see it end, nor for the kernel to unmap it and the harness; what is
        # left is reaped after the word.
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        _report(report, {"exit": status})
        report.close()
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
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)  # the sessions' first processes are reaped by the kernel
    ids = os.getuid(), os.getgid()  # a session's user namespace keeps them
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
        if request["tier"] == "none":
            if _fork_bare() == 0:
                control.close()
                _keeper(request, fds, entry, args)
        else:
            try:
                pid = _clone_session(request)
            except OSError as err:
                with _socket.socket(fileno=os.dup(fds[3])) as session_report:
                    _report(session_report, {"error": "the session's sandbox could not be made: %s" % err})
                pid = -1
            if pid == 0:
                control.close()
                _session(request, fds, entry, args, ids)
        for fd in fds:
            os.close(fd)
