"""What a Python harness imports, read without running any of it: the part of oz0's import check
(check.py) and of its loader for sessions made ahead (supervisor/ahead) that both run, put before
each in one script run as a session of the harness's interpreter.

check(PLUGIN_DIR, "-m", MODULE) or check(PLUGIN_DIR, FILE) reads the harness's module and the
plugin's own modules it reaches, parsed with ast and never run, and looks up each third-party
module they import with importlib.util.find_spec on its top-level name, which runs nothing of it
(a namespace package, which has no code, is looked into further). It returns {"files": the files
read, "deps": [{"module", "at"}] (imported as the harness starts), "loadable": [module] (every
installed third-party module imported anywhere, in a function or a try too), "unread": files left
unread by the bounds, "problem": null or {"kind", "module", "at", "what"}}.
"""

import ast
import collections
import importlib.machinery
import importlib.util
import json
import os
import stat
import sys

MAX_FILES = 500  # the plugin's files read, at most
MAX_BYTES = 2 << 20  # a file larger than this is not read
MAX_DEPS = 1000

STDLIB = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
NOT_FOUND = object()  # a top-level name whose spec cannot be asked (__main__): taken as found


def real(path):
    return os.path.realpath(path)


def inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Finder:
    """Where modules are, without running any."""

    def __init__(self, plugin_dir, own_top):
        self.plugin = real(plugin_dir)
        self.envs = {real(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
        self.own_top = own_top
        self.tops = {}

    def top(self, name):
        if name not in self.tops:
            try:
                self.tops[name] = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                self.tops[name] = NOT_FOUND
        return self.tops[name]

    def resolve(self, name):
        """The spec of a module by its dotted name, found through its parents' locations: None
        when it is not there."""
        parts = name.split(".")
        spec = self.top(parts[0])
        for i in range(1, len(parts)):
            if spec is None or spec is NOT_FOUND or spec.submodule_search_locations is None:
                return None
            try:
                spec = importlib.machinery.PathFinder.find_spec(
                    ".".join(parts[: i + 1]), list(spec.submodule_search_locations)
                )
            except Exception:  # a namespace path that cannot be computed before its parent runs
                return None
        return None if spec is NOT_FOUND else spec

    def own(self, top):
        """Whether a top-level name is the plugin's own: the harness's package, or a module that
        lies in the plugin's directory but not in its environment (.venv)."""
        if top == self.own_top:
            return True
        spec = self.top(top)
        if spec is None or spec is NOT_FOUND:
            return False
        paths = list(spec.submodule_search_locations or [])
        if spec.has_location and spec.origin:
            paths.append(spec.origin)
        for p in paths:
            p = real(p)
            if inside(p, self.plugin) and not any(inside(p, env) for env in self.envs):
                return True
        return False

    def missing(self, name):
        """The part of a third-party module's name that is not installed; None when it is. Only
        the top-level name is looked up, and a namespace package's children (it has no code)."""
        parts = name.split(".")
        spec = self.top(parts[0])
        if spec is None:
            return parts[0]
        i = 1
        while i < len(parts) and spec is not NOT_FOUND and namespace(spec):
            try:
                spec = importlib.machinery.PathFinder.find_spec(
                    ".".join(parts[: i + 1]), list(spec.submodule_search_locations)
                )
            except Exception:
                return None
            if spec is None:
                return ".".join(parts[: i + 1])
            i += 1
        return None


def namespace(spec):
    return spec.submodule_search_locations is not None and spec.origin in (None, "namespace")


def catches_import_error(handler):
    kinds = handler.type
    if kinds is None:
        return True
    for k in kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]:
        name = k.id if isinstance(k, ast.Name) else k.attr if isinstance(k, ast.Attribute) else ""
        if name in IMPORT_ERRORS:
            return True
    return False


def named(test, name):
    return (isinstance(test, ast.Name) and test.id == name) or (
        isinstance(test, ast.Attribute) and test.attr == name
    )


def main_guard(test):
    return (
        isinstance(test, ast.Compare)
        and named(test.left, "__name__")
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


class Reader:
    def __init__(self, finder):
        self.finder = finder
        self.seen = {}  # a module of the plugin's -> whether it was reached only optionally
        self.queue = collections.deque()
        self.files = []
        self.unread = 0
        self.deps = {}
        self.loadable = {}  # every installed third-party module imported anywhere, lazily too
        self.problem = None

    def where(self, path, line):
        p = real(path)
        if inside(p, self.finder.plugin):
            p = os.path.relpath(p, self.finder.plugin)
        return "%s:%d" % (p, line) if line else p

    def fail(self, kind, module, at, what=""):
        if self.problem is None:
            self.problem = {"kind": kind, "module": module, "at": at, "what": what}

    def want(self, name, optional, main=False):
        """Queues a module of the plugin's to read, after its parents (their __init__ runs first)."""
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            n = ".".join(parts[:i])
            key = (n, main and i == len(parts))
            if key not in self.seen or (self.seen[key] and not optional):
                self.seen[key] = optional
                self.queue.append((n, optional, key[1]))

    def run(self):
        while self.queue and self.problem is None:
            name, optional, main = self.queue.popleft()
            if self.seen.get((name, main)) != optional:
                continue  # queued again, required this time
            spec = self.finder.resolve(name)
            if spec is None or not spec.has_location or not (spec.origin or "").endswith(".py"):
                continue  # a namespace package, an extension module, or not there (said by who imports it)
            self.read(spec.origin, name, spec.submodule_search_locations is not None, optional, main)

    def read(self, path, name, package, optional, main):
        if len(self.files) >= MAX_FILES:
            self.unread += 1
            return
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
                self.unread += 1  # a pipe would block the read; a large file is no hand-written module
                return
            with open(path, "rb") as f:
                source = f.read(MAX_BYTES + 1)
        except OSError as err:
            self.fail("error", name, self.where(path, 0), "cannot read it: %s" % err.strerror)
            return
        if self.where(path, 0) not in self.files:
            self.files.append(self.where(path, 0))
        try:
            tree = ast.parse(source, path)
        except SyntaxError as err:
            self.fail("syntax", name, self.where(path, err.lineno or 0), "%s: %s" % (type(err).__name__, err.msg))
            return
        except (ValueError, RecursionError, MemoryError) as err:
            self.fail("syntax", name, self.where(path, 0), "%s: %s" % (type(err).__name__, err))
            return
        base = name if package else name.rpartition(".")[0]
        stack = [(node, False, optional) for node in reversed(tree.body)]
        while stack:
            node, lazy, opt = stack.pop()
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imported(alias.name, (), path, node.lineno, lazy, opt)
                continue
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level:
                    up = base.split(".") if base else []
                    if node.level - 1 > len(up) or not base:
                        continue  # beyond the top: it fails as it runs, as Python says
                    up = up[: len(up) - (node.level - 1)]
                    module = ".".join(up + ([module] if module else []))
                    self.own(module, [a.name for a in node.names], path, node.lineno, opt)
                else:
                    self.imported(module, [a.name for a in node.names], path, node.lineno, lazy, opt)
                continue
            children = []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lazy = True  # runs when called, if ever
            if isinstance(node, ast.If) and (named(node.test, "TYPE_CHECKING") or (main_guard(node.test) and not main)):
                children = [(n, lazy, opt) for n in node.orelse]  # its body never runs
            elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                caught = any(catches_import_error(h) for h in node.handlers)
                children = [(n, lazy, opt or caught) for n in node.body]
                children += [(n, lazy, opt) for h in node.handlers for n in h.body]
                children += [(n, lazy, opt) for n in node.orelse + node.finalbody]
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        children.append((child, lazy, opt))
                    elif isinstance(child, (ast.excepthandler, ast.match_case)):
                        children += [(n, lazy, opt) for n in child.body]
            stack.extend(reversed(children))

    def imported(self, module, names, path, line, lazy, optional):
        top = module.partition(".")[0]
        if not top or top in STDLIB or top == "__main__":
            return
        if self.finder.own(top):
            self.own(module, names, path, line, optional)
            return
        if module not in self.loadable and len(self.loadable) < MAX_DEPS and not self.finder.missing(module):
            self.loadable[module] = self.where(path, line)
        if lazy or optional or module in self.deps:
            return
        at = self.where(path, line)
        missing = self.finder.missing(module)
        if missing:
            self.fail("missing", missing, at)
        elif len(self.deps) < MAX_DEPS:
            self.deps[module] = at

    def own(self, module, names, path, line, optional):
        """A module of the plugin's imported (names: what from-import takes of it, a submodule or
        an attribute): read too."""
        if self.finder.resolve(module) is None:
            if not optional:
                self.fail("own", module, self.where(path, line))
            return
        self.want(module, optional)
        for n in names:
            if n != "*" and self.finder.resolve(module + "." + n) is not None:
                self.want(module + "." + n, optional)


def check(plugin_dir, *entry, pythonpath=None):
    """pythonpath: the plugin's own import path (os.pathsep-separated); None: PYTHONPATH's."""
    if pythonpath is None:
        pythonpath = os.environ.get("PYTHONPATH", "")
    pythonpath = [p for p in pythonpath.split(os.pathsep) if p]
    if entry[0] == "-m":
        entry = entry[1]
        # As python -m runs it: the working directory first, then PYTHONPATH (-I ignored it).
        sys.path[0:0] = [os.getcwd()] + pythonpath
        reader = Reader(Finder(plugin_dir, entry.partition(".")[0]))
        spec = reader.finder.resolve(entry)
        if spec is None:
            reader.fail("entry", entry, "")
        elif spec.submodule_search_locations is not None:
            if reader.finder.resolve(entry + ".__main__") is None:
                reader.fail("entry", entry + ".__main__", "")
            reader.want(entry + ".__main__", False, main=True)
        else:
            reader.want(entry, False, main=True)
    else:
        entry = entry[0]
        sys.path[0:0] = [os.path.dirname(real(entry))] + pythonpath
        reader = Reader(Finder(plugin_dir, None))
        if not os.path.isfile(entry):
            reader.fail("entry", entry, "")
        else:
            reader.read(entry, "__main__", False, False, True)
    reader.run()
    deps = [{"module": m, "at": at} for m, at in sorted(reader.deps.items())]
    loadable = list(reader.loadable)  # in the order the harness first imports them
    return {"files": reader.files, "deps": deps, "loadable": loadable, "unread": reader.unread, "problem": reader.problem}
