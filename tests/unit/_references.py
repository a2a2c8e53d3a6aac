"""numpy references shared by test files."""

import numpy as np


def conv_ref(x, w, b, strides, pads, dilations, group):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    og = o // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * dilations[0]: i * dilations[0] + strides[0] * (oh - 1) + 1: strides[0],
                           j * dilations[1]: j * dilations[1] + strides[1] * (ow - 1) + 1: strides[1]]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        y += b[None, :, None, None]
    return y.astype(x.dtype)


def blocked(x: np.ndarray, b: int) -> np.ndarray:
    """(N, C, H, W) -> (N, C/b, H, W, b): graph-layout's NCHW{b}c."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


def unblocked(y: np.ndarray) -> np.ndarray:
    n, cb, h, w, b = y.shape
    return np.ascontiguousarray(y.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w))
