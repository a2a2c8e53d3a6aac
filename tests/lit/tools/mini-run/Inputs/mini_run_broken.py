"""mini-run with a deliberately wrong Relu lowering (max(x, 0) + 0.25), for compare.test:

    python mini_run_broken.py [--only-fused] MINI-RUN-ARGS...

`--only-fused`: wrong only inside a fused kernel that returns one value (a graph-fuse group with no
other output), so exposing the intermediates hides the error and --compare must bisect.
The compile cache is off (the patch is not part of the source fingerprint), one compile job.
"""

import os
import sys

from minimlir.dialects import graph
from minimlir.tools.mini_run import main

only_fused = "--only-fused" in sys.argv
argv = [a for a in sys.argv[1:] if a != "--only-fused"]
good = graph.ReluOp.element


def broken(op, b, x):
    fn = op.parent_op()
    fused = fn is not None and "graph.primitive" in fn.attributes and len(fn.function_type.outputs.data) == 1
    y = good(op, b, x)
    return b.add(y, b.const(0.25, x.type)) if fused or not only_fused else y


graph.ReluOp.element = broken
os.environ["MINIMLIR_COMPILE_JOBS"] = "1"
sys.exit(main([*argv, "--no-cache"]))
