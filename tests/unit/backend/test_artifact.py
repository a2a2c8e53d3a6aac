"""The deployable artifact (backend/artifact.py, minimlir.runtime, mini-compile, examples/c/main.c).

Artifacts built here are loaded in a fresh virtual environment that holds only numpy, run from C
(the system cc), and, cross-compiled for AArch64, run under qemu-user; the error cases (another ABI
version, changed or truncated params, a truncated .so, a CPU without the features, wrong inputs)
each give their own error.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import minimlir.runtime as rt
from minimlir.backend import _target
from minimlir.frontend import compile
from minimlir.compiler.params import save_params

REPO = Path(__file__).resolve().parents[3]
MLP = REPO / "examples" / "mlp.onnx"  # x: [batch, 64] -> probs: [batch, 10], weights embedded
CONV = REPO / "examples" / "conv_add_relu.onnx"  # x: [batch, 3, 16, 16], weights separate
MAIN_C = REPO / "examples" / "c" / "main.c"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("artifacts")
    mlp = compile(MLP)
    conv = compile(CONV)
    embed = mlp.export(d / "mlp.so", weights="embed", emit_header=True)
    separate = conv.export(d / "conv.so", weights="separate", emit_header=True)
    return {"dir": d, "mlp": mlp, "conv": conv, "embed": embed, "separate": separate}


def _c_inputs(shape, dtype=np.float32, index=0):
    """The inputs examples/c/main.c makes: ((7j + 3i) mod 13 - 6) / 8."""
    n = int(np.prod(shape))
    j = np.arange(n, dtype=np.int64)
    return (((7 * j + 3 * index) % 13 - 6) / 8.0).astype(dtype).reshape(shape)


# ------------------------------------------------------------------------------ what is written


def test_files_and_metadata(built):
    e, s = built["embed"], built["separate"]
    assert e.weights == "embed" and e.params_path is None and e.header_path.name == "mlp.h"
    assert s.weights == "separate" and s.params_path == built["dir"] / "conv.params" and s.params_path.is_file()
    meta = rt.read_metadata(e.path)
    assert meta["abi_version"] == rt.ABI_VERSION == 1
    assert meta["compiler"]["name"] == "minimlir" and meta["compiler"]["version"]
    assert meta["target"]["triple"] == _target.host_triple() and meta["target"]["cpu"] == _target.host_cpu()
    assert meta["inputs"] == [{"name": "x", "dtype": "float32", "shape": [None, 64], "dims": ["batch", 64]}]
    assert meta["outputs"][0]["name"] == "probs" and meta["outputs"][0]["shape"] == [None, 10]
    assert meta["params"]["mode"] == "embed" and len(meta["params"]["sha256"]) == 64
    smeta = rt.read_metadata(s.path)
    assert smeta["params"]["file"] == "conv.params"
    assert smeta["params"]["sha256"] == json.loads(s.params_path.read_bytes()[24:24 + 80].split(b",")[0] + b"}")["sha256"]
    # embedded: the weights are in the .so (bigger than them), separate: not
    assert e.path.stat().st_size > e.params_bytes
    assert s.path.stat().st_size < s.params_path.stat().st_size + 200_000


def test_export_of_a_cache_hit(tmp_path):
    """A model the compile cache served (no pass, no LLVM ran) exports the same artifact."""
    cold = compile(MLP, cache=tmp_path / "cache")
    hot = compile(MLP, cache=tmp_path / "cache")
    assert hot.program.cache_hit and not cold.program.cache_hit
    x = _c_inputs((2, 64))
    a = rt.load(cold.export(tmp_path / "cold.so").path)(x)[0]
    b = rt.load(hot.export(tmp_path / "hot.so").path)(x)[0]
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, cold(x)[0])


def test_only_the_interface_is_exported(built):
    out = subprocess.run(["nm", "-D", "--defined-only", str(built["embed"].path)], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("nm is not available")
    names = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    assert {"mml_open", "mml_run", "mml_metadata", "minimlir_metadata", "minimlir_params",
            "minimlir_num_threads"} <= names
    assert all(n.startswith(("mml_", "minimlir_")) for n in names), names  # no `main`, no kernels


# ------------------------------------------------------------------------------ the Python loader


@pytest.mark.parametrize("batch", [1, 5])
def test_runtime_matches_the_jit(built, batch):
    x = np.random.default_rng(batch).standard_normal((batch, 64)).astype(np.float32)
    m = rt.load(built["embed"].path)
    (y,) = m(x)
    np.testing.assert_array_equal(y, built["mlp"](x)[0])
    xc = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype(np.float32)
    c = rt.load(built["separate"].path)
    (yc,) = c.run({"x": xc})
    np.testing.assert_array_equal(yc, built["conv"](xc)[0])
    assert m.input_names == ["x"] and m.output_names == ["probs"]


def test_out_dlpack_and_threads(built):
    m = rt.load(built["embed"].path, num_threads=1)
    assert m.num_threads == 1
    m.num_threads = 0
    x = _c_inputs((3, 64))
    want = built["mlp"](x)[0]
    buf = np.zeros((3, 10), np.float32)
    (got,) = m(x, out=[buf])
    assert got is buf
    np.testing.assert_array_equal(buf, want)

    class OnlyDlpack:  # a DLPack producer that is not a NumPy array
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    (y,) = m(OnlyDlpack(x))
    np.testing.assert_array_equal(np.from_dlpack(y), want)  # outputs are DLPack producers too
    with pytest.raises(ValueError, match="num_threads"):
        m.num_threads = -1


def test_runtime_imports_no_compiler():
    code = ("import sys, minimlir.runtime\n"
            "bad = [m for m in ('xdsl', 'llvmlite', 'onnx', 'minimlir.backend', 'minimlir.frontend') if m in sys.modules]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fresh_venv_with_only_numpy(built, tmp_path):
    """A virtual environment holding only numpy (and a copy of runtime/ as minimlir.runtime)
    loads both artifacts and matches the JIT, with the dynamic batch at two sizes."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", f"numpy=={np.__version__}"], check=True,
                   capture_output=True)
    site = tmp_path / "site"
    shutil.copytree(REPO / "runtime", site / "minimlir" / "runtime",
                    ignore=shutil.ignore_patterns("__pycache__"))
    cases = []
    for batch in (2, 7):
        x = np.random.default_rng(batch).standard_normal((batch, 64)).astype(np.float32)
        xc = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype(np.float32)
        np.save(tmp_path / f"x{batch}.npy", x)
        np.save(tmp_path / f"xc{batch}.npy", xc)
        cases.append((batch, built["mlp"](x)[0], built["conv"](xc)[0]))
    script = textwrap.dedent(f"""
        import importlib.util, sys
        import numpy as np
        import minimlir.runtime as rt
        for name in ("xdsl", "llvmlite", "onnx"):
            assert importlib.util.find_spec(name) is None, name + " is installed in the fresh venv"
        mlp = rt.load({str(built['embed'].path)!r})
        conv = rt.load({str(built['separate'].path)!r})
        for b in (2, 7):
            np.save({str(tmp_path)!r} + f"/y{{b}}.npy", mlp(np.load({str(tmp_path)!r} + f"/x{{b}}.npy"))[0])
            np.save({str(tmp_path)!r} + f"/yc{{b}}.npy", conv.run({{"x": np.load({str(tmp_path)!r} + f"/xc{{b}}.npy")}})[0])
        print("ok", sorted(m for m in sys.modules if m.startswith("minimlir")))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(site)
    proc = subprocess.run([str(py), "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok")
    for batch, want, want_c in cases:
        np.testing.assert_array_equal(np.load(tmp_path / f"y{batch}.npy"), want)
        np.testing.assert_array_equal(np.load(tmp_path / f"yc{batch}.npy"), want_c)


# ------------------------------------------------------------------------------ errors


def _two_input_model(tmp_path) -> Path:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"])], "add2", [x, y], [z])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "add2.onnx"
    onnx.save(model, path)
    return path


def test_wrong_inputs_are_clear_errors(built, tmp_path):
    m = rt.load(built["embed"].path)
    x = np.zeros((2, 64), np.float32)
    with pytest.raises(rt.ArgumentError, match="takes 1 input"):
        m(x, x)
    with pytest.raises(rt.ArgumentError, match="missing input"):
        m()
    with pytest.raises(rt.ArgumentError, match="expected dtype float32 but got float64"):
        m(x.astype(np.float64))
    with pytest.raises(rt.ArgumentError, match="expected rank 2"):
        m(x[0])
    with pytest.raises(rt.ArgumentError, match=r"expected shape \(\?, 64\) but got \(2, 63\)"):
        m(np.zeros((2, 63), np.float32))
    with pytest.raises(rt.ArgumentError, match="unexpected input 'y'"):
        m.run({"y": x})
    with pytest.raises(rt.ArgumentError, match="computed shape"):
        m(x, out=[np.zeros((3, 10), np.float32)])
    add = compile(_two_input_model(tmp_path)).export(tmp_path / "add2.so")
    assert add.weights == "none"
    a = rt.load(add.path)
    ones = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(a(ones, ones)[0], 2 * ones)
    with pytest.raises(rt.ArgumentError, match=r"dim 0 \('n'\) is 2 but input 'x' has 'n' = 3"):
        a(ones, np.ones((2, 4), np.float32))


def _patched(src: Path, dst: Path, old: bytes, new: bytes) -> Path:
    data = src.read_bytes()
    assert data.count(old) == 1 and len(old) == len(new)
    dst.write_bytes(data.replace(old, new))
    return dst


def test_another_abi_version(built, tmp_path):
    so = _patched(built["embed"].path, tmp_path / "abi.so", b'"abi_version":1,', b'"abi_version":7,')
    with pytest.raises(rt.AbiVersionError, match="ABI version 7 .*this runtime reads version 1"):
        rt.load(so)


def test_truncated_artifact_and_not_an_artifact(built, tmp_path):
    data = built["embed"].path.read_bytes()
    cut = tmp_path / "cut.so"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(rt.ArtifactFormatError, match="truncated"):
        rt.load(cut)
    tiny = tmp_path / "tiny.so"
    tiny.write_bytes(data[:40])
    with pytest.raises(rt.ArtifactFormatError, match="truncated"):
        rt.load(tiny)
    text = tmp_path / "text.so"
    text.write_text("hello")
    with pytest.raises(rt.ArtifactFormatError, match="not an ELF file"):
        rt.load(text)
    libm = ctypes.util.find_library("m")
    path = next((p for p in ("/lib/x86_64-linux-gnu/" + (libm or ""), "/usr/lib/x86_64-linux-gnu/" + (libm or ""))
                 if libm and Path(p).is_file()), None)
    if path is not None:
        with pytest.raises(rt.ArtifactFormatError, match="not a minimlir artifact"):
            rt.load(path)
    with pytest.raises(rt.LoadError, match="no such file"):
        rt.load(tmp_path / "missing.so")


def _separate_copy(built, tmp_path) -> Path:
    so = tmp_path / "conv.so"
    shutil.copy(built["separate"].path, so)
    shutil.copy(built["separate"].params_path, tmp_path / "conv.params")
    return so


def test_params_of_another_model(built, tmp_path):
    so = _separate_copy(built, tmp_path)
    weights = {k: np.asarray(v) * 2 for k, v in built["conv"].program._params.items()}
    save_params(tmp_path / "conv.params", weights)  # same layout, other values
    with pytest.raises(rt.ParamsMismatchError, match="not the artifact's"):
        rt.load(so)


def test_changed_params_bytes_need_verify(built, tmp_path):
    so = _separate_copy(built, tmp_path)
    params = tmp_path / "conv.params"
    data = bytearray(params.read_bytes())
    data[-100] ^= 0xFF  # inside the last tensor or its padding: the index (and its sha256) unchanged
    params.write_bytes(bytes(data))
    rt.load(so)  # the default load maps the file, it does not read it
    with pytest.raises(rt.ParamsMismatchError, match="do not match their sha256"):
        rt.load(so, verify=True)
    rt.load(built["separate"].path, verify=True)  # the untouched file verifies
    rt.load(built["embed"].path, verify=True)


def test_truncated_and_missing_params(built, tmp_path):
    so = _separate_copy(built, tmp_path)
    params = tmp_path / "conv.params"
    data = params.read_bytes()
    params.write_bytes(data[: len(data) - 4096])
    with pytest.raises(rt.ParamsMismatchError, match="truncated"):
        rt.load(so)
    params.write_bytes(data[:20])
    with pytest.raises(rt.ParamsMismatchError, match="too short"):
        rt.load(so)
    params.unlink()
    with pytest.raises(rt.ParamsMismatchError, match="does not exist"):
        rt.load(so)
    rt.load(so, params=built["separate"].params_path)  # params= names another place


def test_cpu_without_the_features(built, tmp_path, monkeypatch):
    """An artifact for AVX-512 on a CPU without it: an error at load, no illegal instruction."""
    from minimlir.frontend.build import build

    art = build(MLP, tmp_path / "avx512.so", cpu="skylake-avx512", emit_header=True)
    assert "avx512f" in art.metadata["target"]["required"] and art.metadata["target"]["vector_width"] == 16
    from minimlir.runtime import _cpu

    host_has = "avx512f" in _cpu.host_flags()
    if host_has:  # this machine could run it: pretend it lacks AVX-512F
        real = _cpu.host_flags.__wrapped__  # bound now: inside the lambda the name is the lambda itself
        monkeypatch.setattr(_cpu, "host_flags", lambda: real() - {"avx512f"})
    with pytest.raises(rt.CpuFeatureError, match="lacks avx512f"):
        rt.load(art.path)
    if not host_has:  # the C interface refuses too (cpuid), before any of the model's code runs
        exe = _build_c_example(tmp_path, art.header_path)
        proc = subprocess.run([str(exe), str(art.path)], capture_output=True, text=True)
        assert proc.returncode == 1 and "lacks avx512f" in proc.stderr, proc.stderr


def test_other_architecture_is_refused(built, tmp_path):
    so = _patched(built["embed"].path, tmp_path / "arch.so", b'"arch":"x86_64"', b'"arch":"arm_64"') \
        if _target.arch_of(_target.host_triple()) == "x86_64" else None
    if so is None:
        pytest.skip("the patch is for x86-64 hosts")
    with pytest.raises(rt.ArtifactFormatError, match="this machine is x86_64"):
        rt.load(so)


# ------------------------------------------------------------------------------ C


def _build_c_example(tmp_path: Path, header: Path, cc: str | None = None) -> Path:
    cc = cc or os.environ.get("CC") or shutil.which("cc") or "gcc"
    exe = tmp_path / f"run_model_{Path(cc).name}"
    subprocess.run([cc, "-O1", "-Wall", "-Werror", "-I", str(header.parent), f'-DMML_HEADER="{header.name}"',
                    str(MAIN_C), "-ldl", "-o", str(exe)], check=True)
    return exe


def _parse_c_output(text: str) -> dict[str, np.ndarray]:
    outs: dict[str, np.ndarray] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        head = lines[i]
        assert head.startswith("output "), head
        name, _, dims = head[len("output "):].rpartition(" (")
        shape = tuple(int(d) for d in dims.rstrip(")").split(",") if d.strip())
        n = int(np.prod(shape))
        outs[name] = np.array([float(v) for v in lines[i + 1 : i + 1 + n]], np.float32).reshape(shape)
        i += 1 + n
    return outs


def test_c_example_runs_the_artifact(built, tmp_path):
    for key, model, shape in (("embed", "mlp", (3, 64)), ("separate", "conv", (3, 3, 16, 16))):
        art = built[key]
        exe = _build_c_example(tmp_path, art.header_path)
        proc = subprocess.run([str(exe), str(art.path), "batch=3"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        (got,) = _parse_c_output(proc.stdout).values()
        np.testing.assert_array_equal(got, built[model](_c_inputs(shape))[0])
    # C reports the same errors: params of another model
    so = _separate_copy(built, tmp_path)
    save_params(tmp_path / "conv.params", {k: np.asarray(v) + 1 for k, v in built["conv"].program._params.items()})
    exe = _build_c_example(tmp_path, built["separate"].header_path)
    proc = subprocess.run([str(exe), str(so)], capture_output=True, text=True)
    assert proc.returncode == 1 and "do not match the artifact" in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------ other targets


def test_schedule_takes_the_target():
    from minimlir.passes.loop.schedule.default.config import ScheduleConfig

    a64 = _target.resolve("aarch64-linux-gnu", None)
    assert (a64.cpu, a64.vector_width, a64.vector_registers) == ("generic", 4, 32)
    with _target.using(a64):
        cfg = ScheduleConfig.for_host()
        assert (cfg.width, cfg.vector_registers) == (4, 32)
    with _target.using(_target.resolve(None, "skylake-avx512")):
        assert ScheduleConfig.for_host().width == 16
    with _target.using(_target.resolve(None, "generic")):
        cfg = ScheduleConfig.for_host()
        assert (cfg.width, cfg.vector_registers) == (4, 16)
    assert _target.current() is None
    with pytest.raises(_target.TargetError, match="unknown CPU 'pentium9'"):
        _target.resolve(None, "pentium9")
    with pytest.raises(_target.TargetError, match="needs the host's architecture"):
        _target.resolve("aarch64-linux-gnu", "host")
    with pytest.raises(_target.TargetError, match="unsupported target"):
        _target.resolve("riscv64-linux-gnu", None)


def test_generic_cpu_runs_here(built, tmp_path, monkeypatch):
    from minimlir.backend import jit
    from minimlir.frontend.build import build

    # LLVM in two parts, one in a child process: it must make position-independent generic code too
    monkeypatch.setattr(jit, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setenv("MINIMLIR_LLVM_JOBS", "2")
    art = build(CONV, tmp_path / "generic.so", cpu="generic", weights="embed")
    assert art.metadata["target"]["cpu"] == "x86-64" and art.metadata["target"]["vector_width"] == 4
    x = _c_inputs((2, 3, 16, 16))
    np.testing.assert_allclose(rt.load(art.path)(x)[0], built["conv"](x)[0], rtol=1e-5, atol=1e-6)


AARCH64_TOOLS = ("aarch64-linux-gnu-gcc", "qemu-aarch64")


@pytest.mark.skipif(any(shutil.which(t) is None for t in AARCH64_TOOLS),
                    reason="needs Debian's gcc-aarch64-linux-gnu and qemu-user (apt-get install -y "
                           "gcc-aarch64-linux-gnu qemu-user; .ci/run installs them when apt is available)")
def test_aarch64_artifact_under_qemu(built, tmp_path):
    out = subprocess.run(["mini-compile", str(MLP), "-o", str(tmp_path / "mlp.so"), "--target", "aarch64-linux-gnu",
                          "--weights", "separate", "--emit-header"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    so = tmp_path / "mlp.so"
    meta = rt.read_metadata(so)
    assert meta["target"]["arch"] == "aarch64" and meta["target"]["vector_width"] == 4
    with pytest.raises(rt.ArtifactFormatError, match="built for aarch64"):
        rt.load(so)
    exe = _build_c_example(tmp_path, tmp_path / "mlp.h", cc=shutil.which("aarch64-linux-gnu-gcc"))
    proc = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", str(exe), str(so), "batch=4"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (got,) = _parse_c_output(proc.stdout).values()
    np.testing.assert_allclose(got, built["mlp"](_c_inputs((4, 64)))[0], rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------ mini-compile


def test_mini_compile_cli(tmp_path):
    out = subprocess.run(["mini-compile", str(MLP), "-o", str(tmp_path / "m.so"), "--weights", "separate"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "m.params").is_file() and "weights separate" in out.stdout
    x = _c_inputs((2, 64))
    np.testing.assert_array_equal(rt.load(tmp_path / "m.so")(x)[0], compile(MLP)(x)[0])
    for args, message in (
        ([str(tmp_path / "nope.onnx")], "no such file"),
        ([str(MLP), "--cpu", "pentium9"], "unknown CPU 'pentium9'"),
        ([str(MLP), "--target", "mips-linux-gnu"], "unsupported target"),
        ([str(MLP), "--tuning-db", str(tmp_path / "t.jsonl")], "tuning database"),
    ):
        proc = subprocess.run(["mini-compile", *args, "-o", str(tmp_path / "x.so")], capture_output=True, text=True)
        assert proc.returncode == 1, (args, proc.stdout)
        assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = graph.nope %x\n}\n")
    proc = subprocess.run(["mini-compile", str(bad), "-o", str(tmp_path / "b.so")], capture_output=True, text=True)
    assert proc.returncode == 1 and "bad.mlir:2" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
