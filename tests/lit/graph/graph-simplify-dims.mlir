// RUN: mini-opt %s -p graph-simplify-dims | filecheck %s

func.func private @k(%a: memref<?x4xf32>, %b: memref<?x4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k2(%a: memref<?x4xf32>, %b: memref<?x4xf32>, %c: memref<?x4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @kr(%a: memref<?x4xf32>, %b: memref<?x2xf32>) attributes {loop.kernel} {
  func.return
}

// Every dim is `batch` (the max of batch with itself, the dim of a result made with batch): one
// graph.dim at entry serves every call, the old shape arithmetic is gone.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[B:.*]] = graph.dim %{{.*}}, 0 : tensor<?x4xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.call_kernel @k(%{{.*}}) dims(%[[B]])
// CHECK-NEXT:    %[[C:.*]] = graph.call_kernel @k2(%[[A]], %{{.*}}) dims(%[[B]])
// CHECK-NEXT:    %{{.*}} = graph.call_kernel @k(%[[C]]) dims(%[[B]])
// CHECK-NEXT:    func.return
func.func @chain(%x: tensor<?x4xf32> {graph.dim_names = ["batch", ""]}) -> tensor<?x4xf32> {
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %a = graph.call_kernel @k(%x) dims(%n) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %m = graph.dim %a, 0 : tensor<?x4xf32>
  %n2 = graph.dim %x, 0 : tensor<?x4xf32>
  %mx = arith.maxsi %m, %n2 : index
  %c = graph.call_kernel @k2(%a, %x) dims(%mx) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %p = graph.dim %c, 0 : tensor<?x4xf32>
  %one = arith.constant 1 : index
  %p1 = arith.muli %p, %one : index
  %d = graph.call_kernel @k(%c) dims(%p1) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %d : tensor<?x4xf32>
}

// A compound expression is built once at entry (2*batch), from the symbol's graph.dim.
// CHECK-LABEL: func.func @twice
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[B:.*]] = graph.dim %{{.*}}, 0 : tensor<?x4xf32>
// CHECK-NEXT:    %[[B2:.*]] = arith.muli %[[TWO]], %[[B]] : index
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %{{.*}} dims(%[[B2]])
// CHECK-NEXT:    graph.call_kernel @kr(%{{.*}}) dims(%[[B2]])
// CHECK-NEXT:    func.return
func.func @twice(%x: tensor<?x4xf32> {graph.dim_names = ["batch", ""]}) -> tensor<?x2xf32> {
  %c2 = arith.constant 2 : index
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %n2 = arith.muli %n, %c2 : index
  %y = graph.reshape %x dims(%n2) : tensor<?x4xf32> -> tensor<?x2xf32>
  %m = graph.dim %y, 0 : tensor<?x2xf32>
  %r = graph.call_kernel @kr(%x) dims(%m) : (tensor<?x4xf32>) -> tensor<?x2xf32>
  func.return %r : tensor<?x2xf32>
}

// A dim read from data (graph.extract) keeps its own computation.
// CHECK-LABEL: func.func @data_dependent
// CHECK:         %[[E:.*]] = graph.extract
// CHECK-NEXT:    %[[I:.*]] = arith.index_cast %[[E]]
// CHECK-NEXT:    graph.call_kernel @k(%{{.*}}) dims(%[[I]])
func.func @data_dependent(%x: tensor<?x4xf32>, %s: tensor<i64>) -> tensor<?x4xf32> {
  %e = graph.extract %s : tensor<i64> -> i64
  %i = arith.index_cast %e : i64 to index
  %y = graph.call_kernel @k(%x) dims(%i) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
