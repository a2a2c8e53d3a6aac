// RUN: mini-opt %s -p graph-infer-dims | filecheck %s
// RUN: mini-opt %s -p graph-infer-dims | mini-opt | filecheck %s
// RUN: mini-opt %s -p graph-infer-dims --print-op-generic | mini-opt | filecheck %s
// RUN: mini-opt %s -p graph-infer-dims | mini-opt -p graph-infer-dims | filecheck %s

// A conv output size is the floor-division the shape function computes, over the symbol `h`.
// CHECK-LABEL: func.func @conv
// CHECK:         graph.conv2d %{{.*}}, %{{.*}} strides [2, 2] {graph.dims = ["batch", "(h-3)/2+1"]}
func.func @conv(%x: tensor<?x3x?x16xf32> {graph.dim_names = ["batch", "", "h", ""]}, %w: tensor<8x3x3x3xf32>) -> tensor<?x8x?x7xf32> {
  %y = graph.conv2d %x, %w strides [2, 2] : (tensor<?x3x?x16xf32>, tensor<8x3x3x3xf32>) -> tensor<?x8x?x7xf32>
  func.return %y : tensor<?x8x?x7xf32>
}

// Broadcasting batch with batch is batch; an unnamed dim is `<arg>.dim<i>`; two different
// dynamic dims broadcast to their max, and the function records that they must be equal or 1.
// CHECK-LABEL: func.func @bcast
// CHECK-SAME:    attributes {graph.dim_checks = [{kind = "bcast", lhs = "seq", rhs = "z.dim1", op = "graph.mul", loc = ""}]}
// CHECK:         graph.add %{{.*}}, %{{.*}} {graph.dims = ["batch", "seq"]}
// CHECK:         graph.mul %{{.*}}, %{{.*}} {graph.dims = ["batch", "max(seq, z.dim1)"]}
func.func @bcast(%x: tensor<?x?xf32> {graph.dim_names = ["batch", "seq"]}, %y: tensor<?x?xf32> {graph.dim_names = ["batch", "seq"]}, %z: tensor<?x?xf32> {graph.dim_names = ["batch", ""]}) -> tensor<?x?xf32> {
  %a = graph.add %x, %y : tensor<?x?xf32>
  %b = graph.mul %a, %z : tensor<?x?xf32>
  func.return %b : tensor<?x?xf32>
}

// A Reshape's -1, (batch*seq*512)/(8*64), is batch*seq; x*1 is x; the element count is the same
// expression on both sides, so there is nothing to check.
// CHECK-LABEL: func.func @reshape
// CHECK-NOT:     graph.dim_checks
// CHECK:         graph.reshape %{{.*}} dims(%{{.*}}) {graph.dims = ["batch*seq"]}
// CHECK:         graph.relu %{{.*}} {graph.dims = ["batch*seq"]}
func.func @reshape(%x: tensor<?x?x512xf32> {graph.dim_names = ["batch", "seq", ""]}) -> tensor<?x8x64xf32> {
  %one = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %c8x64 = arith.constant 512 : index
  %b = graph.dim %x, 0 : tensor<?x?x512xf32>
  %s = graph.dim %x, 1 : tensor<?x?x512xf32>
  %b1 = arith.muli %b, %one : index
  %bs = arith.muli %b1, %s : index
  %n = arith.muli %bs, %c512 : index
  %m = arith.floordivsi %n, %c8x64 : index
  %y = graph.reshape %x dims(%m) : tensor<?x?x512xf32> -> tensor<?x8x64xf32>
  %r = graph.relu %y : tensor<?x8x64xf32>
  func.return %r : tensor<?x8x64xf32>
}

// A reshape whose -1 does not divide exactly: the element count must match at run time.
// CHECK-LABEL: func.func @inexact_reshape
// CHECK-SAME:    attributes {graph.dim_checks = [{kind = "eq", lhs = "6*n", rhs = "4*((6*n)/4)", op = "graph.reshape", loc = ""}]}
// CHECK:         graph.reshape %{{.*}} dims(%{{.*}}) {graph.dims = ["(6*n)/4"]}
func.func @inexact_reshape(%x: tensor<?x6xf32> {graph.dim_names = ["n", ""]}) -> tensor<?x4xf32> {
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %d = graph.dim %x, 0 : tensor<?x6xf32>
  %t = arith.muli %d, %c6 : index
  %q = arith.floordivsi %t, %c4 : index
  %y = graph.reshape %x dims(%q) : tensor<?x6xf32> -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// Static IR is untouched; `?`-only IR without names still works (fresh names).
// CHECK-LABEL: func.func @static
// CHECK-NEXT:    graph.relu %{{.*}} : tensor<4xf32>
func.func @static(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @unnamed
// CHECK:         graph.relu %{{.*}} {graph.dims = ["x.dim0"]} : tensor<?xf32>
func.func @unnamed(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = graph.relu %x : tensor<?xf32>
  func.return %y : tensor<?xf32>
}
