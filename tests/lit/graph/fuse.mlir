// RUN: mini-opt %s -p graph-fuse | filecheck %s

// conv2d absorbs the elementwise chain after it: one group (the bias add is elementwise in %c).
// CHECK-LABEL: func.func private @fused_conv2d_add_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32> attributes {graph.primitive}
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %[[X]], %[[W]]
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[C]], %[[B]]
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[A]]
// CHECK-NEXT:    func.return %[[R]] : tensor<1x4x6x6xf32>
// CHECK-LABEL: func.func @conv_add_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x8x8xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4x1x1xf32>)
// CHECK-NEXT:    %[[R:.*]] = func.call @fused_conv2d_add_relu(%[[X]], %[[W]], %[[B]])
// CHECK-NEXT:    func.return %[[R]]
func.func @conv_add_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %c = graph.conv2d %x, %w : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  %a = graph.add %c, %b : (tensor<1x4x6x6xf32>, tensor<4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %r = graph.relu %a : tensor<1x4x6x6xf32>
  func.return %r : tensor<1x4x6x6xf32>
}

// softmax is a reduction: it cannot absorb the matmul group (matmul + its bias add), and a
// reduction never fuses into its consumers, so softmax and the tanh after it stay alone.
// CHECK-LABEL: func.func private @fused_matmul_add
// CHECK-SAME:    (%[[X:.*]]: tensor<?x8xf32>, %[[W:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<16xf32>) -> tensor<?x16xf32> attributes {graph.primitive}
// CHECK-NEXT:    %[[M:.*]] = graph.matmul %[[X]], %[[W]]
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[M]], %[[B]]
// CHECK-NEXT:    func.return %[[A]]
// CHECK-LABEL: func.func @matmul_softmax
// CHECK-NEXT:    %[[A:.*]] = func.call @fused_matmul_add(
// CHECK-NEXT:    %[[S:.*]] = graph.softmax %[[A]] axis 1
// CHECK-NEXT:    %[[T:.*]] = graph.tanh %[[S]]
// CHECK-NEXT:    func.return %[[T]]
func.func @matmul_softmax(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<?x16xf32> {
  %m = graph.matmul %x, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %a = graph.add %m, %b : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %s = graph.softmax %a axis 1 : tensor<?x16xf32>
  %t = graph.tanh %s : tensor<?x16xf32>
  func.return %t : tensor<?x16xf32>
}

// A reduction absorbs its elementwise inputs: exp -> reduce_sum is one group.
// CHECK-LABEL: func.func private @fused_exp_reduce_sum
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    graph.reduce_sum
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @exp_reduce
// CHECK-NEXT:    func.call @fused_exp_reduce_sum(
func.func @exp_reduce(%x: tensor<4x5xf32>) -> tensor<4x1xf32> {
  %e = graph.exp %x : tensor<4x5xf32>
  %s = graph.reduce_sum %e axes [1] : tensor<4x5xf32> -> tensor<4x1xf32>
  func.return %s : tensor<4x1xf32>
}

// Diamond: %t feeds two branches that meet in the add; the add post-dominates %t, so the
// whole diamond is one group with a single result.
// CHECK-LABEL: func.func private @fused_relu_exp_tanh_add
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {graph.primitive}
// CHECK-NEXT:    %[[T:.*]] = graph.relu %[[X]]
// CHECK-NEXT:    %[[E:.*]] = graph.exp %[[T]]
// CHECK-NEXT:    %[[H:.*]] = graph.tanh %[[T]]
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[E]], %[[H]]
// CHECK-NEXT:    func.return %[[A]]
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %[[A:.*]] = func.call @fused_relu_exp_tanh_add(%{{.*}}) : (tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @diamond(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %t = graph.relu %x : tensor<?x4xf32>
  %e = graph.exp %t : tensor<?x4xf32>
  %h = graph.tanh %t : tensor<?x4xf32>
  %a = graph.add %e, %h : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %a : tensor<?x4xf32>
}

// %t is also returned: it has no post-dominator, so relu stays out; exp -> neg fuse.
// CHECK-LABEL: func.func private @fused_exp_neg
// CHECK-NEXT:    graph.exp
// CHECK-NEXT:    graph.neg
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @outside_consumer
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[T:.*]] = graph.relu %[[X]]
// CHECK-NEXT:    %[[N:.*]] = func.call @fused_exp_neg(%[[T]])
// CHECK-NEXT:    func.return %[[T]], %[[N]]
func.func @outside_consumer(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %t = graph.relu %x : tensor<4xf32>
  %e = graph.exp %t : tensor<4xf32>
  %n = graph.neg %e : tensor<4xf32>
  func.return %t, %n : tensor<4xf32>, tensor<4xf32>
}

