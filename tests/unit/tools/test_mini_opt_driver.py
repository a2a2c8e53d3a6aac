"""mini-opt end to end, in-process: discovery, named pipelines, remarks, the crash reproducer."""

import contextlib
import io
import re
from pathlib import Path

from xdsl.passes import ModulePass

from minimlir.compiler.pipelines import PIPELINES
from minimlir.tools.mini_opt import MiniOptMain, main, our_dialects, our_passes, pass_summary

PLUGIN = str(Path(__file__).parents[2] / "lit" / "tools" / "mini-opt" / "Inputs" / "test_passes.py")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_discovery_finds_our_passes_and_dialects():
    passes = our_passes()
    for name, cls in passes.items():
        assert issubclass(cls, ModulePass) and cls.name == name
        assert cls.__module__.startswith("minimlir.passes.")
        assert not cls.__module__.rsplit(".", 1)[1].startswith("_")
    names = {d.name for d in our_dialects()}
    assert {"loop", "mem"} <= names
    tool = MiniOptMain(args=[])
    assert {"cse", "dce", "canonicalize"} <= set(tool.available_passes)
    assert set(passes) <= set(tool.available_passes)
    assert {"loop", "mem", "func", "arith"} <= set(tool.ctx.registered_dialect_names)


def test_named_pipelines_are_valid_and_do_not_shadow_passes():
    tool = MiniOptMain(args=[])
    for name, entry in PIPELINES.items():
        assert name not in tool.available_passes, f"named pipeline '{name}' shadows a pass"
        assert entry.description
        tool.args.passes = name
        assert tool.build_pipeline(), name


def test_pass_summary_fallbacks():
    from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

    assert pass_summary(CommonSubexpressionElimination) == "Common subexpression elimination."


def test_crash_reproducer_reproduces(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text("func.func @ok() {\n  func.return\n}\nfunc.func @crash() {\n  func.return\n}\n")
    code, _, err = run(str(src), "--load-pass-plugin", PLUGIN, "-p", "cse,func.func(test-crash)")
    assert code == 1 and "Traceback" not in err
    m = re.search(r"note: reproduce with: mini-opt (\S+) -p '([^']+)'", err)
    assert m, err
    repro, pipeline = m.groups()
    assert pipeline == "func.func(test-crash)"
    text = Path(repro).read_text()
    # The IR before the crashing pass: @ok already went through it, @crash did not.
    assert 'test.seen = "yes"' in text and '"crash"' in text
    code2, _, err2 = run(repro, "--load-pass-plugin", PLUGIN, "-p", pipeline)
    assert code2 == 1 and "pass 'test-crash' crashed: ZeroDivisionError" in err2
    Path(repro).unlink()


def test_remarks_exit_zero_and_go_to_stderr(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text("func.func @f() {\n  func.return\n}\n")
    code, out, err = run(str(src), "--load-pass-plugin", PLUGIN, "-p", "test-diagnose")
    assert code == 0
    assert err.startswith(f"{src}:1:1: remark: function @f has 1 ops\n")
    assert "func.func @f" in out and "remark" not in out


def test_help_and_version_exit_zero():
    assert run("--help")[0] == 0
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("mini-opt ")
    assert run("--no-such-flag")[0] == 1
