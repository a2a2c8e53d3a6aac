// RUN: mini-opt %s -p mem-concat-in-place --verify-diagnostics | filecheck %s

func.func private @conv(%x: memref<1x2x4xf32>, %y: memref<1x3x4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @read(%x: memref<1x3x4xf32>, %y: memref<1x2x4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @concat_0(%a: memref<1x3x4xf32>, %b: memref<1x2x4xf32>, %y: memref<1x5x4xf32>) attributes {loop.kernel, loop.concat_axis = 1 : i64} {
  func.return
}
func.func private @concat_1(%a: memref<1x5x4xf32>, %b: memref<1x3x4xf32>, %y: memref<1x8x4xf32>) attributes {loop.kernel, loop.concat_axis = 1 : i64} {
  func.return
}
func.func private @concat_b2(%a: memref<2x3x4xf32>, %b: memref<2x3x4xf32>, %y: memref<2x6x4xf32>) attributes {loop.kernel, loop.concat_axis = 1 : i64} {
  func.return
}
func.func private @not_concat(%a: memref<1x3x4xf32>, %b: memref<1x2x4xf32>, %y: memref<1x5x4xf32>) attributes {loop.kernel} {
  func.return
}

// Both inputs are fresh buffers: the output is allocated before the first producer, the producers
// write its parts (offsets in elements: 0 and 3*4), the concat call is gone, and the output lives
// until the last read of a part (@read after the concat).
// CHECK-LABEL: func.func @two_producers
// CHECK-SAME:    (%[[X:.*]]: memref<1x2x4xf32>) -> memref<1x2x4xf32> {
// CHECK-NEXT:    %[[Y:.*]] = mem.alloc() : memref<1x5x4xf32>
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = mem.subrange %[[Y]][%[[O0]]] : memref<1x5x4xf32> -> memref<1x3x4xf32>
// CHECK-NEXT:    func.call @conv(%[[X]], %[[A]])
// CHECK-NEXT:    %[[O12:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[B:.*]] = mem.subrange %[[Y]][%[[O12]]] : memref<1x5x4xf32> -> memref<1x2x4xf32>
// CHECK-NEXT:    func.call @read(%[[A]], %[[B]])
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<1x2x4xf32>
// CHECK-NEXT:    func.call @read(%[[A]], %[[R]])
// CHECK-NEXT:    mem.dealloc %[[Y]] : memref<1x5x4xf32>
// CHECK-NEXT:    func.return %[[R]] : memref<1x2x4xf32>
// expected-remark @+1 {{concats in place: 1}}
func.func @two_producers(%x: memref<1x2x4xf32>) -> memref<1x2x4xf32> {
  %a = mem.alloc() : memref<1x3x4xf32>
  func.call @conv(%x, %a) : (memref<1x2x4xf32>, memref<1x3x4xf32>) -> ()
  %b = mem.alloc() : memref<1x2x4xf32>
  func.call @read(%a, %b) : (memref<1x3x4xf32>, memref<1x2x4xf32>) -> ()
  %y = mem.alloc() : memref<1x5x4xf32>
  func.call @concat_0(%a, %b, %y) : (memref<1x3x4xf32>, memref<1x2x4xf32>, memref<1x5x4xf32>) -> ()
  mem.dealloc %b : memref<1x2x4xf32>
  mem.dealloc %y : memref<1x5x4xf32>
  %r = mem.alloc() {mem.result_slot = 0 : i64} : memref<1x2x4xf32>
  func.call @read(%a, %r) : (memref<1x3x4xf32>, memref<1x2x4xf32>) -> ()
  mem.dealloc %a : memref<1x3x4xf32>
  func.return %r : memref<1x2x4xf32>
}

// An argument and a returned buffer cannot become parts: they are copied into theirs where the
// concat was. The returned concat output keeps its result slot and gets no dealloc.
// CHECK-LABEL: func.func @copied_parts
// CHECK-SAME:    (%[[X:.*]]: memref<1x2x4xf32>) -> (memref<1x3x4xf32>, memref<1x5x4xf32>) {
// CHECK-NEXT:    %[[A:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<1x3x4xf32>
// CHECK-NEXT:    func.call @conv(%[[X]], %[[A]])
// CHECK-NEXT:    %[[Y:.*]] = mem.alloc() {mem.result_slot = 1 : i64} : memref<1x5x4xf32>
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[PA:.*]] = mem.subrange %[[Y]][%[[O0]]] : memref<1x5x4xf32> -> memref<1x3x4xf32>
// CHECK-NEXT:    mem.copy %[[A]], %[[PA]] : memref<1x3x4xf32>, memref<1x3x4xf32>
// CHECK-NEXT:    %[[O12:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[PX:.*]] = mem.subrange %[[Y]][%[[O12]]] : memref<1x5x4xf32> -> memref<1x2x4xf32>
// CHECK-NEXT:    mem.copy %[[X]], %[[PX]] : memref<1x2x4xf32>, memref<1x2x4xf32>
// CHECK-NEXT:    func.return %[[A]], %[[Y]]
// expected-remark @+1 {{concats in place: 1}}
func.func @copied_parts(%x: memref<1x2x4xf32>) -> (memref<1x3x4xf32>, memref<1x5x4xf32>) {
  %a = mem.alloc() {mem.result_slot = 0 : i64} : memref<1x3x4xf32>
  func.call @conv(%x, %a) : (memref<1x2x4xf32>, memref<1x3x4xf32>) -> ()
  %y = mem.alloc() {mem.result_slot = 1 : i64} : memref<1x5x4xf32>
  func.call @concat_0(%a, %x, %y) : (memref<1x3x4xf32>, memref<1x2x4xf32>, memref<1x5x4xf32>) -> ()
  func.return %a, %y : memref<1x3x4xf32>, memref<1x5x4xf32>
}

// A concat of a concat (DenseNet): the inner output becomes a part of the outer one and its own
// part follows it. An input met twice is a part once and copied the second time.
// CHECK-LABEL: func.func @nested
// CHECK-SAME:    (%[[X:.*]]: memref<1x2x4xf32>) -> memref<1x8x4xf32> {
// CHECK-NEXT:    %[[Z:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<1x8x4xf32>
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[Y:.*]] = mem.subrange %[[Z]][%[[O0]]] : memref<1x8x4xf32> -> memref<1x5x4xf32>
// CHECK-NEXT:    %[[O0B:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = mem.subrange %[[Y]][%[[O0B]]] : memref<1x5x4xf32> -> memref<1x3x4xf32>
// CHECK-NEXT:    func.call @conv(%[[X]], %[[A]])
// CHECK-NEXT:    %[[O12:.*]] = arith.constant 12 : index
// CHECK-NEXT:    %[[PX:.*]] = mem.subrange %[[Y]][%[[O12]]] : memref<1x5x4xf32> -> memref<1x2x4xf32>
// CHECK-NEXT:    mem.copy %[[X]], %[[PX]]
// CHECK-NEXT:    %[[O20:.*]] = arith.constant 20 : index
// CHECK-NEXT:    %[[PA:.*]] = mem.subrange %[[Z]][%[[O20]]] : memref<1x8x4xf32> -> memref<1x3x4xf32>
// CHECK-NEXT:    mem.copy %[[A]], %[[PA]]
// CHECK-NEXT:    func.return %[[Z]]
// expected-remark @+1 {{concats in place: 2}}
func.func @nested(%x: memref<1x2x4xf32>) -> memref<1x8x4xf32> {
  %a = mem.alloc() : memref<1x3x4xf32>
  func.call @conv(%x, %a) : (memref<1x2x4xf32>, memref<1x3x4xf32>) -> ()
  %y = mem.alloc() : memref<1x5x4xf32>
  func.call @concat_0(%a, %x, %y) : (memref<1x3x4xf32>, memref<1x2x4xf32>, memref<1x5x4xf32>) -> ()
  %z = mem.alloc() {mem.result_slot = 0 : i64} : memref<1x8x4xf32>
  func.call @concat_1(%y, %a, %z) : (memref<1x5x4xf32>, memref<1x3x4xf32>, memref<1x8x4xf32>) -> ()
  mem.dealloc %a : memref<1x3x4xf32>
  mem.dealloc %y : memref<1x5x4xf32>
  func.return %z : memref<1x8x4xf32>
}

// Left alone: a batch of 2 (each input's part is two runs), and a kernel not marked as a concat.
// CHECK-LABEL: func.func @left_alone
// CHECK:         func.call @concat_b2
// CHECK:         func.call @not_concat
// CHECK-NOT:     mem.subrange
func.func @left_alone(%a: memref<2x3x4xf32>, %b: memref<2x3x4xf32>, %c: memref<1x3x4xf32>, %d: memref<1x2x4xf32>) -> (memref<2x6x4xf32>, memref<1x5x4xf32>) {
  %y = mem.alloc() {mem.result_slot = 0 : i64} : memref<2x6x4xf32>
  func.call @concat_b2(%a, %b, %y) : (memref<2x3x4xf32>, memref<2x3x4xf32>, memref<2x6x4xf32>) -> ()
  %z = mem.alloc() {mem.result_slot = 1 : i64} : memref<1x5x4xf32>
  func.call @not_concat(%c, %d, %z) : (memref<1x3x4xf32>, memref<1x2x4xf32>, memref<1x5x4xf32>) -> ()
  func.return %y, %z : memref<2x6x4xf32>, memref<1x5x4xf32>
}
