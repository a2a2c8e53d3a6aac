// RUN: rm -f %t.mlir
// RUN: mini-opt %s -p cse -o %t.mlir | filecheck %s --check-prefix=STDOUT --allow-empty
// RUN: filecheck %s < %t.mlir
// Input `-` (or no input) is stdin.
// RUN: cat %s | mini-opt - -p cse | filecheck %s
// RUN: mini-opt < %s | filecheck %s
// A failing run does not write the output file.
// RUN: rm -f %t.bad.mlir
// RUN: not mini-opt %s -p nosuchpass -o %t.bad.mlir
// RUN: not cat %t.bad.mlir

// STDOUT-NOT: func.func
// CHECK-LABEL: func.func @g
// CHECK-NEXT:    func.return
func.func @g() {
  func.return
}
