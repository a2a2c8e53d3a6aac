"""The minimlir params file: named weights beside the IR, mapped into memory without a copy.

The format (header, JSON index with a sha256 checksum, 64-byte aligned raw tensors) is defined in
minimlir.runtime._params, which needs only numpy, so the artifact runtime reads it without the
compiler; this module re-exports it for the compiler's side:

    save_params("model.params", {"w": np.ones((2, 3), np.float32)})
    load_params("model.params")["w"]      # read-only np.memmap view, no copy
"""

from minimlir.runtime._params import (  # noqa: F401 (re-exported)
    ALIGNMENT,
    MAGIC,
    SUPPORTED_DTYPES,
    VERSION,
    ParamsFormatError,
    ParamsHeader,
    checksum,
    load_params,
    read_header,
    read_index,
    save_params,
)
