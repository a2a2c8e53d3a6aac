// RUN: mini-opt %s -p "graph-layout{block=4}" | filecheck %s
// RUN: mini-opt %s -p "graph-layout{block=4},graph-pack-weights{width=4},graph-lift-params" | filecheck %s --check-prefix=PACK

// A chain of convs, ReLU, a max pool, a residual add, a concat and a global average pool runs in
// the channel-blocked layout (N, C/4, H, W, 4): the input converts once at the start (a reshape and
// a transpose), the output once at the end; the final reshape reads the NCHW value back. (An input
// with fewer channels than a block needs no conversion: see @stem.)
// CHECK-LABEL: func.func @chain
// CHECK:         %[[R:.*]] = graph.reshape %x : tensor<1x8x8x8xf32> -> tensor<1x2x4x8x8xf32>
// CHECK-NEXT:    %[[XB:.*]] = graph.transpose %[[R]] perm [0, 1, 3, 4, 2] : tensor<1x2x4x8x8xf32> -> tensor<1x2x8x8x4xf32>
// CHECK-NEXT:    %[[C0:.*]] = graph.conv2d %[[XB]], %w0, %b0 pads [1, 1, 1, 1] block 4 : {{.*}} -> tensor<1x2x8x8x4xf32>
// CHECK-NEXT:    %[[A0:.*]] = graph.relu %[[C0]] : tensor<1x2x8x8x4xf32>
// CHECK-NEXT:    %[[P0:.*]] = graph.max_pool2d %[[A0]] kernel [2, 2] strides [2, 2] block 4 : tensor<1x2x8x8x4xf32> -> tensor<1x2x4x4x4xf32>
// CHECK-NEXT:    %[[C1:.*]] = graph.conv2d %[[P0]], %w1 pads [1, 1, 1, 1] block 4 : {{.*}} -> tensor<1x2x4x4x4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[C1]], %[[P0]] : tensor<1x2x4x4x4xf32>
// CHECK-NEXT:    %[[CAT:.*]] = graph.concat %[[S]], %[[P0]] axis 1 : {{.*}} -> tensor<1x4x4x4x4xf32>
// CHECK-NEXT:    %[[G:.*]] = graph.reduce_mean %[[CAT]] axes [2, 3] : tensor<1x4x4x4x4xf32> -> tensor<1x4x1x1x4xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[G]] perm [0, 1, 4, 2, 3] : tensor<1x4x1x1x4xf32> -> tensor<1x4x4x1x1xf32>
// CHECK-NEXT:    %[[N:.*]] = graph.reshape %[[T]] : tensor<1x4x4x1x1xf32> -> tensor<1x16x1x1xf32>
// CHECK-NEXT:    %{{.*}} = graph.reshape %[[N]] : tensor<1x16x1x1xf32> -> tensor<1x16xf32>
// CHECK-NOT:     graph.transpose
func.func @chain(%x: tensor<1x8x8x8xf32>) -> tensor<1x16xf32> {
  %w0 = graph.param "w0" : tensor<8x8x3x3xf32>
  %b0 = graph.param "b0" : tensor<8xf32>
  %w1 = graph.param "w1" : tensor<8x8x3x3xf32>
  %c0 = graph.conv2d %x, %w0, %b0 pads [1, 1, 1, 1] : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %a0 = graph.relu %c0 : tensor<1x8x8x8xf32>
  %p0 = graph.max_pool2d %a0 kernel [2, 2] strides [2, 2] : tensor<1x8x8x8xf32> -> tensor<1x8x4x4xf32>
  %c1 = graph.conv2d %p0, %w1 pads [1, 1, 1, 1] : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %s = graph.add %c1, %p0 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %cat = graph.concat %s, %p0 axis 1 : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x16x4x4xf32>
  %g = graph.global_avg_pool %cat : tensor<1x16x4x4xf32> -> tensor<1x16x1x1xf32>
  %f = graph.reshape %g : tensor<1x16x1x1xf32> -> tensor<1x16xf32>
  func.return %f : tensor<1x16xf32>
}

