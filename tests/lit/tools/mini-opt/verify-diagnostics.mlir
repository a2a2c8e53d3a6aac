// Every kind of designator, matched the way mlir-opt matches them; success is exit 0.
// RUN: mini-opt %s --split-input-file --verify-diagnostics --load-pass-plugin=%S/Inputs/test_passes.py \
// RUN:   -p 'test-diagnose{severity=warning}' | filecheck %s --check-prefix=OUT

// OUT-LABEL: func.func @fine
func.func @fine() {
  // expected-warning @-1 {{function @fine has 1 ops}}
  func.return
  // expected-note @above {{its terminator is here}}
}

// -----

func.func @verify_next(%a: i32) {
  // expected-error @+1 {{Expected 2 operands}}
  %0 = "arith.addi"(%a) : (i32) -> i32
  func.return
}

// -----

func.func @verify_below(%a: i32) {
  // expected-error @below {{Expected 2 operands, but got 1}}
  %0 = "arith.addi"(%a) : (i32) -> i32
  func.return
}

// -----

func.func @verify_same_line(%a: i32) {
  %0 = "arith.addi"(%a) : (i32) -> i32 // expected-error {{2 operands}}
  func.return
}

// -----

func.func @verify_above(%a: i32) {
  %0 = "arith.addi"(%a) : (i32) -> i32
  // expected-error @above {{'arith.addi' op}}
  func.return
}

// -----

func.func @verify_regex(%a: i32) {
  // expected-error-re @+1 {{Expected {{[0-9]+}} operands}}
  %0 = "arith.addi"(%a) : (i32) -> i32
  func.return
}

// -----

// expected-error @+2 {{unknown dialect 'nosuch'}}
func.func @parse_error() {
  "nosuch.op"() : () -> ()
}
