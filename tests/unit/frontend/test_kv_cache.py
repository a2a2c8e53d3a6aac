"""LLM decoding with a growing KV cache: a GPT-2 exported with past/present key-values
(tests/data/tiny_gpt2_kv.onnx: Hugging Face GPT2LMHeadModel, 1 layer, random weights, made by
examples/make_gpt2_kv.py) compiled once serves the prefill (past = 0) and decode steps (seq = 1,
past = N, N+1, ...), each matching onnxruntime; examples/generate.py's loop, with outputs written in
place into preallocated caches, is token-identical to onnxruntime."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from minimlir.frontend import InputError, compile

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "tests" / "data" / "tiny_gpt2_kv.onnx"


def _generate_module():
    spec = importlib.util.spec_from_file_location("generate_example", ROOT / "examples" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def model():
    gen = _generate_module()
    kv = gen.KVModel(MODEL)
    return gen, kv, compile(MODEL, cache=False), ort.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])


def test_prefill_and_decode_steps_match_onnxruntime(model):
    _, kv, prog, sess = model
    rng = np.random.default_rng(0)
    for batch, prompt_len in ((1, 6), (2, 3)):
        ids = rng.integers(0, kv.vocab, (batch, prompt_len)).astype(np.int64)
        past = {n: np.zeros((batch, kv.heads, 0, kv.head_dim), np.float32) for n in kv.past_names}
        for step in range(4):
            feeds = {"input_ids": ids, **past}
            ours = prog(**feeds)
            ref = sess.run(None, feeds)
            length = prompt_len + step
            assert ours[1].shape == (batch, kv.heads, length, kv.head_dim)
            for o, r in zip(ours, ref):
                np.testing.assert_allclose(o, r, rtol=1e-4, atol=1e-5)
            past = dict(zip(kv.past_names, ours[1:]))
            ids = np.argmax(ours[0][:, -1:], axis=-1).astype(np.int64)


def test_generation_in_place_is_token_identical(model):
    gen, kv, prog, sess = model
    prompt = [3, 41, 7, 19, 60]
    ours, _, _ = gen.generate_minimlir(prog, kv, prompt, 24)
    ref, _, _ = gen.generate_onnxruntime(sess, kv, prompt, 24)
    assert ours == ref
    assert len(set(ours)) > 3  # the weights are scaled so the tokens vary (not one repeated argmax)


def test_outputs_land_in_the_preallocated_cache(model):
    gen, kv, prog, _ = model
    cache = gen.Cache(kv, 8)
    ids = np.array([[1, 2, 3]], np.int64)
    outs = cache.outs(3)
    got = prog(ids, *cache.past(), out=outs)
    for g, o in zip(got, outs):
        assert g is o  # written in place, no new array
    assert np.shares_memory(outs[1], cache.flat[1][0])
    cache.advance(3)
    step = cache.outs(1)
    prog(np.array([[4]], np.int64), *cache.past(), out=step)
    np.testing.assert_array_equal(step[1][:, :, :3], outs[1])  # the past is carried into the present


def test_mismatched_cache_lengths_are_rejected_before_running(model):
    _, kv, prog, _ = model
    ids = np.array([[1]], np.int64)
    past = [np.zeros((1, kv.heads, 4 if i == 0 else 5, kv.head_dim), np.float32) for i in range(len(kv.past_names))]
    with pytest.raises(InputError, match="past"):
        prog(ids, *past)


def test_cache_reuses_the_present_views_as_the_next_past(model):
    gen, kv, _, _ = model
    cache = gen.Cache(kv, 8)
    outs = cache.outs(3)
    with pytest.raises(ValueError, match="same seq"):
        cache.advance(2)  # outs() was for 3 tokens
    cache.advance(3)
    past = cache.past()
    assert all(p is o for p, o in zip(past, outs[1:]))  # no views rebuilt per token
    assert all(p.shape == (1, kv.heads, 3, kv.head_dim) and p.flags.c_contiguous for p in past)
    step = cache.outs(1)
    assert all(s.shape[2] == 4 and not np.shares_memory(s, p) for s, p in zip(step[1:], past))
    cache.advance(1)
    assert cache.past()[0] is step[1]


def test_plain_arrays_skip_bind_and_bad_ones_are_still_refused(model, monkeypatch):
    gen, kv, prog, _ = model
    assert prog._plain_call is not None  # the runtime checks exactly what bind would
    ids = np.array([[1, 2]], np.int64)
    past = [np.zeros((1, kv.heads, 3, kv.head_dim), np.float32) for _ in kv.past_names]
    ref = prog(ids, *past)
    calls = []
    real_bind = type(prog).bind
    monkeypatch.setattr(type(prog), "bind", lambda self, a, k: calls.append(1) or real_bind(self, a, k))
    got = prog(ids, *past)
    assert calls == []  # plain ndarrays went straight to the native call
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
    ran = []
    real_entry = type(prog._fn)._call_entry
    monkeypatch.setattr(type(prog._fn), "_call_entry", lambda self, *a: ran.append(1) or real_entry(self, *a))
    bad = [
        ((ids.astype(np.int32), *past), "dtype"),  # wrong dtype
        ((ids, past[0][:, :1], *past[1:]), "dim 1"),  # wrong static dim (heads)
        ((ids, past[0][:, :, :2], *past[1:]), "past"),  # named dim 'past' disagrees between inputs
        ((ids[0], *past), "rank"),
    ]
    for args, match in bad:
        with pytest.raises(InputError, match=match):
            prog(*args)
    assert ran == []  # refused before any native code ran
    # a non-contiguous but valid input still works (bind copies it), through the checking path
    wide = np.zeros((1, kv.heads, 3, 2 * kv.head_dim), np.float32)[..., ::2]
    got = prog(ids, wide, *past[1:])
    assert calls and ran
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)
