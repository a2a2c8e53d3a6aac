// RUN: mini-opt --list-passes --load-pass-plugin=%S/Inputs/test_passes.py | filecheck %s
// CHECK:      Available passes:
// CHECK:        canonicalize  -  Applies all canonicalization patterns.
// CHECK:        cse  -  Common subexpression elimination.
// CHECK:        test-options  -  Record the options it got as a `test.options` attribute on the module.
// CHECK-NEXT:       --count=<int>  (default: 1)
// CHECK-NEXT:       --ratio=<float>  (default: 0.5)
// CHECK-NEXT:       --flag=<bool>  (default: false)
// CHECK-NEXT:       --sizes=<tuple[int, ...]>  (default: )
// CHECK-NEXT:       --label=<str>  (default: x)
// CHECK-NEXT:       --mode=<'fast' | 'slow'>  (default: fast)
// CHECK-NEXT:       --limit=<int | None>  (default: None)
// CHECK:      Named pipelines:
// CHECK-NEXT:   cleanup  -  Generic cleanup: canonicalize, then CSE, then dead code elimination.
// CHECK-NEXT:       = canonicalize,cse,dce

// RUN: mini-opt --help | filecheck %s --check-prefix=HELP
// HELP: usage: mini-opt
// HELP-DAG: --pass-pipeline
// HELP-DAG: -p PASSES, --passes PASSES
// HELP-DAG: --list-passes
// HELP-DAG: --print-ir-after-all, --mlir-print-ir-after-all
// HELP-DAG: --mlir-timing
// HELP-DAG: --verify-diagnostics
// HELP-DAG: --split-input-file
// HELP-DAG: --print-op-generic, --mlir-print-op-generic
