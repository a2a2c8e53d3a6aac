"""minimlir.dialects._shapes: symbolic dim expressions (hash-consed, simplified, printed, parsed)."""

from __future__ import annotations

import pytest

from minimlir.dialects import _shapes as S

b, s, h = S.sym("batch"), S.sym("seq"), S.sym("h")


def test_broadcast_rule_and_units():
    assert S.bcast(b, b) is b
    assert S.bcast(b, 1) is b and S.bcast(1, b) is b
    assert S.mul(b, 1) is b and S.add(b, 0) is b
    assert str(S.bcast(b, s)) == "max(batch, seq)"
    assert S.bcast(S.bcast(b, s), s) is S.bcast(b, s)


def test_hash_consing_and_canonical_order():
    assert b * s is s * b
    assert (b + 1) * s is s * b + s
    assert S.parse("seq*batch") is b * s
    assert S.floordiv(b * s * 512, 8 * 64) is b * s  # a Reshape's -1, exact
    assert S.floordiv(b * 6, 4) is not b  # inexact: kept
    assert str(S.floordiv(b * 6, 4)) == "(6*batch)/4"
    assert S.mod(b * 8, 4) is S.const(0)
    assert S.ceildiv(b * 4, 4) is b


def test_conv_output_size_prints_as_written():
    e = S.floordiv(h - 3, 2) + 1
    assert str(e) == "(h-3)/2+1"
    assert e.evaluate({"h": 9}) == 4 and e.evaluate({"h": 10}) == 4


@pytest.mark.parametrize("text", [
    "batch", "(h-3)/2+1", "batch*seq", "max(a, b)", "min(a, 4)", "ceildiv(h, 2)", "a-2*b-1", "h%4",
    "'seq len'*2", "x.dim1+3", "(6*n)/4", "4*((6*n)/4)", "2*(h/2)",
])
def test_print_parse_round_trip(text):
    e = S.parse(text)
    assert S.parse(str(e)) is e


def test_parse_errors():
    for bad in ["", "a +", "max(a)", "(a", "a b", "3 $ 4"]:
        with pytest.raises(S.ParseError):
            S.parse(bad)


def test_evaluate_missing_symbol_and_division_by_zero():
    with pytest.raises(KeyError):
        (b * s).evaluate({"batch": 2})
    with pytest.raises(ZeroDivisionError):
        S.floordiv(b, s).evaluate({"batch": 2, "seq": 0})


def test_deep_broadcast_chain_is_linear():
    """Each broadcasting op builds its dim from both inputs' dims (which share their history): a
    chain of 2000 stays the symbol itself and creates no new nodes (a tree would have 2^2000)."""
    d = S.bcast(S.sym("c"), S.sym("c"))
    before = len(S._TABLE)
    for _ in range(2000):
        d = S.bcast(S.mul(d, 1), S.add(d, 0))
    assert d is S.sym("c")
    e = S.sym("c")
    for k in range(2000):  # distinct dims: one node per step (plus its constant)
        e = S.bcast(e + 1, S.sym("c") + k + 1)
    assert len(S._TABLE) - before <= 3 * 2000


def test_materialize_builds_each_node_once():
    calls = []

    def emit(kind, operands):
        calls.append((kind, operands))
        return f"v{len(calls)}"

    memo: dict = {}
    e = S.floordiv(h - 3, 2) + 1
    e.materialize(emit, memo)
    n = len(calls)
    (S.floordiv(h - 3, 2) * 4).materialize(emit, memo)  # reuses (h-3)/2
    assert [k for k, _ in calls[n:]].count("fdiv") == 0


def test_failed_check_names_the_input_dim_and_expression():
    checks = [{"kind": "bcast", "lhs": "x.dim1", "rhs": "y.dim1", "op": "graph.add", "loc": "Add_0"},
              {"kind": "eq", "lhs": "6*batch", "rhs": "4*((6*batch)/4)", "op": "graph.reshape", "loc": ""}]
    ok = [("x", ["batch", ""], (2, 3)), ("y", ["batch", ""], (2, 1))]
    assert S.failed_check(checks, ok) is None
    msg = S.failed_check(checks, [("x", ["batch", ""], (2, 3)), ("y", ["batch", ""], (2, 5))])
    assert msg == ("input 'x': dim 1 ('x.dim1') is 3: graph.add (Add_0) broadcasts x.dim1 = 3 with "
                   "y.dim1 = 5, which must be equal or 1")
    msg = S.failed_check(checks, [("x", ["batch", ""], (3, 3)), ("y", ["batch", ""], (3, 3))])
    assert msg is not None and "input 'x': dim 0 ('batch') is 3" in msg and "6*batch = 18" in msg


def test_division_by_a_monomial_with_a_coefficient():
    """A Reshape's -1 dim with a dynamic divisor: (64*batch*seq) / (16*batch*seq) is 4 (it was kept
    as a division, and the reshape's element-count check then could not be proved, which costs
    every call the checked path)."""
    b, s = S.sym("batch"), S.sym("seq")
    assert S.floordiv(b * s * 64, b * s * 16) is S.const(4)
    assert S.ceildiv(b * s * 64 + s * 32, s * 16) is b * 4 + 2
    assert S.floordiv(b * s * 64, s * 48).kind == "fdiv"  # 4*batch/3: inexact, kept
    assert S.floordiv(b * s * 64 + 3, s * 16).kind == "fdiv"  # a constant term: kept
    assert S.floordiv(b * 64, b * 16 + s).kind == "fdiv"  # a sum of two terms: kept
