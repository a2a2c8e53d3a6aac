"""Export the architecture test models in tests/data/arch/ with PyTorch (run by hand, not in the suite).

    # torch, transformers and onnxscript are test-time tools only, never minimlir dependencies
    pip install torch transformers onnxscript
    python tests/data/make_architectures.py [--only NAME,NAME] [--exporter dynamo|torchscript]

writes, for every architecture NAME below, two files with random (seeded) weights stored as
initializers inside the file:
    arch/NAME.dynamo.onnx   torch.onnx.export(..., dynamo=True)  (opset 18, onnxscript optimizer on)
    arch/NAME.ts.onnx       torch.onnx.export(..., dynamo=False) (TorchScript tracing, opset 17)
each with a dynamic batch dim and, where the model allows it, a dynamic sequence length or image
size. `arch/manifest.json` records for each file its inputs and the two sizes the tests run
(`benchmarks/architectures.py`, `tests/unit/frontend/test_architectures.py`).

    bert        Hugging Face BertModel (1 layer, hidden 16): input_ids, attention_mask (batch, seq)
    roberta     Hugging Face RobertaModel (padding-aware position ids from input_ids), same inputs
    gpt2        Hugging Face GPT2LMHeadModel (1 layer): input_ids, attention_mask (batch, seq) ->
                logits; the causal mask combined with the padding mask
    llama       Hugging Face LlamaForCausalLM (1 layer, GQA 2/1 heads): RMSNorm, rotary embeddings,
                SiLU-gated MLP, causal + padding mask, same inputs
    vit         Hugging Face ViTModel (patch 4, trained for 16 x 16): pixel_values (batch, 3, h, w),
                the position embeddings resized to the patch grid (interpolate_pos_encoding: a
                bicubic Resize to run-time sizes)
    convnext    ConvNeXt (torchvision's block: 7x7 depthwise conv, channels-last LayerNorm, GELU
                MLP, layer scale; LayerNorm2d + 2x2 stride-2 downsampling), images (batch, 3, h, w)
    efficientnet  EfficientNet (MBConv: expand, depthwise, squeeze-excite with SiLU/Sigmoid,
                project, residual; BatchNorm)
    mobilenetv3 MobileNetV3 (inverted residuals, Hardswish/ReLU, squeeze-excite with Hardsigmoid,
                classifier Linear-Hardswish-Linear)
    unet        U-Net: Conv-GroupNorm-SiLU blocks, MaxPool down, ConvTranspose up and bilinear
                interpolate up, skip concats, 1x1 head
    yolo        YOLO-style detector: Conv-BN-SiLU backbone at strides 8/16, nearest-upsample FPN with
                concat, a detect head per level decoding boxes on a grid built from the feature size
                (arange/meshgrid), sigmoid, anchors, concat of both levels -> (batch, boxes, 5 + classes)

The convolutional networks are faithful small re-definitions of torchvision's (the same layer
order and ops, tiny widths), so this script needs no torchvision. Widths are tiny so each file
stays well under 150 KB.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import onnx
import torch
from torch import nn
from torch.nn import functional as F

HERE = Path(__file__).resolve().parent
OUT = HERE / "arch"
TS_OPSET = 17
DYNAMO_OPSET = 18


# --- convolutional networks (small re-definitions of torchvision's) -------------------------------


def conv_bn_act(cin: int, cout: int, k: int, s: int = 1, groups: int = 1, act: type | None = nn.SiLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, s, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class LayerNorm2d(nn.LayerNorm):
    """torchvision's: LayerNorm over channels of an NCHW tensor (permute, normalize, permute back)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    def __init__(self, dim: int, layer_scale: float = 1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1 = nn.Linear(dim, 4 * dim)
        self.pw2 = nn.Linear(4 * dim, dim)
        # torchvision initializes layer scale at 1e-6; 0.1 keeps the block's branch visible in the output
        self.layer_scale = nn.Parameter(torch.full((dim, 1, 1), layer_scale))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.norm(y)))).permute(0, 3, 1, 2)
        return x + self.layer_scale * y


