// RUN: mini-opt %s -p mem-reuse-inputs --verify-diagnostics | filecheck %s

// @add_relu's output (arg 2) may take input 1's buffer (loop-mark-inplace's mark).
func.func private @produce(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @add_relu(%x: memref<4x8xf32>, %r: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {loop.kernel, loop.inplace = [[1 : i64, 2 : i64]]} {
  func.return
}
func.func private @unmarked(%x: memref<4x8xf32>, %r: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @read(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @read_flat(%x: memref<32xf32>, %y: memref<4x8xf32>) attributes {loop.kernel} {
  func.return
}

// A chain of residual adds keeps one buffer: each output takes the residual that dies at its
// call (also through a reshape an earlier call read), and the buffer is freed after the last use
// of the last output.
// CHECK-LABEL: func.func @chain
// CHECK-SAME:    (%[[X:.*]]: memref<4x8xf32>) -> memref<4x8xf32> {
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() : memref<4x8xf32>
// CHECK-NEXT:    func.call @produce(%[[X]], %[[R]])
// CHECK-NEXT:    func.call @add_relu(%[[X]], %[[R]], %[[R]])
// CHECK-NEXT:    %[[V:.*]] = mem.view %[[R]] : memref<4x8xf32> -> memref<32xf32>
// CHECK-NEXT:    %[[T:.*]] = mem.alloc() : memref<4x8xf32>
// CHECK-NEXT:    func.call @read_flat(%[[V]], %[[T]])
// CHECK-NEXT:    func.call @add_relu(%[[T]], %[[R]], %[[R]])
// CHECK-NEXT:    mem.dealloc %[[T]]
// CHECK-NEXT:    %[[OUT:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<4x8xf32>
// CHECK-NEXT:    func.call @read(%[[R]], %[[OUT]])
// CHECK-NEXT:    mem.dealloc %[[R]]
// CHECK-NEXT:    func.return %[[OUT]]
// expected-remark @+1 {{outputs in their inputs' buffers: 2}}
func.func @chain(%x: memref<4x8xf32>) -> memref<4x8xf32> {
  %r = mem.alloc() : memref<4x8xf32>
  func.call @produce(%x, %r) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %y = mem.alloc() : memref<4x8xf32>
  func.call @add_relu(%x, %r, %y) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %r : memref<4x8xf32>
  %v = mem.view %y : memref<4x8xf32> -> memref<32xf32>
  %t = mem.alloc() : memref<4x8xf32>
  func.call @read_flat(%v, %t) : (memref<32xf32>, memref<4x8xf32>) -> ()
  %z = mem.alloc() : memref<4x8xf32>
  func.call @add_relu(%t, %y, %z) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %y : memref<4x8xf32>
  mem.dealloc %t : memref<4x8xf32>
  %out = mem.alloc() {mem.result_slot = 0 : i64} : memref<4x8xf32>
  func.call @read(%z, %out) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %z : memref<4x8xf32>
  func.return %out : memref<4x8xf32>
}

// Left alone: a residual read again after the call; a function argument (the caller's input);
// a returned output (the result slot); a residual also passed as the other input; an unmarked
// kernel.
// CHECK-LABEL: func.func @kept
// CHECK:         func.call @add_relu(%{{.*}}, %[[R:.*]], %[[Y:.*]])
// CHECK-NEXT:    %{{.*}} = mem.alloc()
// CHECK-NEXT:    func.call @read(%[[R]], %{{.*}})
// CHECK:         func.call @add_relu(%{{.*}}, %[[A:.*]], %[[Y2:.*]])
// CHECK:         func.call @add_relu(%[[T:.*]], %[[T]], %[[Y3:.*]])
// CHECK:         func.call @unmarked(%{{.*}}, %[[U:.*]], %[[Y4:.*]])
// CHECK:         func.call @add_relu(%{{.*}}, %[[L:.*]], %[[RES:.*]])
// CHECK-NOT:     remark
func.func @kept(%x: memref<4x8xf32>, %a: memref<4x8xf32>) -> memref<4x8xf32> {
  %r = mem.alloc() : memref<4x8xf32>
  func.call @produce(%x, %r) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %y = mem.alloc() : memref<4x8xf32>
  func.call @add_relu(%x, %r, %y) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  %s = mem.alloc() : memref<4x8xf32>
  func.call @read(%r, %s) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %r : memref<4x8xf32>
  %y2 = mem.alloc() : memref<4x8xf32>
  func.call @add_relu(%y, %a, %y2) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %y : memref<4x8xf32>
  %t = mem.alloc() : memref<4x8xf32>
  func.call @produce(%x, %t) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %y3 = mem.alloc() : memref<4x8xf32>
  func.call @add_relu(%t, %t, %y3) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %t : memref<4x8xf32>
  %u = mem.alloc() : memref<4x8xf32>
  func.call @produce(%x, %u) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %y4 = mem.alloc() : memref<4x8xf32>
  func.call @unmarked(%y3, %u, %y4) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %u : memref<4x8xf32>
  %l = mem.alloc() : memref<4x8xf32>
  func.call @produce(%y4, %l) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %res = mem.alloc() {mem.result_slot = 0 : i64} : memref<4x8xf32>
  func.call @add_relu(%y2, %l, %res) : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  mem.dealloc %l : memref<4x8xf32>
  mem.dealloc %y2 : memref<4x8xf32>
  mem.dealloc %y3 : memref<4x8xf32>
  mem.dealloc %y4 : memref<4x8xf32>
  mem.dealloc %s : memref<4x8xf32>
  func.return %res : memref<4x8xf32>
}
