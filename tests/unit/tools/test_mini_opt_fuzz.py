"""Fuzz mini-opt in-process with mutated and truncated inputs: never an uncaught exception, exit code 0 or 1."""

import contextlib
import io
import random
import sys

import pytest

from minimlir.tools.mini_opt import main

SEED_INPUT = b"""\
#map = affine_map<(d0) -> (d0 + 1)>
func.func @f(%a: i32, %t: tensor<4xf32>) -> i32 {
  %c = arith.constant 42 : i32
  %0 = arith.addi %a, %c : i32
  %1 = "arith.muli"(%0, %0) : (i32, i32) -> i32 loc("node"("model.onnx":3:4))
  %s = "test.op"() {name = "a \\"quoted\\" string", dims = [1, 2, 3]} : () -> i64
  cf.br ^bb1(%1 : i32)
^bb1(%x: i32):
  func.return %x : i32
}
// -----
func.func @g(%m: memref<?x4xf32>) {
  %i = arith.constant 0 : index
  %v = memref.load %m[%i, %i] : memref<?x4xf32>
  func.return
}
"""

TOKENS = [b"{", b"}", b"(", b")", b"<", b">", b"[", b"]", b'"', b"%", b"^", b"@", b"#", b"!", b":", b"=",
          b"->", b"loc(", b"// -----\n", b"\x00", b"\xff", b"\xc3", b"tensor<", b"0x", b"1e999", b"-",
          b"builtin.module", b"func.func", b"\n", b" ", b"//", b"\\", b"dense<", b"i99999999"]


def mutate(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(9)
    lines = data.splitlines(keepends=True)
    k = rng.randrange(len(lines)) if lines else 0
    if kind == 6:  # drop a line
        return b"".join(lines[:k] + lines[k + 1 :])
    if kind == 7:  # swap two lines
        m = rng.randrange(len(lines)) if lines else 0
        if lines:
            lines[k], lines[m] = lines[m], lines[k]
        return b"".join(lines)
    if kind == 8:  # truncate at a line boundary
        return b"".join(lines[:k])
    i = rng.randrange(len(data) + 1)
    if kind == 0:  # truncate
        return data[:i]
    if kind == 1:  # flip a byte
        j = min(i, len(data) - 1)
        return data[:j] + bytes([rng.randrange(256)]) + data[j + 1 :]
    if kind == 2:  # insert a token
        return data[:i] + rng.choice(TOKENS) + data[i:]
    if kind == 3:  # delete a span
        return data[:i] + data[i + rng.randrange(1, 20) :]
    if kind == 4:  # duplicate a span
        j = min(len(data), i + rng.randrange(1, 40))
        return data[:j] + data[i:j] + data[j:]
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))  # junk


def cases(n: int = 300):
    rng = random.Random(20240917)
    for _ in range(n):
        data = SEED_INPUT
        for _ in range(rng.choice((1, 1, 2, 3))):
            data = mutate(rng, data)
        yield data


def run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


def test_fuzzed_inputs_never_crash(tmp_path):
    path = tmp_path / "fuzz.mlir"
    flags = [[], ["--split-input-file"], ["-p", "canonicalize,cse"], ["--verify-diagnostics"]]
    recursion_limit = sys.getrecursionlimit()
    codes: list[int] = []
    for i, data in enumerate(cases()):
        path.write_bytes(data)
        argv = [str(path), *flags[i % len(flags)]]
        code, err = run(argv)  # an uncaught exception fails the test here
        assert code in (0, 1), (argv, data, err)
        assert "Traceback" not in err, (data, err)
        assert "internal error" not in err, (data, err)
        if code == 1 and "--verify-diagnostics" not in argv:
            assert "error:" in err, (data, err)
        codes.append(code)
    assert sys.getrecursionlimit() == recursion_limit
    # The mutations must exercise both outcomes, or the fuzzer is not testing the error paths.
    assert codes.count(0) >= 15 and codes.count(1) >= 100, (codes.count(0), codes.count(1))


@pytest.mark.parametrize(
    "data",
    [b"", b"\n\n", b"// only a comment\n", b"\xff\xfe\x00", b'"unterminated', b"%x = ", b"func.func @f(",
     b"((((((((((((((((((((", b"{" * 5000, b"module {", b"}" * 10, b"\"nodialect.op\"() : () -> ()"],
)
def test_hand_picked_malformed_inputs(tmp_path, data):
    path = tmp_path / "bad.mlir"
    path.write_bytes(data)
    code, err = run([str(path)])
    assert code in (0, 1)
    assert "Traceback" not in err and "internal error" not in err, err
