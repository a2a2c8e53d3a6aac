// RUN: mini-opt %s -p convert-loop-to-llvm | filecheck %s

// A loop (any kind lowers like serial for now) becomes header/body/exit blocks.
// CHECK-LABEL: func.func @for_parallel
// CHECK:         %[[N:.*]] = mem.dim
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    cf.br ^[[HDR:.*]](%[[C0]] : index)
// CHECK-NEXT:  ^[[HDR]](%[[I:.*]]: index):
// CHECK-NEXT:    %[[C:.*]] = arith.cmpi slt, %[[I]], %[[N]] : index
// CHECK-NEXT:    cf.cond_br %[[C]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK-NEXT:    %{{.*}} = arith.addi %[[I]], %[[I]] : index
// CHECK-NEXT:    %[[NEXT:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK-NEXT:    cf.br ^[[HDR]](%[[NEXT]] : index)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    func.return
func.func @for_parallel(%a: memref<?xf32>) attributes {loop.kernel} {
  %n = mem.dim %a, 0 : memref<?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  loop.for %i = %c0 to %n step %c1 parallel {
    %t = arith.addi %i, %i : index
  }
  func.return
}

// A block is inlined with its iteration variable replaced by the binding; the init
// region runs under `reduce var == 0`.
// CHECK-LABEL: func.func @block_init
// CHECK:       ^[[HDR:.*]](%[[K:.*]]: index):
// CHECK:         cf.cond_br %{{.*}}, ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.cmpi eq, %[[K]], %[[Z]] : index
// CHECK-NEXT:    cf.cond_br %[[FIRST]], ^[[INIT:.*]], ^[[CONT:.*]]
// CHECK-NEXT:  ^[[INIT]]:
// CHECK-NEXT:    mem.store %{{.*}}, %{{.*}}[%[[K]]]
// CHECK-NEXT:    cf.br ^[[CONT]]
// CHECK-NEXT:  ^[[CONT]]:
// CHECK-NEXT:    %{{.*}} = mem.load %{{.*}}[%[[K]]] : memref<4xf32> -> f32
// CHECK-NEXT:    %[[NEXT:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK-NEXT:    cf.br ^[[HDR]](%[[NEXT]] : index)
// CHECK-NOT:     loop.
func.func @block_init(%m: memref<4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  loop.for %k = %c0 to %c4 step %c1 {
    loop.block "sum" (%vk = %k) [reduce] {
      %x = mem.load %m[%vk] : memref<4xf32> -> f32
    } init {
      mem.store %z, %m[%vk] : f32, memref<4xf32>
    }
  }
  func.return
}
