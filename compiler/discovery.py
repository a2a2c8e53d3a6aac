"""Discovery: every pass and dialect minimlir defines, found by walking the packages (no hand-kept
registry), next to xDSL's; the named pipelines; one line describing a pass.

    our_passes()        {"graph-fuse": GraphFusePass, ...}: ModulePasses defined below minimlir.passes
    our_dialects()      [Graph, Loop, Mem, ...]: Dialect objects defined below minimlir.dialects
    pass_registry()     every pass by name (xDSL's and ours), as PipelineBuilder wants them
    named_pipelines()   {"compile": (pipeline text, description), ...} (minimlir.compiler.pipelines)

A module (or package) whose dotted name has a part starting with `_` is a helper and is skipped.

Start-up: the tools must not import every pass and dialect to run one of them. `discovery_index()`
says where each pass and dialect is defined (`{"passes": {"graph-fuse": ["minimlir.passes.graph.fuse",
"GraphFusePass"]}, "dialects": {"graph": ["minimlir.dialects.graph", "Graph"]}}`), found by the same
walk, once: it is cached in `$MINIMLIR_CACHE_DIR` (else ~/.cache/minimlir) under a key of the path,
size and mtime of every `.py` file below minimlir.passes and minimlir.dialects (helpers included), so
adding, editing or removing a file redoes the walk, as Python's own .pyc check does. `our_pass_factories()`
and `our_dialect_factories()` turn it into factories that import one module when first called:
pass_registry() and minimlir.compiler.context register those, so a pipeline imports only the passes it
names and parsing loads only the dialects the input uses.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import pkgutil
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from types import ModuleType

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from minimlir.compiler.pipelines import PIPELINES


def _modules(package_name: str):
    """`package_name` and every module below it (subpackages walked), skipping any dotted part that
    starts with `_` (shared helpers, and the moved-module aliases, which live in no file)."""
    package = importlib.import_module(package_name)
    yield package
    infos = pkgutil.walk_packages(package.__path__, package_name + ".", onerror=_raise)
    for info in sorted(infos, key=lambda m: m.name):
        if any(part.startswith("_") for part in info.name[len(package_name) + 1:].split(".")):
            continue
        yield importlib.import_module(info.name)


def _raise(name: str) -> None:
    raise  # walk_packages swallows a subpackage's ImportError unless told; a broken pass must show


def passes_defined_in(module: ModuleType) -> Iterator[type[ModulePass]]:
    """Every concrete, named ModulePass class defined (not imported) in `module`."""
    for obj in vars(module).values():
        if (
            inspect.isclass(obj)
            and issubclass(obj, ModulePass)
            and obj.__module__ == module.__name__
            and not inspect.isabstract(obj)
            and isinstance(getattr(obj, "name", None), str)
        ):
            yield obj


def our_passes() -> dict[str, type[ModulePass]]:
    """Every concrete ModulePass defined in minimlir.passes, by pass name."""
    found: dict[str, type[ModulePass]] = {}
    for module in _modules("minimlir.passes"):
        for obj in passes_defined_in(module):
            if obj.name in found and found[obj.name] is not obj:
                raise RuntimeError(f"pass '{obj.name}' is defined twice")
            found[obj.name] = obj
    return found


def our_dialects() -> list[Dialect]:
    """Every Dialect object defined in minimlir.dialects."""
    return [
        obj
        for module in _modules("minimlir.dialects")
        for obj in vars(module).values()
        if isinstance(obj, Dialect)
    ]


def named_pipelines() -> dict[str, tuple[str, str]]:
    """Registered named pipelines: name -> (pipeline text, description)."""
    return {name: (entry[0], entry[1]) for name, entry in PIPELINES.items()}


def pass_summary(cls: type) -> str:
    """One line: the class docstring's first line, else the pass module's (STYLE puts it there)."""
    doc = cls.__dict__.get("__doc__")
    if doc and doc.startswith(cls.__name__ + "("):
        doc = None  # dataclass's generated signature, not a description
    if not doc:
        doc = getattr(sys.modules.get(cls.__module__), "__doc__", None)
    for line in (doc or "").strip().splitlines():
        if line.strip():
            return line.strip()
    # No docstring anywhere (xDSL's cse, dce): the class name is the best description left.
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", cls.__name__.removesuffix("Pass"))
    return " ".join(words).capitalize() + "." if words else ""


@functools.cache
def xdsl_universe():
    """xDSL's dialects, passes and targets (`Universe.get_multiverse()`: it scans the installed
    packages' entry points, so it is done once per process)."""
    from xdsl.universe import Universe

    return Universe.get_multiverse()


