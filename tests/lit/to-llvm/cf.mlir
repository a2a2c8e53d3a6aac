// RUN: mini-opt %s --split-input-file -p convert-cf-to-llvm | filecheck %s

// Block arguments of type index become i64; the loop counter's users see a cast back.
// CHECK-LABEL: func.func @loop
// CHECK-SAME:    (%[[N:.*]]: index, %[[Z:.*]]: index)
// CHECK-NEXT:    %[[ZI:.*]] = builtin.unrealized_conversion_cast %[[Z]] : index to i64
// CHECK-NEXT:    llvm.br ^[[LOOP:.*]](%[[ZI]] : i64)
// CHECK-NEXT:  ^[[LOOP]](%[[I:.*]]: i64):
// CHECK-NEXT:    %[[IX:.*]] = builtin.unrealized_conversion_cast %[[I]] : i64 to index
// CHECK-NEXT:    %[[C:.*]] = "test.op"(%[[IX]], %[[N]]) : (index, index) -> i1
// CHECK-NEXT:    llvm.cond_br %[[C]], ^[[LOOP]](%[[I]] : i64), ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    func.return
func.func @loop(%n: index, %z: index) {
  cf.br ^loop(%z : index)
^loop(%i: index):
  %c = "test.op"(%i, %n) : (index, index) -> i1
  cf.cond_br %c, ^loop(%i : index), ^exit
^exit:
  func.return
}

// -----

// CHECK-LABEL: func.func @assert
// CHECK-SAME:    (%[[C:.*]]: i1)
// CHECK-NEXT:    llvm.cond_br %[[C]], ^[[OK:.*]], ^[[FAIL:.*]]
// CHECK-NEXT:  ^[[OK]]:
// CHECK-NEXT:    func.return
// CHECK-NEXT:  ^[[FAIL]]:
// CHECK-NEXT:    llvm.call @abort() : () -> ()
// CHECK-NEXT:    llvm.unreachable
// CHECK:       llvm.func @abort()
func.func @assert(%c: i1) {
  cf.assert %c, "boom"
  func.return
}