class ConvNeXt(nn.Module):
    def __init__(self, dims: tuple[int, ...] = (8, 16), depths: tuple[int, ...] = (1, 1), classes: int = 10):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0], eps=1e-6)]
        for i, (d, n) in enumerate(zip(dims, depths)):
            if i:
                layers += [LayerNorm2d(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], d, 2, 2)]
            layers += [CNBlock(d, 0.1) for _ in range(n)]
        self.features = nn.Sequential(*layers)
        self.norm = LayerNorm2d(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.head(torch.flatten(self.norm(x), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, squeeze: int, act: type = nn.SiLU, gate: type = nn.Sigmoid):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)
        self.act, self.gate = act(), gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class MBConv(nn.Module):
    """EfficientNet's block: expand 1x1, depthwise kxk, squeeze-excite, project 1x1, residual."""

    def __init__(self, cin: int, cout: int, k: int, s: int, expand: int):
        super().__init__()
        mid = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(conv_bn_act(cin, mid, 1))
        layers += [conv_bn_act(mid, mid, k, s, groups=mid), SqueezeExcite(mid, max(1, cin // 4)),
                   conv_bn_act(mid, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class EfficientNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        # (expand, kernel, stride, in, out, repeats), EfficientNet-B0's table cut to three stages
        setting = [(1, 3, 1, 8, 8, 1), (4, 3, 2, 8, 12, 1), (4, 5, 2, 12, 16, 1)]
        layers: list[nn.Module] = [conv_bn_act(3, 8, 3, 2)]
        for e, k, s, cin, cout, n in setting:
            for i in range(n):
                layers.append(MBConv(cin if i == 0 else cout, cout, k, s if i == 0 else 1, e))
        layers.append(conv_bn_act(16, 32, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class InvertedResidual(nn.Module):
    """MobileNetV3's block: expand 1x1, depthwise, optional squeeze-excite (Hardsigmoid), project."""

    def __init__(self, cin: int, k: int, mid: int, cout: int, se: bool, act: type, s: int):
        super().__init__()
        layers: list[nn.Module] = []
        if mid != cin:
            layers.append(conv_bn_act(cin, mid, 1, act=act))
        layers.append(conv_bn_act(mid, mid, k, s, groups=mid, act=act))
        if se:
            layers.append(SqueezeExcite(mid, max(8, mid // 4), act=nn.ReLU, gate=nn.Hardsigmoid))
        layers.append(conv_bn_act(mid, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = s == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


class MobileNetV3(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        # (in, kernel, expanded, out, SE, activation, stride), MobileNetV3-Small's table cut down
        setting = [(8, 3, 24, 12, False, nn.ReLU, 2), (12, 3, 32, 12, False, nn.ReLU, 1),
                   (12, 5, 48, 16, True, nn.Hardswish, 2)]
        layers: list[nn.Module] = [conv_bn_act(3, 8, 3, 2, act=nn.Hardswish)]
        layers += [InvertedResidual(*row) for row in setting]
        layers.append(conv_bn_act(16, 48, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(48, 32), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(32, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class UNetBlock(nn.Sequential):
    def __init__(self, cin: int, cout: int, groups: int = 4):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(groups, cout), nn.SiLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(groups, cout), nn.SiLU())


class UNet(nn.Module):
    """Two levels down (MaxPool), one up by ConvTranspose and one by bilinear interpolate, skip concats."""

    def __init__(self, c: int = 8, classes: int = 2):
        super().__init__()
        self.enc1, self.enc2, self.mid = UNetBlock(3, c), UNetBlock(c, 2 * c), UNetBlock(2 * c, 2 * c)
        self.up2 = nn.ConvTranspose2d(2 * c, 2 * c, 2, stride=2)
        self.dec2 = UNetBlock(4 * c, c)
        self.dec1 = UNetBlock(2 * c, c)
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        up = F.interpolate(d2, scale_factor=2.0, mode="bilinear", align_corners=False)
        d1 = self.dec1(torch.cat([up, e1], dim=1))
        return self.head(d1)


class Detect(nn.Module):
    """YOLOv5's head: per level a 1x1 conv to anchors x (5 + classes), decoded on the level's grid."""

    def __init__(self, chans: tuple[int, ...], strides: tuple[int, ...], classes: int = 3):
        super().__init__()
        self.no, self.na, self.strides = classes + 5, 2, strides
        self.convs = nn.ModuleList(nn.Conv2d(c, self.na * self.no, 1) for c in chans)
        anchors = torch.tensor([[[10.0, 13.0], [16.0, 30.0]], [[30.0, 61.0], [62.0, 45.0]]])
        self.register_buffer("anchors", anchors.view(2, 1, self.na, 1, 1, 2))

    def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
        out = []
        for i, f in enumerate(feats):
            b, _, h, w = f.shape
            p = self.convs[i](f).view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).sigmoid()
            ys, xs = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32),
                                    indexing="ij")
            grid = torch.stack((xs, ys), 2).view(1, 1, h, w, 2)
            xy = (p[..., :2] * 2 - 0.5 + grid) * self.strides[i]
            wh = (p[..., 2:4] * 2) ** 2 * self.anchors[i]
            out.append(torch.cat((xy, wh, p[..., 4:]), -1).reshape(b, -1, self.no))
        return torch.cat(out, 1)


class YOLO(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn_act(3, 8, 3, 2), conv_bn_act(8, 8, 3, 2), conv_bn_act(8, 12, 3, 2))  # /8
        self.down = conv_bn_act(12, 16, 3, 2)  # /16
        self.lateral = conv_bn_act(16, 12, 1)
        self.fuse = conv_bn_act(24, 12, 3)
        self.detect = Detect((12, 16), (8, 16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p3 = self.stem(x)
        p4 = self.down(p3)
        up = F.interpolate(self.lateral(p4), scale_factor=2.0, mode="nearest")
        return self.detect([self.fuse(torch.cat([up, p3], 1)), p4])


# --- Hugging Face transformers ----------------------------------------------------------------


class HFText(nn.Module):
    """A transformers model returning one tensor (last_hidden_state or logits)."""

    def __init__(self, model: nn.Module, field: str, mask: bool):
        super().__init__()
        self.model, self.field, self.mask = model, field, mask

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        kw = {"attention_mask": attention_mask} if self.mask else {}
        out = self.model(input_ids=input_ids, use_cache=False, return_dict=True, **kw) if self.field == "logits" \
            else self.model(input_ids=input_ids, return_dict=True, **kw)
        return getattr(out, self.field)


class HFImage(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        # interpolate_pos_encoding: the position embeddings are resized (bicubic) to the image's
        # patch grid, so the image size can be dynamic
        return self.model(pixel_values=pixel_values, interpolate_pos_encoding=True, return_dict=True).last_hidden_state


def _bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=32, type_vocab_size=2)
    return HFText(BertModel(cfg, add_pooling_layer=False), "last_hidden_state", True)


def _roberta() -> nn.Module:
    from transformers import RobertaConfig, RobertaModel

    cfg = RobertaConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=40, type_vocab_size=1, pad_token_id=1)
    return HFText(RobertaModel(cfg, add_pooling_layer=False), "last_hidden_state", True)


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=64, n_positions=32, n_embd=16, n_layer=1, n_head=2, n_inner=32)
    return HFText(GPT2LMHeadModel(cfg), "logits", True)


def _llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                      tie_word_embeddings=False)
    return HFText(LlamaForCausalLM(cfg), "logits", True)


def _vit() -> nn.Module:
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=1,
                    num_attention_heads=2, intermediate_size=32)
    return HFImage(ViTModel(cfg, add_pooling_layer=False))


# name: (builder, inputs, dynamic axes per input, the two test sizes: {axis name: value})
TEXT_AXES = {0: "batch", 1: "seq"}
IMAGE_AXES = {0: "batch", 2: "height", 3: "width"}
ARCHS = {
    "bert": (_bert, ["input_ids", "attention_mask"], TEXT_AXES, [{"batch": 1, "seq": 5}, {"batch": 3, "seq": 11}]),
    "roberta": (_roberta, ["input_ids", "attention_mask"], TEXT_AXES, [{"batch": 1, "seq": 5}, {"batch": 3, "seq": 11}]),
    "gpt2": (_gpt2, ["input_ids", "attention_mask"], TEXT_AXES, [{"batch": 1, "seq": 5}, {"batch": 3, "seq": 11}]),
    "llama": (_llama, ["input_ids", "attention_mask"], TEXT_AXES, [{"batch": 1, "seq": 5}, {"batch": 3, "seq": 11}]),
    "vit": (_vit, ["pixel_values"], IMAGE_AXES, [{"batch": 1, "height": 16, "width": 16},
                                                {"batch": 3, "height": 24, "width": 20}]),
    "convnext": (ConvNeXt, ["images"], IMAGE_AXES, [{"batch": 1, "height": 32, "width": 32},
                                                   {"batch": 3, "height": 48, "width": 40}]),
    "efficientnet": (EfficientNet, ["images"], IMAGE_AXES, [{"batch": 1, "height": 32, "width": 32},
                                                           {"batch": 3, "height": 48, "width": 40}]),
    "mobilenetv3": (MobileNetV3, ["images"], IMAGE_AXES, [{"batch": 1, "height": 32, "width": 32},
                                                         {"batch": 3, "height": 48, "width": 40}]),
    "unet": (UNet, ["images"], IMAGE_AXES, [{"batch": 1, "height": 16, "width": 16},
                                           {"batch": 2, "height": 24, "width": 32}]),
    "yolo": (YOLO, ["images"], IMAGE_AXES, [{"batch": 1, "height": 32, "width": 32},
                                           {"batch": 3, "height": 64, "width": 48}]),
}


def example_inputs(name: str, inputs: list[str], axes: dict[int, str], size: dict[str, int]) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    if name in ("bert", "roberta", "gpt2", "llama"):
        b, s = size["batch"], size["seq"]
        feeds = {"input_ids": torch.randint(2, 64, (b, s), generator=g)}
        if "attention_mask" in inputs:
            mask = torch.ones(b, s, dtype=torch.long)
            mask[-1, s - 2:] = 0  # the last row is padded: the mask matters
            feeds["attention_mask"] = mask
        return feeds
    if name == "vit":
        return {"pixel_values": torch.randn(size["batch"], 3, size["height"], size["width"], generator=g)}
    return {"images": torch.randn(size["batch"], 3, size["height"], size["width"], generator=g)}


def export(name: str, exporter: str) -> Path:
    build, inputs, axes, sizes = ARCHS[name]
    torch.manual_seed(0)
    model = build().eval()
    calibrate_batchnorm(model, name)
    # the export example is neither test size, so no size is baked in by a tracer (image sides
    # stay multiples of 16: the U-Net and the detector need sides divisible by 4 and 16)
    ex = {ax: v + (16 if ax in ("height", "width") else 2) for ax, v in sizes[1].items()}
    feeds = example_inputs(name, inputs, axes, ex)
    args = tuple(feeds[n] for n in inputs)
    path = OUT / f"{name}.{'dynamo' if exporter == 'dynamo' else 'ts'}.onnx"
    with torch.no_grad():
        if exporter == "dynamo":
            dims = {a: torch.export.Dim.DYNAMIC for a in axes}
            prog = torch.onnx.export(model, args, None, input_names=inputs, output_names=["output"],
                                     dynamic_shapes=tuple(dict(dims) for _ in inputs), opset_version=DYNAMO_OPSET,
                                     dynamo=True, optimize=True, verbose=False)
            proto = prog.model_proto  # a property: a new proto per access
            strip_debug_metadata(proto)
            onnx.save(proto, str(path))
        else:
            dyn = {n: dict(axes) for n in inputs}
            torch.onnx.export(model, args, str(path), input_names=inputs, output_names=["output"],
                              dynamic_axes=dyn, opset_version=TS_OPSET, dynamo=False)
    print(f"wrote {path.relative_to(HERE)} ({path.stat().st_size} bytes)", flush=True)
    return path


def calibrate_batchnorm(model: nn.Module, name: str) -> None:
    """Give every BatchNorm the statistics of a random batch (one forward pass in training mode)
    and a random affine transform. With the initial running stats (mean 0, var 1), a deep random
    network's activations shrink layer by layer until its output hardly depends on its input, and
    a comparison with onnxruntime would then test little."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if not bns:
        return
    g = torch.Generator().manual_seed(2)
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: after one batch, that batch's statistics
        with torch.no_grad():
            m.weight.uniform_(0.5, 1.5, generator=g)
            m.bias.normal_(0.0, 0.2, generator=g)
    size = {"batch": 4, "height": 32, "width": 32}
    feeds = example_inputs(name, ARCHS[name][1], ARCHS[name][2], size)
    model.train()
    with torch.no_grad():
        model(*feeds.values())
    model.eval()


def strip_debug_metadata(model: onnx.ModelProto) -> None:
    """Drop the dynamo exporter's per-node and per-value debug annotations (the module path, class
    hierarchy and FX node of each node: about 85% of a tiny model's bytes); the graph is unchanged."""
    g = model.graph
    for n in g.node:
        del n.metadata_props[:]
        n.doc_string = ""
    for v in [*g.value_info, *g.input, *g.output, *g.initializer]:
        del v.metadata_props[:]


def manifest_entry(name: str) -> dict:
    """The inputs' shapes at both test sizes; `kind` says how a test fills them: token ids (`ids`, in
    [2, 64)), an attention mask (`mask`: ones, the last row's last two positions 0) or `float` (normal)."""
    _, inputs, axes, sizes = ARCHS[name]
    kinds = {"input_ids": "ids", "attention_mask": "mask"}
    return {"inputs": {n: kinds.get(n, "float") for n in inputs},
            "sizes": [{n: list(t.shape) for n, t in example_inputs(name, inputs, axes, s).items()} for s in sizes]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated architecture names (default: all)")
    ap.add_argument("--exporter", choices=("dynamo", "torchscript", "both"), default="both")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(ARCHS)
    OUT.mkdir(exist_ok=True)
    for name in names:
        for exporter in (("dynamo", "torchscript") if args.exporter == "both" else (args.exporter,)):
            try:
                export(name, exporter)
            except Exception as e:  # noqa: BLE001 - report every failing export, go on with the rest
                print(f"FAILED {name} {exporter}: {type(e).__name__}: {str(e)[:400]}", flush=True)
    manifest = {n: manifest_entry(n) for n in ARCHS}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