def pass_registry() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass by name: xDSL's and ours (ours win on a clash), each imported when first used."""
    passes: dict[str, Callable[[], type[ModulePass]]] = dict(xdsl_universe().all_passes)
    passes.update(our_pass_factories())
    return passes


# --- the index: where each pass and dialect is defined, without importing it ---------------------------

INDEXED_PACKAGES = ("minimlir.passes", "minimlir.dialects")
_INDEX_FORMAT = 1


def _package_dirs(package_name: str) -> list[str]:
    spec = importlib.util.find_spec(package_name)  # imports the parent (the namespace), not the package
    return list(spec.submodule_search_locations or []) if spec is not None else []


def index_fingerprint(dirs: list[str] | None = None) -> str:
    """The cache key: Python's version and the path, size and mtime of every `.py` file below `dirs`
    (default: the folders of INDEXED_PACKAGES)."""
    h = hashlib.sha256(f"{_INDEX_FORMAT} {sys.version}".encode())
    for top in dirs if dirs is not None else [d for p in INDEXED_PACKAGES for d in _package_dirs(p)]:
        for root, subdirs, files in os.walk(top):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__" and not d.startswith("."))
            for f in sorted(files):
                if f.endswith(".py"):
                    path = os.path.join(root, f)
                    st = os.stat(path)
                    h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def walk_index() -> dict[str, dict[str, list[str]]]:
    """The index by a full walk (every pass and dialect module imported): what the cache holds."""
    passes = {name: [cls.__module__, cls.__qualname__] for name, cls in our_passes().items()}
    dialects: dict[str, list[str]] = {}
    for module in _modules("minimlir.dialects"):
        for attr, obj in vars(module).items():
            if isinstance(obj, Dialect):
                dialects.setdefault(obj.name, [module.__name__, attr])
    return {"passes": dict(sorted(passes.items())), "dialects": dict(sorted(dialects.items()))}


def _index_file() -> str:
    folder = os.environ.get("MINIMLIR_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "minimlir")
    where = hashlib.sha256("\0".join(d for p in INDEXED_PACKAGES for d in _package_dirs(p)).encode())
    return os.path.join(folder, f"discovery-{where.hexdigest()[:16]}.json")  # one file per installed tree


_index: dict[str, dict[str, list[str]]] | None = None


def discovery_index(cache: bool = True) -> dict[str, dict[str, list[str]]]:
    """{"passes": {name: [module, class]}, "dialects": {name: [module, attribute]}}: the cached walk
    when its key still matches the files, else a fresh walk (then written back). `cache=False` walks."""
    global _index
    if not cache:
        return walk_index()
    if _index is not None:
        return _index
    key = index_fingerprint()
    path = _index_file()
    try:
        with open(path, encoding="utf-8") as f:
            stored = json.load(f)
        if stored.get("key") == key:
            _index = {"passes": stored["passes"], "dialects": stored["dialects"]}
            return _index
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # no cache yet, or an unreadable one: walk
    _index = walk_index()
    try:  # atomically: tools start in parallel (lit), each reads a whole file or none
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".discovery-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"key": key, **_index}, f, indent=1)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only cache folder: every start walks, as before the cache
    return _index


def _imported(module: str, attr: str):
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def our_pass_factories() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass of minimlir.passes by name, as a factory importing its module when called."""
    return {
        name: functools.partial(_imported, module, qualname)
        for name, (module, qualname) in discovery_index()["passes"].items()
    }


def our_dialect_factories() -> dict[str, Callable[[], Dialect]]:
    """Every dialect of minimlir.dialects by name, as a factory importing its module when called."""
    return {
        name: functools.partial(_imported, module, attr)
        for name, (module, attr) in discovery_index()["dialects"].items()
    }
