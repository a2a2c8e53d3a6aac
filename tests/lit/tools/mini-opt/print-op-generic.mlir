// Both spellings print the generic form, and it parses back to the same IR.
// RUN: mini-opt %s --mlir-print-op-generic | filecheck %s
// RUN: mini-opt %s --print-op-generic | filecheck %s
// RUN: mini-opt %s --mlir-print-op-generic | mini-opt | filecheck %s --check-prefix=CUSTOM

// CHECK:      "builtin.module"() ({
// CHECK-NEXT:   "func.func"() <{sym_name = "id", function_type = (i32) -> i32}> ({
// CHECK-NEXT:   ^bb0(%[[A:.*]]: i32):
// CHECK-NEXT:     "func.return"(%[[A]]) : (i32) -> ()

// CUSTOM-LABEL: func.func @id
// CUSTOM-NEXT:    func.return
func.func @id(%a: i32) -> i32 {
  func.return %a : i32
}
