"""mini-opt's pipeline syntax, option conversion and named-pipeline expansion."""

from dataclasses import dataclass
from typing import Literal

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import Func
from xdsl.passes import ModulePass

from minimlir.compiler.pass_manager import (
    NestEntry,
    NestStep,
    PassEntry,
    PassStep,
    PipelineBuilder,
    PipelineError,
    parse_pipeline,
    pipeline_str,
)


@dataclass(frozen=True)
class OptsPass(ModulePass):
    name = "opts"

    n: int = 1
    x: float = 0.5
    flag: bool = False
    sizes: tuple[int, ...] = ()
    label: str = "a"
    mode: Literal["fast", "slow"] = "fast"
    limit: int | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


@dataclass(frozen=True)
class NeedsPass(ModulePass):
    name = "needs"

    value: int

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


def builder(named: dict[str, tuple[str, str]] | None = None) -> PipelineBuilder:
    ctx = Context()
    ctx.load_dialect(Func)
    return PipelineBuilder({"opts": lambda: OptsPass, "needs": lambda: NeedsPass}, named or {}, ctx)


def build(text: str, **kw) -> list:
    return builder(**kw).build(parse_pipeline(text))


def test_parse_nesting_and_options():
    els = parse_pipeline("a, func.func(b{k=1 s=\"x y\"}, builtin.module(c)),d")
    assert [type(e) for e in els] == [PassEntry, NestEntry, PassEntry]
    nest = els[1]
    assert isinstance(nest, NestEntry) and nest.anchor == "func.func"
    b, inner = nest.elements
    assert isinstance(b, PassEntry) and b.name == "b"
    assert [(k, [v.text for v in vs]) for k, vs in b.options.items()] == [("k", ["1"]), ("s", ["x y"])]
    assert b.options["s"][0].quoted
    assert isinstance(inner, NestEntry) and inner.anchor == "builtin.module"


def test_anchored_form_strips_builtin_module():
    assert [e.name for e in parse_pipeline("builtin.module(a,b)", anchored=True)] == ["a", "b"]  # type: ignore
    assert parse_pipeline("builtin.module()", anchored=True) == []
    with pytest.raises(PipelineError, match="anchored on the module"):
        parse_pipeline("a,b", anchored=True)


def test_option_values_are_typed():
    (step,) = build("opts{n=0x10 x=2 flag sizes=1,2,3 label='hi, there' mode=slow limit=-3}")
    assert isinstance(step, PassStep)
    assert step.pass_ == OptsPass(16, 2.0, True, (1, 2, 3), "hi, there", "slow", -3)


def test_mlir_brace_list_and_underscore_names():
    (step,) = build("opts{sizes={4, 8} limit}")
    assert step.pass_ == OptsPass(sizes=(4, 8), limit=None)
    (step,) = build('opts{label="a \\"q\\""}')
    assert step.pass_.label == 'a "q"'


@pytest.mark.parametrize(
    "text, message",
    [
        ("opts{nn=1}", "pass 'opts' has no option 'nn'; did you mean 'n'\\?; valid options: n, x, flag, sizes"),
        ("opts{n=one}", "option 'n' of pass 'opts' expects int, got 'one'"),
        ("opts{n=1,2}", "expects int, got a list of 2 values"),
        ("opts{flag=maybe}", "option 'flag' of pass 'opts' expects bool, got 'maybe'"),
        ("opts{sizes=1,b}", r"expects tuple\[int, ...\], got '1,b'"),
        ("opts{mode=medium}", "expects 'fast' \\| 'slow', got 'medium'"),
        ("opts{n=1 n=2}", "option 'n' given twice"),
        ("opts{n=1", "expected '}' to close the pass options"),
        ("opts{label=\"x}", "unterminated string"),
        ("func.func(opts", "expected '\\)' to close the nested pipeline"),
        ("opts,,opts", "expected a pass name"),
        ("optz", "unknown pass 'optz'; did you mean 'opts'\\?"),
        ("needs", "pass 'needs' requires option 'value'"),
        ("nosuch.op(opts)", "unknown operation 'nosuch.op' used as a pipeline anchor"),
    ],
)
def test_pipeline_errors(text: str, message: str):
    with pytest.raises(PipelineError, match=message) as info:
        build(text)
    rendered = info.value.render()
    assert rendered.startswith("error: ")


def test_error_points_at_the_pass():
    with pytest.raises(PipelineError) as info:
        build("opts,func.func(optz)")
    assert info.value.pos == len("opts,func.func(")
    assert "  opts,func.func(optz)\n" + " " * (2 + 15) + "^" in info.value.render()


def test_named_pipeline_expands_in_place_and_detects_cycles():
    steps = build("func.func(clean),opts", named={"clean": ("opts{n=2},opts{n=3}", "")})
    assert isinstance(steps[0], NestStep)
    assert [s.pass_.n for s in steps[0].steps] == [2, 3]  # type: ignore
    assert pipeline_str(steps) == "func.func(opts{n=2},opts{n=3}),opts"
    with pytest.raises(PipelineError, match="includes itself"):
        build("loop", named={"loop": ("opts,loop", "")})
    with pytest.raises(PipelineError, match="takes no options"):
        build("clean{n=1}", named={"clean": ("opts", "")})


def test_pipeline_str_round_trips_options():
    steps = build("opts{n=2 label=\"a b\" sizes=1,2 flag}")
    text = pipeline_str(steps)
    assert text == 'opts{n=2 flag=true sizes=1,2 label="a b"}'
    assert build(text)[0].pass_ == steps[0].pass_
