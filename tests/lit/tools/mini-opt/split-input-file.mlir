// Each chunk is its own module; a broken chunk fails the run but the others still print.
// RUN: not mini-opt %s --split-input-file 2>&1 | filecheck %s

// CHECK-LABEL: func.func @first
// CHECK:       // -----
func.func @first() {
  func.return
}

// -----

// Line numbers are those of the whole file.
// CHECK:       split-input-file.mlir:[[# @LINE + 2]]:3: error: unknown dialect 'nosuch' of operation 'nosuch.op'
func.func @broken() {
  "nosuch.op"() : () -> ()
  func.return
}

// -----

// CHECK:       // -----
// CHECK-LABEL: func.func @third
func.func @third() {
  func.return
}
