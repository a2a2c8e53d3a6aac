"""The model tests again in checked mode (MINIMLIR_CHECKS=1: every load/store bounds-checked, every
fresh buffer poisoned; backend/checks.py): a correct compiler passes them unchanged, and any
out-of-bounds access or read before write in these models fails here, named. (The ONNX node sample
runs both ways in test_conformance_sample.py; the whole suite: `MINIMLIR_CHECKS=1 pytest`.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import test_dynamic_lengths as dyn
import test_onnx_transformer as tr
from minimlir.backend import checks as rt_checks

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def checked(monkeypatch):
    monkeypatch.setenv("MINIMLIR_CHECKS", "1")
    before = rt_checks.calls
    yield
    assert rt_checks.calls > before, "no checked call ran: checked mode was not on"


@pytest.mark.parametrize("name", ["test_i1_mask_buffer_through_vectorized_loop",
                                  "test_bool_output_is_one_byte_per_element",
                                  "test_embedding_plus_sliced_positions",
                                  "test_two_layer_encoder_at_every_length"])
def test_dynamic_lengths_checked(name):
    getattr(dyn, name)()


def test_embedding_gather_checked():
    dyn.test_embedding_gather_dynamic_batch_and_seq(33)


@pytest.mark.parametrize("model, pipeline", [("tiny_gpt2_block.onnx", tr.FUSED),
                                             ("tiny_bert_layer.onnx", "graph-to-llvm")])
def test_transformer_exports_checked(model, pipeline):
    tr.test_transformer_export_matches_onnxruntime_at_two_sizes(model, pipeline)


def test_light_model_squeezenet_checked(tmp_path):
    name = "minimlir_conformance"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "conformance.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    conformance = sys.modules[name]
    _, d = conformance.write_light_case("squeezenet", tmp_path)
    result = conformance.run_case_dir(d)
    assert result.status == "pass", result.message
