"""mini-opt: the minimlir pass driver (an mlir-opt look-alike on top of xDSL's xdsl-opt).

Passes and dialects are discovered: every concrete `ModulePass` defined in a non-`_` module of
`minimlir.passes` and every `Dialect` object in a module of `minimlir.dialects` is registered.
"""

import importlib
import inspect
import pkgutil
import sys

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.xdsl_opt_main import xDSLOptMain


def _modules(package_name: str):
    package = importlib.import_module(package_name)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        yield importlib.import_module(f"{package_name}.{info.name}")


def our_passes() -> dict[str, type[ModulePass]]:
    """Every concrete ModulePass defined in minimlir.passes, by pass name."""
    found: dict[str, type[ModulePass]] = {}
    for module in _modules("minimlir.passes"):
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, ModulePass)
                and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)
                and isinstance(getattr(obj, "name", None), str)
            ):
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


class MiniOptMain(xDSLOptMain):
    def register_all_dialects(self):
        super().register_all_dialects()
        for dialect in our_dialects():
            self.ctx.register_dialect(dialect.name, lambda d=dialect: d)

    def register_all_passes(self):
        super().register_all_passes()
        for name, cls in our_passes().items():
            self.register_pass(name, lambda c=cls: c)


def main(argv: list[str] | None = None) -> int:
    MiniOptMain(description="minimlir modular optimizer driver", args=argv).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
