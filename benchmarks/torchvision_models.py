"""torchvision's EfficientNet-B0, RegNetY-400MF, ConvNeXt-Tiny and MobileNetV3-Small as ONNX (random
weights, seeded), exported with `torch.onnx.export(..., dynamo=True)`: what
`benchmarks/compile_time.py --dynamic --torchvision` compiles (needs torch, torchvision and onnxscript,
which the project does not depend on; the exported files go to a temporary folder, never the repo).

    from torchvision_models import MODELS, export
    export("efficientnet_b0", "dynamic", "/tmp/e.onnx")   # input "x": batch x 3 x 224 x 224
"""

from __future__ import annotations

from pathlib import Path

MODELS = ("efficientnet_b0", "regnet_y_400mf", "convnext_tiny", "mobilenet_v3_small")
SIZE = 224


def available() -> str | None:
    """None when the export can run, else why not."""
    try:
        import onnxscript  # noqa: F401
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any import failure (a missing or a broken install)
        return f"torchvision models need torch, torchvision and onnxscript: {e}"
    return None


def export(name: str, kind: str, path: str | Path) -> Path:
    """Export `name` with a batch that is dynamic (`kind` "dynamic": dim_param "batch"), 1 ("static")
    or 8 ("static8") to `path`; weights in one file beside it."""
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    # a dynamic export traces at batch 2: at 1, torch.export specializes size-1 dims (ConvNeXt-Tiny's
    # trace then guards batch <= 2 and the export fails with "Invalid ranges [2:1]")
    x = torch.randn({"static8": 8, "dynamic": 2}.get(kind, 1), 3, SIZE, SIZE)
    dyn = {"x": {0: torch.export.Dim("batch", min=1, max=1024)}} if kind == "dynamic" else None
    with torch.no_grad():
        prog = torch.onnx.export(model, (x,), None, input_names=["x"], dynamo=True, dynamic_shapes=dyn,
                                 optimize=True, verbose=False)
    path = Path(path)
    prog.save(str(path), external_data=True)
    return path
