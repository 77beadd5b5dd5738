# oz0's loader of a Python session made ahead of its job (reader.py and warmups.py are put before
# this, in one script run with -S -c by the harness's interpreter, in the session's sandbox: _site
# does site's work, without the plugin's sitecustomize).
#
# Arguments: PLUGIN_DIR PYTHONPATH (-m MODULE | FILE) ARGS... : the harness's command as the node
# resolved it, and the plugin's own import path, which the environment leaves out until the job.
#
# 1. It reads what the harness imports (reader.py: parsed, never run), and imports the installed
#    third-party modules among them, with the plugin's own directories off sys.path: nothing of
#    the plugin's runs, and no module of the plugin's can stand in for a dependency's.
# 2. It warms up the frameworks among them (warmups.py: an agent of oz0's own, on a model answered
#    in this process), and says it is ready on stdout, one line: {"type": "loaded", "modules": N,
#    "warmed": [...], "failed": [...], "seconds": S, "at": T}.
# 3. It reads one line on stdin, {"type": "bind", "env": {...}}: the job's environment, which it
#    sets (PYTHONPATH on sys.path too).
# 4. It runs the harness as `python -m MODULE` or `python FILE` would, which reads the session
#    request on stdin as every harness does.
#
# What the dependencies print as they load goes to a file of the session's own, and to stderr, the
# job's log, once bound (its end, at most LOG_TAIL bytes), so that the job shows it as a session
# started at its job would.

import gc as _gc
import importlib as _importlib
import runpy as _runpy
import time as _time

LOG_TAIL = 64 << 10
MAX_BIND = 1 << 20


def _capture_stderr():
    """Points fd 2 at a file of the session's own; returns (the file, the real stderr's fd)."""
    path = os.path.join(os.environ.get("TMPDIR") or os.environ.get("HOME") or ".", ".oz0-loading.log")
    log = open(path, "w+b")
    os.unlink(path)
    sys.stderr.flush()
    real = os.dup(2)
    os.dup2(log.fileno(), 2)
    return log, real


def _replay_stderr(log, real):
    """Gives fd 2 back and writes the end of what loading printed to it."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.dup2(real, 2)
    os.close(real)
    size = log.seek(0, os.SEEK_END)
    log.seek(max(0, size - LOG_TAIL))
    tail = log.read()
    log.close()
    if size > LOG_TAIL:
        tail = b"(the start of what loading printed is left out)\n" + tail.split(b"\n", 1)[-1]
    if tail:
        os.write(2, tail)


def _site(pythonpath):
    """What site does as Python starts (this runs with -S) but run a sitecustomize of the
    plugin's own, which the .pth of its editable install (uv sync's) puts on the path: that is the
    plugin's code, which runs with its job (_bind), never before. The plugin's own directories
    leave sys.path; a sitecustomize (and usercustomize) outside them runs now, as at a session's
    start, unless the plugin has its own (first on a session's path, it is the one that runs)."""
    import site

    own = {os.path.realpath(p) for p in pythonpath.split(os.pathsep) if p}
    hooks = ("sitecustomize", "usercustomize")
    for name in hooks:
        sys.modules[name] = None  # site's import of it fails, quietly
    try:
        site.main()
    finally:
        for name in hooks:
            sys.modules.pop(name, None)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p) not in own]
    if not any(os.path.isfile(os.path.join(d, "sitecustomize.py")) for d in own):
        site.execsitecustomize()
    if site.ENABLE_USER_SITE:
        site.execusercustomize()


def _load(plugin_dir, pythonpath, entry):
    """Imports the harness's installed dependencies; returns what it imported and what failed."""
    saved = list(sys.path)
    try:
        modules = check(plugin_dir, *entry, pythonpath=pythonpath)["loadable"]
    finally:
        # The plugin's own directories leave sys.path before any dependency is imported.
        sys.path[:] = saved
        _importlib.invalidate_caches()
    loaded, failed = [], []
    for name in modules:
        try:
            _importlib.import_module(name)
            loaded.append(name)
        except BaseException as err:  # a dependency that fails here fails the job as it imports
            failed.append("%s: %s: %s" % (name, type(err).__name__, str(err)[:200]))
    return loaded, failed