// Injective ops fuse into their consumers (phase 1): transpose -> relu; a reshape with a dynamic
// dim takes its shape arithmetic along (graph.dim of an argument, recomputed inside).
// CHECK-LABEL: func.func private @fused_transpose_relu
// CHECK-NEXT:    graph.transpose
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @injective
// CHECK-NEXT:    func.call @fused_transpose_relu(
func.func @injective(%x: tensor<4x3xf32>) -> tensor<3x4xf32> {
  %t = graph.transpose %x perm [1, 0] : tensor<4x3xf32> -> tensor<3x4xf32>
  %r = graph.relu %t : tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}

// CHECK-LABEL: func.func private @fused_reshape_sigmoid
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>) -> tensor<?x2x2xf32> attributes {graph.primitive}
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %[[X]] dims(%[[N]])
// CHECK-NEXT:    %[[S:.*]] = graph.sigmoid %[[R]]
// CHECK-NEXT:    func.return %[[S]]
// CHECK-LABEL: func.func @dynamic_reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-NEXT:    %[[S:.*]] = func.call @fused_reshape_sigmoid(%[[X]])
// CHECK-NEXT:    func.return %[[S]]
func.func @dynamic_reshape(%x: tensor<?x4xf32>) -> tensor<?x2x2xf32> {
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %r = graph.reshape %x dims(%n) : tensor<?x4xf32> -> tensor<?x2x2xf32>
  %s = graph.sigmoid %r : tensor<?x2x2xf32>
  func.return %s : tensor<?x2x2xf32>
}

// An elementwise producer does not fuse into a matmul (only the chain after it does).
// CHECK-LABEL: func.func private @fused_matmul_relu
// CHECK-NEXT:    graph.matmul
// CHECK-NEXT:    graph.relu
// CHECK-LABEL: func.func @no_fuse_into_matmul
// CHECK-NEXT:    %[[E:.*]] = graph.exp
// CHECK-NEXT:    func.call @fused_matmul_relu(%[[E]], %{{.*}})
func.func @no_fuse_into_matmul(%x: tensor<2x3xf32>, %w: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %e = graph.exp %x : tensor<2x3xf32>
  %m = graph.matmul %e, %w : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  %r = graph.relu %m : tensor<2x5xf32>
  func.return %r : tensor<2x5xf32>
}

// Single ops are not outlined.
// CHECK-LABEL: func.func @single
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    func.return
func.func @single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = graph.relu %x : tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// Two matmuls into one add (a projection shortcut's two 1x1 convs as matmuls): the first one
// visited absorbs the add and the ReLU; the second stays a kernel of its own (the matmul rule
// tiles one matmul a kernel; two convs may share one, the conv rule tiles each).
// CHECK-LABEL: func.func private @fused_matmul_add_relu
// CHECK-NEXT:    %[[M:.*]] = graph.matmul
// CHECK-NEXT:    %[[A:.*]] = graph.add %[[M]],
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[A]]
// CHECK-NEXT:    func.return %[[R]]
// CHECK-LABEL: func.func @two_matmuls_into_one_add
// CHECK-NEXT:    %[[Q:.*]] = graph.matmul
// CHECK-NEXT:    %[[R:.*]] = func.call @fused_matmul_add_relu({{.*}}%[[Q]]
// CHECK-NEXT:    func.return %[[R]]
func.func @two_matmuls_into_one_add(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x12xf32>, %d: tensor<12x32xf32>) -> tensor<8x32xf32> {
  %p = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %q = graph.matmul %c, %d : (tensor<8x12xf32>, tensor<12x32xf32>) -> tensor<8x32xf32>
  %s = graph.add %p, %q : tensor<8x32xf32>
  %r = graph.relu %s : tensor<8x32xf32>
  func.return %r : tensor<8x32xf32>
}
