// RUN: mini-opt %s --split-input-file --verify-diagnostics | filecheck %s

%a = "test.op"() : () -> index
"loop.for"(%a, %a, %a) <{kind = "diagonal"}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()
// CHECK: {{^}}loop kind must be one of serial, parallel, vectorize, unroll, got 'diagonal'

// -----

%a = "test.op"() : () -> index
"loop.for"(%a, %a, %a) <{kind = "parallel", unroll_factor = 4 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()
// CHECK: {{^}}unroll_factor is only allowed on 'unroll' loops, not 'parallel'

// -----

%a = "test.op"() : () -> index
"loop.for"(%a, %a, %a) <{kind = "unroll", unroll_factor = 0 : i64}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()
// CHECK: {{^}}unroll_factor must be >= 1, got 0

// -----

%a, %b = "test.op"() : () -> (index, i32)
"loop.for"(%a, %b, %a) <{kind = "serial"}> ({
^bb0(%i: index):
  "loop.yield"() : () -> ()
}) : (index, i32, index) -> ()
// CHECK: {{^}}operand 'ub' at position 1 does not verify:
// CHECK-NEXT: {{^}}i32 should be of base attribute index

// -----

%a = "test.op"() : () -> index
"loop.for"(%a, %a, %a) <{kind = "serial"}> ({
^bb0(%i: index, %j: index):
  "loop.yield"() : () -> ()
}) : (index, index, index) -> ()
// CHECK: {{^}}body must have exactly one block argument of type index (the induction variable)

// -----

%a = "test.op"() : () -> index
"loop.for"(%a, %a, %a) <{kind = "serial"}> ({
^bb0(%i: index):
  "test.op"() : () -> ()
}) : (index, index, index) -> ()
// CHECK: {{^}}Operation test.op terminates block in single-block region but is not a terminator

// -----

"loop.yield"() : () -> ()
// CHECK: {{^}}'loop.yield' expects parent op to be one of 'loop.for', 'loop.block'

// -----

%i = "test.op"() : () -> index
"loop.block"(%i) <{block_name = "b", iter_kinds = ["spatial", "reduce"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index) -> ()
// CHECK: {{^}}block 'b': 1 binding(s) but 2 iteration kind(s)

// -----

%i = "test.op"() : () -> index
"loop.block"(%i) <{block_name = "b", iter_kinds = ["parallel"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index) -> ()
// CHECK: {{^}}block 'b': iteration kind must be 'spatial' or 'reduce', got 'parallel'

// -----

%i = "test.op"() : () -> index
"loop.block"(%i, %i) <{block_name = "b", iter_kinds = ["spatial", "reduce"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index, index) -> ()
// CHECK: {{^}}block 'b': body region must have 2 index argument(s), one per binding, got 1

// -----

%i = "test.op"() : () -> index
"loop.block"(%i) <{block_name = "b", iter_kinds = ["spatial"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}) : (index) -> ()
// CHECK: {{^}}block 'b': an init region needs at least one 'reduce' iteration variable

// -----

%i = "test.op"() : () -> index
"loop.block"(%i) <{block_name = "b", iter_kinds = ["reduce"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
^bb0(%vi: index, %vj: index):
  "loop.yield"() : () -> ()
}) : (index) -> ()
// CHECK: {{^}}block 'b': init region must have 1 index argument(s), one per binding, got 2

// -----

%i = "test.op"() : () -> index
"loop.block"(%i) <{block_name = "", iter_kinds = ["spatial"]}> ({
^bb0(%vi: index):
  "loop.yield"() : () -> ()
}, {
}) : (index) -> ()
// CHECK: {{^}}block name must not be empty

// -----

"func.func"() <{sym_name = "k", function_type = (memref<4xf32>, index) -> ()}> ({
^bb0(%a: memref<4xf32>, %n: index):
  %c0 = "arith.constant"() <{value = 0 : index}> : () -> index
  "loop.for"(%c0, %n, %n) <{kind = "serial"}> ({
  ^bb1(%i: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  "func.return"() : () -> ()
}) {loop.kernel} : () -> ()
// CHECK: {{^}}kernel @k: argument #1 must be a memref, got index

// -----

"func.func"() <{sym_name = "k", function_type = (memref<4xf32>) -> f32}> ({
^bb0(%a: memref<4xf32>):
  %c0 = "arith.constant"() <{value = 0 : index}> : () -> index
  "loop.for"(%c0, %c0, %c0) <{kind = "serial"}> ({
  ^bb1(%i: index):
    "loop.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %z = "arith.constant"() <{value = 0.0 : f32}> : () -> f32
  "func.return"(%z) : (f32) -> ()
}) {loop.kernel} : () -> ()
// CHECK: {{^}}kernel @k must not return results (outputs are written to its last memref arguments), got 1
