// A registered named pipeline (compiler/pipelines.py) is usable by name, alone or inside a pipeline.
// RUN: mini-opt %s -p cleanup | filecheck %s
// RUN: mini-opt %s --pass-pipeline='builtin.module(func.func(cse),cleanup)' | filecheck %s
// RUN: mini-opt %s -p cleanup --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=EXPANDED
// EXPANDED:      IR Dump After canonicalize
// EXPANDED:      IR Dump After cse
// EXPANDED:      IR Dump After dce

// CHECK-LABEL: func.func @dead
// CHECK-NEXT:    func.return
func.func @dead(%a: i32) {
  %0 = arith.addi %a, %a : i32
  func.return
}