// A per-channel scale and shift after a conv (a batch norm left as Mul and Add) fold into its
// weight and bias before the conv is blocked; a per-channel Add after the ReLU becomes a blocked
// (1, C/4, 1, 1, 4) operand. The 6 output channels of the last conv are no multiple of 4: it stays
// NCHW and reads the chain's value back.
// CHECK-LABEL: func.func @fold_and_end
// CHECK:         graph.conv2d %{{.*}}, %{{.*}}, %{{.*}} pads [1, 1, 1, 1] block 4 :
// CHECK-NOT:     graph.mul %{{.*}}, %sc
// CHECK:         %[[A:.*]] = graph.relu %{{.*}} : tensor<1x2x5x5x4xf32>
// CHECK:         %[[SB:.*]] = graph.transpose %{{.*}} perm [0, 1, 3, 4, 2] : tensor<1x2x4x1x1xf32> -> tensor<1x2x1x1x4xf32>
// CHECK-NEXT:    %[[U:.*]] = graph.add %[[A]], %[[SB]] : (tensor<1x2x5x5x4xf32>, tensor<1x2x1x1x4xf32>) -> tensor<1x2x5x5x4xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.conv2d %[[U]], %w2 block 4
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[V]] perm [0, 1, 4, 2, 3]
// CHECK-NEXT:    %[[N:.*]] = graph.reshape %[[T]] : tensor<1x2x4x5x5xf32> -> tensor<1x8x5x5xf32>
// CHECK-NEXT:    graph.conv2d %[[N]], %w3 : (tensor<1x8x5x5xf32>, tensor<6x8x1x1xf32>) -> tensor<1x6x5x5xf32>
func.func @fold_and_end(%x: tensor<1x4x5x5xf32>) -> tensor<1x6x5x5xf32> {
  %w = graph.param "w" : tensor<8x4x3x3xf32>
  %b = graph.param "b" : tensor<8xf32>
  %sc = graph.param "scale" : tensor<8x1x1xf32>
  %sh = graph.param "shift" : tensor<8x1x1xf32>
  %t = graph.param "t" : tensor<8x1x1xf32>
  %w2 = graph.param "w2" : tensor<8x8x1x1xf32>
  %w3 = graph.param "w3" : tensor<6x8x1x1xf32>
  %c = graph.conv2d %x, %w, %b pads [1, 1, 1, 1] : (tensor<1x4x5x5xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x5x5xf32>
  %m = graph.mul %c, %sc : (tensor<1x8x5x5xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x5xf32>
  %d = graph.add %m, %sh : (tensor<1x8x5x5xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x5xf32>
  %r = graph.relu %d : tensor<1x8x5x5xf32>
  %u = graph.add %r, %t : (tensor<1x8x5x5xf32>, tensor<8x1x1xf32>) -> tensor<1x8x5x5xf32>
  %v = graph.conv2d %u, %w2 : (tensor<1x8x5x5xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x5x5xf32>
  %y = graph.conv2d %v, %w3 : (tensor<1x8x5x5xf32>, tensor<6x8x1x1xf32>) -> tensor<1x6x5x5xf32>
  func.return %y : tensor<1x6x5x5xf32>
}

// Not blocked: a grouped conv, a conv whose input channels are no multiple of the block, and a
// conv alone (nothing after it would join: two conversions for nothing). The chain of two convs
// ends at an elementwise op whose other operand neither is a chain value nor broadcasts per
// channel (a (4) tensor broadcasts along W).
// CHECK-LABEL: func.func @left_alone
// CHECK:         graph.conv2d %x, %wg group 2 :
// CHECK-NEXT:    graph.conv2d %{{.*}}, %w3 : (tensor<1x6x4x4xf32>
// CHECK-NEXT:    graph.reshape
// CHECK-NEXT:    graph.transpose
// CHECK-NEXT:    graph.conv2d %{{.*}}, %w4 block 4
// CHECK-NEXT:    graph.relu
// CHECK-NEXT:    graph.conv2d %{{.*}}, %w5 block 4
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %{{.*}} perm [0, 1, 4, 2, 3]
// CHECK-NEXT:    %[[N:.*]] = graph.reshape %[[T]]
// CHECK-NEXT:    %[[M:.*]] = graph.mul %[[N]], %row : (tensor<1x8x4x4xf32>, tensor<4xf32>)
// CHECK-NEXT:    graph.conv2d %[[M]], %w6 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    func.return
func.func @left_alone(%x: tensor<1x8x4x4xf32>, %row: tensor<4xf32>) -> tensor<1x8x4x4xf32> {
  %wg = graph.param "wg" : tensor<6x4x1x1xf32>
  %w3 = graph.param "w3" : tensor<8x6x1x1xf32>
  %w4 = graph.param "w4" : tensor<8x8x1x1xf32>
  %w5 = graph.param "w5" : tensor<8x8x1x1xf32>
  %w6 = graph.param "w6" : tensor<8x8x1x1xf32>
  %g = graph.conv2d %x, %wg group 2 : (tensor<1x8x4x4xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x4x4xf32>
  %c = graph.conv2d %g, %w3 : (tensor<1x6x4x4xf32>, tensor<8x6x1x1xf32>) -> tensor<1x8x4x4xf32>
  %d = graph.conv2d %c, %w4 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.relu %d : tensor<1x8x4x4xf32>
  %e = graph.conv2d %r, %w5 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %m = graph.mul %e, %row : (tensor<1x8x4x4xf32>, tensor<4xf32>) -> tensor<1x8x4x4xf32>
  %lone = graph.conv2d %m, %w6 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %lone : tensor<1x8x4x4xf32>
}

// graph-pack-weights packs a blocked conv's weight as any conv's (OIHW{T}o), never as a matmul.
// PACK-LABEL: func.func @chain(
// PACK:         graph.conv2d %{{.*}}, %{{.*}}, %b0 pads [1, 1, 1, 1] weight_tile 8 block 4
// PACK:         graph.conv2d %{{.*}}, %{{.*}} pads [1, 1, 1, 1] weight_tile 8 block 4
// PACK-LABEL: func.func @left_alone(
// PACK:         graph.conv2d %{{.*}}, %{{.*}} weight_tile 8 block 4
// PACK:         graph.conv2d %{{.*}}, %{{.*}} weight_tile 8 block 4

// A dynamic batch: the conversions' reshapes read it with graph.dim. A dynamic spatial size stays
// NCHW (the blocked tile wants it static).
// CHECK-LABEL: func.func @dynamic_batch
// CHECK:         %[[D:.*]] = graph.dim %x, 0 : tensor<?x4x6x6xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x dims(%[[D]]) : tensor<?x4x6x6xf32> -> tensor<?x1x4x6x6xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.transpose %[[R]] perm [0, 1, 3, 4, 2]
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %[[B]], %w pads [1, 1, 1, 1] block 4 : {{.*}} -> tensor<?x1x6x6x4xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.max_pool2d %[[C]] kernel [2, 2] strides [2, 2] block 4
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[P]] perm [0, 1, 4, 2, 3]
// CHECK-NEXT:    %[[E:.*]] = graph.dim %[[T]], 0
// CHECK-NEXT:    graph.reshape %[[T]] dims(%[[E]]) : tensor<?x1x4x3x3xf32> -> tensor<?x4x3x3xf32>
// CHECK-LABEL: func.func @dynamic_size
// CHECK-NOT:     block
func.func @dynamic_batch(%x: tensor<?x4x6x6xf32>) -> tensor<?x4x3x3xf32> {
  %w = graph.param "w" : tensor<4x4x3x3xf32>
  %c = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<?x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<?x4x6x6xf32>
  %p = graph.max_pool2d %c kernel [2, 2] strides [2, 2] : tensor<?x4x6x6xf32> -> tensor<?x4x3x3xf32>
  func.return %p : tensor<?x4x3x3xf32>
}

func.func @dynamic_size(%x: tensor<1x4x?x6xf32>) -> tensor<1x4x?x3xf32> {
  %w = graph.param "w" : tensor<4x4x3x3xf32>
  %c = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x4x?x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x?x6xf32>
  %p = graph.max_pool2d %c kernel [2, 2] strides [2, 2] : tensor<1x4x?x6xf32> -> tensor<1x4x?x3xf32>
  func.return %p : tensor<1x4x?x3xf32>
}

// A conv reading fewer channels than a block (an RGB image) reads them in NCHW and starts the chain.
// CHECK-LABEL: func.func @stem
// CHECK-NEXT:    %w = graph.param "w"
// CHECK-NEXT:    %[[C:.*]] = graph.conv2d %x, %w strides [2, 2] pads [1, 1, 1, 1] block 4 : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x2x4x4x4xf32>
// CHECK-NEXT:    graph.relu %[[C]]
// CHECK-NEXT:    graph.max_pool2d
func.func @stem(%x: tensor<1x3x8x8xf32>) -> tensor<1x8x2x2xf32> {
  %w = graph.param "w" : tensor<8x3x3x3xf32>
  %c = graph.conv2d %x, %w strides [2, 2] pads [1, 1, 1, 1] : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.relu %c : tensor<1x8x4x4xf32>
  %p = graph.max_pool2d %r kernel [2, 2] strides [2, 2] : tensor<1x8x4x4xf32> -> tensor<1x8x2x2xf32>
  func.return %p : tensor<1x8x2x2xf32>
}

// Only f32 convs and pools are blocked (the block is the vector width in f32 lanes).
// CHECK-LABEL: func.func @f64
// CHECK-NOT:     block
// CHECK:         func.return
func.func @f64(%x: tensor<1x4x6x6xf64>) -> tensor<1x4x3x3xf64> {
  %w = graph.param "w" : tensor<4x4x3x3xf64>
  %c = graph.conv2d %x, %w pads [1, 1, 1, 1] : (tensor<1x4x6x6xf64>, tensor<4x4x3x3xf64>) -> tensor<1x4x6x6xf64>
  %p = graph.max_pool2d %c kernel [2, 2] strides [2, 2] : tensor<1x4x6x6xf64> -> tensor<1x4x3x3xf64>
  func.return %p : tensor<1x4x3x3xf64>
}
