// No input, however malformed, gives a Python traceback: a located error and exit code 1.
// RUN: not mini-opt %S/Inputs/does-not-exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: error: could not open input file '{{.*}}does-not-exist.mlir': No such file or directory

// RUN: not mini-opt %S/Inputs 2>&1 | filecheck %s --check-prefix=DIR
// DIR: error: could not open input file '{{.*}}Inputs': Is a directory

// RUN: not mini-opt %S/Inputs/junk.bin 2>&1 | filecheck %s --check-prefix=JUNK
// JUNK: junk.bin:2:4: error: invalid UTF-8 byte 0xff in input
// JUNK-NOT: Traceback

// An empty file is an empty module, as in mlir-opt.
// RUN: mini-opt %S/Inputs/empty.mlir | filecheck %s --check-prefix=EMPTY
// EMPTY: builtin.module {
// EMPTY-NEXT: }

// RUN: not mini-opt %s --split-input-file 2>&1 | filecheck %s
// CHECK-NOT: Traceback

// CHECK: malformed-input.mlir:[[# @LINE + 1]]:26: error: unterminated string literal
%s = "test.op"() {attr = "unterminated} : () -> ()

// -----

// An escape in an unterminated string made xDSL's lexer regex backtrack exponentially (a hang).
// CHECK: malformed-input.mlir:[[# @LINE + 1]]:26: error: unterminated string literal
%s = "test.op"() {attr = "a \"quoted\" string that never ends, long enough to hang a backtracking regex} : () -> ()

// -----

// CHECK: malformed-input.mlir:[[# @LINE + 1]]:1: error: unknown operation 'arith.nosuchop'
arith.nosuchop

// -----

// CHECK: malformed-input.mlir:[[# @LINE + 1]]:1: error: unknown dialect 'nodialect' of operation 'nodialect.op'
"nodialect.op"() : () -> ()

// -----

// CHECK: malformed-input.mlir:{{[0-9]+}}:{{[0-9]+}}: error: unexpected end of input
func.func @unclosed() {
  func.return

// -----

// CHECK: malformed-input.mlir:[[# @LINE + 1]]:1: error: values used but not defined: [%undefined]
"test.op"(%undefined) : (i32) -> ()

// -----

// Unregistered ops are fine with the flag.
// RUN: mini-opt %S/Inputs/unregistered.mlir --allow-unregistered-dialect | filecheck %s --check-prefix=UNREG
// UNREG: "nodialect.op"() : () -> ()
