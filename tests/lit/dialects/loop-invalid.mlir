// RUN: mini-opt %s --split-input-file --verify-diagnostics

%a = "test.op"() : () -> index
// expected-error @+1 {{loop kind must be one of serial, parallel, vectorize, unroll, got 'diagonal'}}
"loop.for"(%a, %a, %a) <{kind = "diagonal"}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()

// -----

%a = "test.op"() : () -> index
// expected-error @+1 {{unroll_factor is only allowed on 'unroll' loops, not 'parallel'}}
"loop.for"(%a, %a, %a) <{kind = "parallel", unroll_factor = 4 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()

// -----

%a = "test.op"() : () -> index
// expected-error @+1 {{unroll_factor must be >= 1, got 0}}
"loop.for"(%a, %a, %a) <{kind = "unroll", unroll_factor = 0 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()

// -----

%a, %b = "test.op"() : () -> (index, i32)
// expected-error @+1 {{operand 'ub' at position 1 does not verify}}
"loop.for"(%a, %b, %a) <{kind = "serial"}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, i32, index) -> ()

// -----

%a = "test.op"() : () -> index
// expected-error @+1 {{body must have exactly one block argument of type index (the induction variable)}}
"loop.for"(%a, %a, %a) <{kind = "serial"}> ({
^bb0(%i: index, %j: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()

// -----

%a = "test.op"() : () -> index
"loop.for"(%a, %a, %a) <{kind = "serial"}> ({
^bb0(%i: index):
  // expected-error @+1 {{Operation test.op terminates block in single-block region but is not a terminator}}
  "test.op"() : () -> ()
}) : (index, index, index) -> ()

// -----

// expected-error @+1 {{'loop.yield' expects parent op to be one of 'loop.for', 'loop.block'}}
"loop.yield"() : () -> ()

// -----

%i = "test.op"() : () -> index
// expected-error @+1 {{block 'b': 1 binding(s) but 2 iteration kind(s)}}
"loop.block"(%i) <{block_name = "b", iter_kinds = ["spatial", "reduce"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index) -> ()

// -----

%i = "test.op"() : () -> index
// expected-error @+1 {{block 'b': iteration kind must be 'spatial' or 'reduce', got 'parallel'}}
"loop.block"(%i) <{block_name = "b", iter_kinds = ["parallel"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index) -> ()

// -----

%i = "test.op"() : () -> index
// expected-error @+1 {{block 'b': body region must have 2 index argument(s), one per binding, got 1}}
"loop.block"(%i, %i) <{block_name = "b", iter_kinds = ["spatial", "reduce"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index, index) -> ()

// -----

%i = "test.op"() : () -> index
// expected-error @+1 {{block 'b': an init region needs at least one 'reduce' iteration variable}}
"loop.block"(%i) <{block_name = "b", iter_kinds = ["spatial"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}) : (index) -> ()

// -----

%i = "test.op"() : () -> index
// expected-error @+1 {{block 'b': init region must have 1 index argument(s), one per binding, got 2}}
"loop.block"(%i) <{block_name = "b", iter_kinds = ["reduce"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
^bb0(%vi: index, %vj: index):
  "loop.yield"() : () -> ()
}) : (index) -> ()

// -----

%i = "test.op"() : () -> index
// expected-error @+1 {{block name must not be empty}}
"loop.block"(%i) <{block_name = "", iter_kinds = ["spatial"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index) -> ()

// -----

"func.func"() <{sym_name = "k", function_type = (memref<4xf32>, index) -> ()}> ({
^bb0(%a: memref<4xf32>, %n: index):
  %c0 = "arith.constant"() <{value = 0 : index}> : () -> index
  // expected-error @+1 {{kernel @k: argument #1 must be a memref, got index}}
  "loop.for"(%c0, %n, %n) <{kind = "serial"}> ({
  ^bb1(%i: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  "func.return"() : () -> ()
}) {loop.kernel} : () -> ()

// -----

"func.func"() <{sym_name = "k", function_type = (memref<4xf32>) -> f32}> ({
^bb0(%a: memref<4xf32>):
  %c0 = "arith.constant"() <{value = 0 : index}> : () -> index
  // expected-error @+1 {{kernel @k must not return results (outputs are written to its last memref arguments), got 1}}
  "loop.for"(%c0, %c0, %c0) <{kind = "serial"}> ({
  ^bb1(%i: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %z = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "func.return"(%z) : (f32) -> ()
}) {loop.kernel} : () -> ()

// -----

// Custom-form parse errors name what is valid.
func.func @bad_kind(%a: index) {
  // expected-error @+1 {{unknown loop kind 'sideways', expected serial, parallel, vectorize, unroll or '{'}}
  loop.for %i = %a to %a step %a sideways {
  }
  func.return
}