def _read_bind():
    """The bind line, read a byte at a time: the session request after it is the harness's."""
    line = bytearray()
    while len(line) < MAX_BIND:
        b = os.read(0, 1)
        if not b:
            os._exit(0)  # the node let go of this session before its job: nothing to run
        if b == b"\n":
            break
        line += b
    message = json.loads(line.decode("utf-8"))
    if not isinstance(message, dict) or message.get("type") != "bind":
        raise SystemExit("oz0 loader: the first line is not a bind")
    return message


def _bind(message, entry):
    env = message.get("env") or {}
    for key, value in env.items():
        os.environ[key] = value
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if entry[0] == "-m":
        sys.path[0:1] = [os.getcwd()] + paths
    else:
        sys.path[0:1] = [os.path.dirname(real(entry[0]))] + paths
    _forget_listings([sys.path[0]] + paths)
    # As site does at start-up for a session started at its job: a sitecustomize on the plugin's
    # path (which comes first) is imported.
    for path in paths:
        if os.path.isfile(os.path.join(path, "sitecustomize.py")):
            sys.modules.pop("sitecustomize", None)
            try:
                _importlib.import_module("sitecustomize")
            except ImportError:
                pass
            break


def _forget_listings(dirs):
    """Drops what the import system has cached of dirs and the directories under them (the
    plugin's: a file added since the session was made is found). The dependencies' listings are
    kept: a change of the plugin's environment makes new sessions, and listing them all again cost
    each job 10 to 70 ms."""
    prefixes = tuple(d.rstrip(os.sep) + os.sep for d in dirs if d)
    for key in list(sys.path_importer_cache):
        if isinstance(key, str) and (key in dirs or key.startswith(prefixes)):
            del sys.path_importer_cache[key]


def _run(entry, args):
    if entry[0] == "-m":
        sys.argv = [entry[1]] + args
        _runpy.run_module(entry[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = [entry[0]] + args
        _runpy.run_path(entry[0], run_name="__main__")


def _threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _main():
    plugin_dir, pythonpath = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    fork = rest[:1] == ["--fork"]
    if fork:
        rest = rest[1:]
    entry, args = (rest[:2], rest[2:]) if rest[0] == "-m" else (rest[:1], rest[1:])
    started = _time.monotonic()
    log, real_stderr = _capture_stderr()
    _site(pythonpath)
    loaded, failed = _load(plugin_dir, pythonpath, entry)
    warmed, cold = _warm_up()
    _gc.collect()
    _gc.freeze()  # what loading made stays put: a process forked from here shares it
    report = {"type": "loaded", "modules": len(loaded), "warmed": warmed, "failed": failed + cold,
              "seconds": round(_time.monotonic() - started, 3), "at": _time.time()}
    if fork:
        # A fork copies only the thread that forks: a library's thread (a lock it held) would be
        # missing from every session. Such a harness is made ahead one session at a time instead.
        threads = _threads()
        clone3 = _has_clone3()
        report["fork"] = threads == 1 and _bare_fork is not None and clone3
        if threads != 1:
            report["threads"] = threads
        if _bare_fork is None:
            report["no_bare_fork"] = True  # a libc without _Fork: no fork without the hooks
        if not clone3:
            report["no_clone3"] = True  # a kernel that will not clone a session into its namespaces
    os.write(1, (json.dumps(report) + "\n").encode())
    if fork:
        _replay_stderr(log, real_stderr)  # the fork server's own log
        if report["fork"]:
            _serve(entry, args, report)
        os._exit(0)
    message = _read_bind()
    _replay_stderr(log, real_stderr)
    _bind(message, entry)
    _run(entry, args)


_main()
