"""Small EfficientNet-, RegNetY-, ConvNeXt- and MobileNetV3-style ONNX models (onnx.helper, random
weights), with a static or a dynamic (`batch`) batch dim: what benchmarks/compile_time.py
--dynamic and the symbolic-dims tests compile.

    from dynamic_models import MODELS
    model = MODELS["efficientnet"](dynamic=True)      # onnx.ModelProto, input "x": batch x 3 x 32 x 32
    MODELS["regnet"](dynamic=True, tiny=True)          # fewer blocks (the tests' size)

The blocks follow the published architectures at toy widths: depthwise convs, squeeze-excite
(global average pool, two 1x1 convs, a gate broadcast over H and W), BatchNormalization, SiLU,
hardswish / hard-sigmoid, grouped convs, a channels-last LayerNormalization with GELU (erf) MLP and a
layer scale, residual adds, and a pooled linear head (Flatten + Gemm).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

SIZE = 32


class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.n = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}{self.n}"

    def weight(self, shape, scale: float | None = None, base: str = "w") -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        s = scale if scale is not None else np.sqrt(2.0 / max(fan_in, 1))
        w = self.rng.normal(0, s, shape).astype(np.float32)
        return self.const(w, base)

    def const(self, value: np.ndarray, base: str = "c") -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], **attrs) -> str:
        out = self.name(op_type.lower() + "_")
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> str:
        w = self.weight((cout, cin // groups, k, k))
        b = self.const(self.rng.normal(0, 0.05, cout).astype(np.float32), "b")
        p = k // 2
        return self.op("Conv", [x, w, b], kernel_shape=[k, k], strides=[stride, stride],
                       pads=[p, p, p, p], group=groups)

    def bn(self, x: str, c: int) -> str:
        r = self.rng
        scale = self.const(r.uniform(0.5, 1.5, c).astype(np.float32), "g")
        bias = self.const(r.normal(0, 0.1, c).astype(np.float32), "beta")
        mean = self.const(r.normal(0, 0.1, c).astype(np.float32), "mean")
        var = self.const(r.uniform(0.5, 1.5, c).astype(np.float32), "var")
        return self.op("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-5)

    def silu(self, x: str) -> str:
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def hswish(self, x: str) -> str:
        return self.op("HardSwish", [x])

    def se(self, x: str, c: int, r: int, gate: str = "Sigmoid") -> str:
        s = self.op("GlobalAveragePool", [x])
        s = self.op("Relu", [self.conv(s, c, max(c // r, 4), 1)])
        s = self.conv(s, max(c // r, 4), c, 1)
        s = self.op(gate, [s]) if gate == "Sigmoid" else self.op("HardSigmoid", [s], alpha=1 / 6, beta=0.5)
        return self.op("Mul", [x, s])

    def head(self, x: str, c: int, classes: int = 10) -> str:
        p = self.op("Flatten", [self.op("GlobalAveragePool", [x])], axis=1)
        return self.op("Gemm", [p, self.weight((classes, c)), self.const(np.zeros(classes, np.float32))],
                       transB=1)

    def model(self, x_out: str, dynamic: bool, classes: int = 10):
        batch = "batch" if dynamic else 1
        g = helper.make_graph(
            self.nodes, "net",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, SIZE, SIZE])],
            [helper.make_tensor_value_info(x_out, TensorProto.FLOAT, [batch, classes])],
            self.inits,
        )
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def efficientnet(dynamic: bool = True, seed: int = 0, tiny: bool = False):
    """Stem conv-BN-SiLU, MBConv blocks (expand 1x1, depthwise 3x3/5x5, SE, project, residual)."""
    b = _Builder(seed)
    x = b.silu(b.bn(b.conv("x", 3, 16, 3, 2), 16))
    cin = 16
    stages = [(16, 3, 1, 1, 1), (24, 3, 2, 4, 2), (40, 5, 2, 4, 2), (64, 3, 1, 4, 2)]
    for cout, k, stride, expand, repeats in stages[:2] if tiny else stages:
        for r in range(repeats):
            s = stride if r == 0 else 1
            mid = cin * expand
            y = x if expand == 1 else b.silu(b.bn(b.conv(x, cin, mid, 1), mid))
            y = b.silu(b.bn(b.conv(y, mid, mid, k, s, groups=mid), mid))
            y = b.se(y, mid, 4 * expand)
            y = b.bn(b.conv(y, mid, cout, 1), cout)
            x = b.op("Add", [x, y]) if s == 1 and cin == cout else y
            cin = cout
    x = b.silu(b.bn(b.conv(x, cin, 128, 1), 128))
    return b.model(b.head(x, 128), dynamic)


def mobilenetv3(dynamic: bool = True, seed: int = 1, tiny: bool = False):
    """Stem conv-BN-hardswish, inverted residuals with hard-sigmoid SE on some blocks."""
    b = _Builder(seed)
    x = b.hswish(b.bn(b.conv("x", 3, 16, 3, 2), 16))
    cin = 16
    blocks = [(16, 3, 2, 16, True, "relu"), (24, 3, 2, 64, False, "relu"), (24, 3, 1, 72, False, "relu"),
              (40, 5, 2, 72, True, "hs"), (40, 5, 1, 120, True, "hs"), (48, 5, 1, 144, True, "hs")]
    for cout, k, stride, mid, se, act in [blocks[0], blocks[3]] if tiny else blocks:
        def a(v):
            return b.op("Relu", [v]) if act == "relu" else b.hswish(v)
        y = a(b.bn(b.conv(x, cin, mid, 1), mid)) if mid != cin else x
        y = a(b.bn(b.conv(y, mid, mid, k, stride, groups=mid), mid))
        if se:
            y = b.se(y, mid, 4, gate="HardSigmoid")
        y = b.bn(b.conv(y, mid, cout, 1), cout)
        x = b.op("Add", [x, y]) if stride == 1 and cin == cout else y
        cin = cout
    x = b.hswish(b.bn(b.conv(x, cin, 96, 1), 96))
    return b.model(b.head(x, 96), dynamic)


def regnet(dynamic: bool = True, seed: int = 2, tiny: bool = False):
    """RegNetY: stem, then X blocks with grouped 3x3 convs (group width 8) and SE, residual + ReLU."""
    b = _Builder(seed)
    x = b.op("Relu", [b.bn(b.conv("x", 3, 16, 3, 2), 16)])
    cin = 16
    for cout, depth in [(24, 1), (56, 2)] if tiny else [(24, 1), (56, 2), (152, 2)]:
        for r in range(depth):
            s = 2 if r == 0 else 1
            y = b.op("Relu", [b.bn(b.conv(x, cin, cout, 1), cout)])
            y = b.op("Relu", [b.bn(b.conv(y, cout, cout, 3, s, groups=cout // 8), cout)])
            y = b.se(y, cout, 4)
            y = b.bn(b.conv(y, cout, cout, 1), cout)
            short = x if s == 1 and cin == cout else b.bn(b.conv(x, cin, cout, 1, s), cout)
            x = b.op("Relu", [b.op("Add", [short, y])])
            cin = cout
    return b.model(b.head(x, cin), dynamic)


def convnext(dynamic: bool = True, seed: int = 3, tiny: bool = False):
    """ConvNeXt: patchify stem, blocks of depthwise 7x7, channels-last LayerNorm, MLP with GELU,
    layer scale, residual; downsampling by LayerNorm + 2x2 stride-2 conv."""
    b = _Builder(seed)

    def layernorm_cl(v: str, c: int) -> str:
        g = b.const(b.rng.uniform(0.5, 1.5, c).astype(np.float32), "ln_g")
        beta = b.const(b.rng.normal(0, 0.1, c).astype(np.float32), "ln_b")
        return b.op("LayerNormalization", [v, g, beta], axis=-1, epsilon=1e-6)

    def gelu(v: str) -> str:
        e = b.op("Erf", [b.op("Mul", [v, b.const(np.float32(1 / np.sqrt(2)))])])
        return b.op("Mul", [b.op("Mul", [v, b.const(np.float32(0.5))]),
                            b.op("Add", [e, b.const(np.float32(1.0))])])

    def cf_ln(v: str, c: int) -> str:  # LayerNorm over channels of an NCHW tensor
        t = b.op("Transpose", [v], perm=[0, 2, 3, 1])
        return b.op("Transpose", [layernorm_cl(t, c)], perm=[0, 3, 1, 2])

    x = cf_ln(b.conv("x", 3, 16, 4, 4), 16)  # 4x4 patches (k=4, pads 2: 9x9)
    cin = 16
    for stage, (c, depth) in enumerate([(16, 1), (32, 1)] if tiny else [(16, 2), (32, 2), (64, 1)]):
        if stage:
            x = b.conv(cf_ln(x, cin), cin, c, 2, 2)
            cin = c
        for _ in range(depth):
            y = b.conv(x, c, c, 7, 1, groups=c)
            y = layernorm_cl(b.op("Transpose", [y], perm=[0, 2, 3, 1]), c)
            y = b.op("Add", [b.op("MatMul", [y, b.weight((c, 4 * c))]), b.const(np.zeros(4 * c, np.float32))])
            y = gelu(y)
            y = b.op("MatMul", [y, b.weight((4 * c, c))])
            y = b.op("Mul", [y, b.const(np.full(c, 0.5, np.float32), "ls")])
            x = b.op("Add", [x, b.op("Transpose", [y], perm=[0, 3, 1, 2])])
    return b.model(b.head(cf_ln(x, cin), cin), dynamic)


MODELS = {"efficientnet": efficientnet, "mobilenetv3": mobilenetv3, "regnet": regnet, "convnext": convnext}
