// RUN: mini-opt %s -p graph-bufferize | filecheck %s

func.func private @k_add(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k_dyn(%a: memref<?x4xf32>, %b: memref<4xf32>, %c: memref<?x4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k_split(%a: memref<4xf32>, %b: memref<2xf32>, %c: memref<2xf32>) attributes {loop.kernel} {
  func.return
}

// A kernel call: one fresh buffer per result, the call takes inputs then outputs; the returned
// kernel output is the result buffer itself.
// CHECK-LABEL: func.func @call_kernel
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>, %[[Y:.*]]: memref<4xf32>) -> memref<4xf32> {
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[X]], %[[Y]], %[[R]]) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    func.return %[[R]] : memref<4xf32>
func.func @call_kernel(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.call_kernel @k_add(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// An intermediate buffer is freed right after its last use; several results per call.
// CHECK-LABEL: func.func @intermediate_and_multi_result
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>) -> memref<2xf32> {
// CHECK-NEXT:    %[[T:.*]] = mem.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[X]], %[[X]], %[[T]])
// CHECK-NEXT:    %[[A:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<2xf32>
// CHECK-NEXT:    %[[B:.*]] = mem.alloc() : memref<2xf32>
// CHECK-NEXT:    func.call @k_split(%[[T]], %[[A]], %[[B]])
// CHECK-NEXT:    mem.dealloc %[[T]] : memref<4xf32>
// CHECK-NEXT:    mem.dealloc %[[B]] : memref<2xf32>
// CHECK-NEXT:    func.return %[[A]] : memref<2xf32>
func.func @intermediate_and_multi_result(%x: tensor<4xf32>) -> tensor<2xf32> {
  %t = graph.call_kernel @k_add(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a, %b = graph.call_kernel @k_split(%t) : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return %a : tensor<2xf32>
}

// Params become trailing arguments tagged `mem.param`; a name used twice is one argument.
// Existing argument attributes are kept.
// CHECK-LABEL: func.func @params
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32> {onnx.name = "x"}, %[[W:.*]]: memref<4xf32> {mem.param = "w"}, %[[B:.*]]: memref<4xf32> {mem.param = "b"}) -> (memref<4xf32>, memref<4xf32>) {
// CHECK-NEXT:    %[[T:.*]] = mem.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[X]], %[[W]], %[[T]])
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[T]], %[[B]], %[[R]])
// CHECK-NEXT:    mem.dealloc %[[T]]
// CHECK-NEXT:    %[[R2:.*]] = mem.alloc() {mem.result_slot = 1 : i64} : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[R]], %[[W]], %[[R2]])
// CHECK-NEXT:    func.return %[[R]], %[[R2]]
func.func @params(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<4xf32>, tensor<4xf32>) {
  %w = graph.param "w" : tensor<4xf32>
  %t = graph.call_kernel @k_add(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = graph.param "b" : tensor<4xf32>
  %r = graph.call_kernel @k_add(%t, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %w2 = graph.param "w" : tensor<4xf32>
  %r2 = graph.call_kernel @k_add(%r, %w2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %r2 : tensor<4xf32>, tensor<4xf32>
}

// Small constants: a stack buffer filled at function entry, one store per element (a splat is
// one mem.fill). Returning a constant copies it into the result buffer.
// CHECK-LABEL: func.func @constants
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>) -> memref<2x2xf32> {
// CHECK-NEXT:    %[[C:.*]] = mem.alloca() : memref<2x2xf32>
// CHECK-DAG:     %[[I0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[I1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[V1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:     %[[V2:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG:     %[[V3:.*]] = arith.constant 3.000000e+00 : f32
// CHECK:         mem.store %[[V1]], %[[C]][%[[I0]], %[[I0]]] : f32, memref<2x2xf32>
// CHECK-NEXT:    mem.store %[[V2]], %[[C]][%[[I0]], %[[I1]]] : f32, memref<2x2xf32>
// CHECK-NEXT:    mem.store %[[V3]], %[[C]][%[[I1]], %[[I0]]] : f32, memref<2x2xf32>
// CHECK-NEXT:    mem.store %[[V1]], %[[C]][%[[I1]], %[[I1]]] : f32, memref<2x2xf32>
// CHECK-NEXT:    %[[S:.*]] = mem.alloca() : memref<4xf32>
// CHECK-NEXT:    %[[H:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    mem.fill %[[H]], %[[S]] : f32, memref<4xf32>
// CHECK-NEXT:    %[[T:.*]] = mem.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[X]], %[[S]], %[[T]])
// CHECK-NEXT:    mem.dealloc %[[T]]
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<2x2xf32>
// CHECK-NEXT:    mem.copy %[[C]], %[[R]] : memref<2x2xf32>, memref<2x2xf32>
// CHECK-NEXT:    func.return %[[R]] : memref<2x2xf32>
func.func @constants(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %c = graph.constant dense<[[1.0, 2.0], [3.0, 1.0]]> : tensor<2x2xf32>
  %s = graph.constant dense<0.5> : tensor<4xf32>
  %t = graph.call_kernel @k_add(%x, %s) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<2x2xf32>
}

// Reshape is a zero-copy view; the view keeps its source alive; a returned view is copied out.
// CHECK-LABEL: func.func @reshape_view
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>) -> memref<2x2xf32> {
// CHECK-NEXT:    %[[T:.*]] = mem.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[X]], %[[X]], %[[T]])
// CHECK-NEXT:    %[[V:.*]] = mem.view %[[T]] : memref<4xf32> -> memref<2x2xf32>
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<2x2xf32>
// CHECK-NEXT:    mem.copy %[[V]], %[[R]] : memref<2x2xf32>, memref<2x2xf32>
// CHECK-NEXT:    mem.dealloc %[[T]] : memref<4xf32>
// CHECK-NEXT:    func.return %[[R]] : memref<2x2xf32>
func.func @reshape_view(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  %t = graph.call_kernel @k_add(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %v = graph.reshape %t : tensor<4xf32> -> tensor<2x2xf32>
  func.return %v : tensor<2x2xf32>
}

// Returning an input, or the same value twice: copies into fresh result buffers.
// CHECK-LABEL: func.func @returned_input_and_duplicate
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
// CHECK-NEXT:    %[[T:.*]] = mem.alloc() {mem.result_slot = 1 : i64} : memref<4xf32>
// CHECK-NEXT:    func.call @k_add(%[[X]], %[[X]], %[[T]])
// CHECK-NEXT:    %[[R0:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<4xf32>
// CHECK-NEXT:    mem.copy %[[X]], %[[R0]]
// CHECK-NEXT:    %[[R2:.*]] = mem.alloc() {mem.result_slot = 2 : i64} : memref<4xf32>
// CHECK-NEXT:    mem.copy %[[T]], %[[R2]]
// CHECK-NEXT:    func.return %[[R0]], %[[T]], %[[R2]]
func.func @returned_input_and_duplicate(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %t = graph.call_kernel @k_add(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %x, %t, %t : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Dynamic dims: graph.dim -> mem.dim, allocations take the call's dims, index arithmetic stays.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME:    (%[[X:.*]]: memref<?x4xf32>, %[[W:.*]]: memref<4xf32> {mem.param = "w"}) -> memref<?x2x2xf32> {
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[X]], 0 : memref<?x4xf32>
// CHECK-NEXT:    %[[T:.*]] = mem.alloc(%[[N]]) : memref<?x4xf32>
// CHECK-NEXT:    func.call @k_dyn(%[[X]], %[[W]], %[[T]]) : (memref<?x4xf32>, memref<4xf32>, memref<?x4xf32>) -> ()
// CHECK-NEXT:    %[[V:.*]] = mem.view %[[T]](%[[N]]) : memref<?x4xf32> -> memref<?x2x2xf32>
// CHECK-NEXT:    %[[D:.*]] = mem.dim %[[V]], 0 : memref<?x2x2xf32>
// CHECK-NEXT:    %[[R:.*]] = mem.alloc(%[[D]]) {mem.result_slot = 0 : i64} : memref<?x2x2xf32>
// CHECK-NEXT:    mem.copy %[[V]], %[[R]] : memref<?x2x2xf32>, memref<?x2x2xf32>
// CHECK-NEXT:    mem.dealloc %[[T]] : memref<?x4xf32>
// CHECK-NEXT:    func.return %[[R]] : memref<?x2x2xf32>
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x2x2xf32> {
  %w = graph.param "w" : tensor<4xf32>
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %t = graph.call_kernel @k_dyn(%x, %w) dims(%n) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %v = graph.reshape %t dims(%n) : tensor<?x4xf32> -> tensor<?x2x2xf32>
  func.return %v : tensor<?x2x2xf32>
}

// A dynamic dim computed with arith on index at graph level.
// CHECK-LABEL: func.func @dynamic_shape_function
// CHECK-SAME:    (%[[X:.*]]: memref<?x4xf32>, %[[W:.*]]: memref<4xf32> {mem.param = "w"}) -> memref<?x4xf32> {
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[X]], 0
// CHECK-NEXT:    %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[M:.*]] = arith.divui %[[N]], %[[C2]] : index
// CHECK-NEXT:    %[[V:.*]] = mem.view %[[X]](%[[M]]) : memref<?x4xf32> -> memref<?x4xf32>
// CHECK-NEXT:    %[[R:.*]] = mem.alloc(%[[M]]) {mem.result_slot = 0 : i64} : memref<?x4xf32>
// CHECK-NEXT:    func.call @k_dyn(%[[V]], %[[W]], %[[R]])
// CHECK-NEXT:    func.return %[[R]]
func.func @dynamic_shape_function(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %w = graph.param "w" : tensor<4xf32>
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %c2 = arith.constant 2 : index
  %m = arith.divui %n, %c2 : index
  %h = graph.reshape %x dims(%m) : tensor<?x4xf32> -> tensor<?x4xf32>
  %r = graph.call_kernel @k_dyn(%h, %w) dims(%m) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  func.return %r : tensor<?x4xf32>
}

// graph.from_dims: an i64 buffer with one store per dim (returned: the result buffer itself);
// graph.extract: a load of the 0-d buffer.
// CHECK-LABEL: func.func @from_dims_and_extract
// CHECK-SAME:    (%[[X:.*]]: memref<?x4xf32>, %[[S:.*]]: memref<i64>) -> (memref<2xi64>, i64) {
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[X]], 0
// CHECK-NEXT:    %[[B:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<2xi64>
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[D0:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:    mem.store %[[D0]], %[[B]][%[[C0]]] : i64, memref<2xi64>
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[D1:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:    mem.store %[[D1]], %[[B]][%[[C1]]] : i64, memref<2xi64>
// CHECK-NEXT:    %[[E:.*]] = mem.load %[[S]][] : memref<i64> -> i64
// CHECK-NEXT:    func.return %[[B]], %[[E]] : memref<2xi64>, i64
func.func @from_dims_and_extract(%x: tensor<?x4xf32>, %s: tensor<i64>) -> (tensor<2xi64>, i64) {
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %d = graph.from_dims(%n, %n) : tensor<2xi64>
  %e = graph.extract %s : tensor<i64> -> i64
  func.return %d, %e : tensor<2xi64>, i64
}

// Kernels are left alone.
// CHECK-LABEL: func.func private @k_after(%{{.*}}: memref<4xf32>) attributes {loop.kernel} {
// CHECK-NEXT:    func.return
func.func private @k_after(%a: memref<4xf32>) attributes {loop.kernel} {
  func.return
}
