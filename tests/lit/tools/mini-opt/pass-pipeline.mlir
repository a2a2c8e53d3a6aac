// The anchored form, the short -p form and a nested func.func anchor all run the same passes.
// RUN: mini-opt %s --pass-pipeline='builtin.module(func.func(cse))' | filecheck %s
// RUN: mini-opt %s -p 'func.func(cse)' | filecheck %s
// RUN: mini-opt %s -p cse | filecheck %s
// RUN: mini-opt %s --pass-pipeline='builtin.module(cse, canonicalize)' | filecheck %s
// Options, with spaces, quotes and lists, reach the pass as typed dataclass fields.
// RUN: mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py \
// RUN:   --pass-pipeline='builtin.module(func.func(cse),test-options{count=3 ratio=2 flag sizes=1,2,3 label="a b, c" mode=slow limit=-4})' \
// RUN:   | filecheck %s --check-prefix=OPTS
// RUN: mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'test-options{sizes={4,8} flag=false}' \
// RUN:   | filecheck %s --check-prefix=LIST
// Nested anchors only see their own op: a module pass under func.func gets a module holding one function.
// RUN: mini-opt %s --load-pass-plugin=%S/Inputs/test_passes.py -p 'func.func(test-options{count=7})' \
// RUN:   | filecheck %s --check-prefix=NESTED

// OPTS: test.options = "count=3 ratio=2.0 flag=True sizes=[1, 2, 3] label='a b, c' mode=slow limit=-4"
// LIST: test.options = "count=1 ratio=0.5 flag=False sizes=[4, 8] label='x' mode=fast limit=None"
// NESTED-NOT: test.options

// CHECK-LABEL: func.func @twice
// CHECK-SAME:    (%[[A:.*]]: i32)
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[A]], %[[A]] : i32
// CHECK-NEXT:    %[[M:.*]] = arith.muli %[[S]], %[[S]] : i32
// CHECK-NEXT:    func.return %[[M]] : i32
func.func @twice(%a: i32) -> i32 {
  %0 = arith.addi %a, %a : i32
  %1 = arith.addi %a, %a : i32
  %2 = arith.muli %0, %1 : i32
  func.return %2 : i32
}

// CHECK-LABEL: func.func @other
// CHECK-NEXT:    func.return
func.func @other() {
  func.return
}
