// A symbol defined twice: the second definition is the located error, with a note at the first
// (mlir-opt's wording), exit code 1; mini-run stops at the same error.
// RUN: not mini-opt %s 2>&1 | filecheck %s --match-full-lines --strict-whitespace
// RUN: not mini-run %s 2>&1 | filecheck %s --check-prefix=TOOL
// RUN: mini-opt %s --verify-diagnostics

//      CHECK:{{.*}}builtin-invalid.mlir:21:1: error: redefinition of symbol named 'f'
// CHECK-NEXT:func.func @f(%x: f32) -> f32 {
// CHECK-NEXT:^
// CHECK-NEXT:{{.*}}builtin-invalid.mlir:16:1: note: see existing symbol definition here
// CHECK-NEXT:func.func @f(%x: f32) -> f32 {
// CHECK-NEXT:^
//  CHECK-NOT:{{.}}
// TOOL: builtin-invalid.mlir:21:1: error: redefinition of symbol named 'f'
// expected-note @+1 {{see existing symbol definition here}}
func.func @f(%x: f32) -> f32 {
  func.return %x : f32
}

// expected-error @+1 {{redefinition of symbol named 'f'}}
func.func @f(%x: f32) -> f32 {
  func.return %x : f32
}

func.func @g(%x: f32) -> f32 {
  func.return %x : f32
}
