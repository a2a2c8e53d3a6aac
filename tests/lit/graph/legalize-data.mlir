// RUN: mini-opt %s --split-input-file -p graph-legalize | filecheck %s

// CHECK-LABEL: func.func private @transpose_0
// CHECK-SAME:    (%[[X:.*]]: memref<2x3xf32>, %[[Y:.*]]: memref<3x2xf32>)
// CHECK:         loop.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      loop.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:        loop.block "transpose" (%[[VI:.*]] = %[[I]], %[[VJ:.*]] = %[[J]]) [spatial, spatial] {
// CHECK-NEXT:          %[[V:.*]] = mem.load %[[X]][%[[VJ]], %[[VI]]]
// CHECK-NEXT:          mem.store %[[V]], %[[Y]][%[[VI]], %[[VJ]]]
func.func @transpose(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = graph.transpose %x perm [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

// One nest per input; the second writes at the affine offset 3 along the axis; the result's
// dynamic extent is 3 + dim(b, 1) at the graph level.

// CHECK-LABEL: func.func @concat
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x?xf32>)
// CHECK-NEXT:    %[[M:.*]] = graph.dim %[[B]], 1
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[N:.*]] = arith.addi %[[C3]], %[[M]] : index
// CHECK-NEXT:    graph.call_kernel @concat_0(%[[A]], %[[B]]) dims(%[[N]])
// CHECK-LABEL: func.func private @concat_0
// CHECK-SAME:    (%[[KA:.*]]: memref<2x3xf32>, %[[KB:.*]]: memref<2x?xf32>, %[[KY:.*]]: memref<2x?xf32>)
// CHECK:         %[[K3:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[KM:.*]] = mem.dim %[[KB]], 1
// CHECK:         loop.block "concat_0" (%[[I0:.*]] = %{{.*}}, %[[J0:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[V0:.*]] = mem.load %[[KA]][%[[I0]], %[[J0]]]
// CHECK-NEXT:      mem.store %[[V0]], %[[KY]][%[[I0]], %[[J0]]]
// CHECK:         loop.for %{{.*}} = %{{.*}} to %[[KM]] step
// CHECK-NEXT:      loop.block "concat_1" (%[[I1:.*]] = %{{.*}}, %[[J1:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:        %[[OFF:.*]] = arith.addi %[[J1]], %[[K3]] : index
// CHECK-NEXT:        %[[V1:.*]] = mem.load %[[KB]][%[[I1]], %[[J1]]]
// CHECK-NEXT:        mem.store %[[V1]], %[[KY]][%[[I1]], %[[OFF]]]
// CHECK-NOT:     arith.addi
// CHECK:         func.return
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = graph.concat %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  func.return %0 : tensor<2x?xf32>
}

// -----

// Dim 0 is dynamic: the raw start -3 is normalized once at the kernel entry (max(n - 3, 0), a
// symbol) and the end INT64_MAX means "to the end"; dim 1 walks backwards: 4 - 2*j.

// CHECK-LABEL: func.func @slice
// CHECK-SAME:    (%[[X:.*]]: tensor<?x5xf32>)
// CHECK-NEXT:    %[[N:.*]] = graph.dim %[[X]], 0
// CHECK-NEXT:    %[[CM3:.*]] = arith.constant -3 : index
// CHECK-NEXT:    %[[T:.*]] = arith.addi %[[N]], %[[CM3]] : index
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[S:.*]] = arith.maxsi %[[T]], %[[C0]] : index
// CHECK-NEXT:    %[[BIG:.*]] = arith.constant 9223372036854775807 : index
// CHECK-NEXT:    %[[E:.*]] = arith.minsi %[[BIG]], %[[N]] : index
// CHECK-NEXT:    %[[SPAN:.*]] = arith.subi %[[E]], %[[S]] : index
// CHECK-NEXT:    %[[C0B:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[LEN:.*]] = arith.maxsi %[[SPAN]], %[[C0B]] : index
// CHECK-NEXT:    graph.call_kernel @slice_0(%[[X]]) dims(%[[LEN]])
// CHECK-LABEL: func.func private @slice_0
// CHECK-SAME:    (%[[KX:.*]]: memref<?x5xf32>, %[[KY:.*]]: memref<?x2xf32>)
// CHECK-NEXT:    %[[KN:.*]] = mem.dim %[[KX]], 0
// CHECK:         %[[CM2:.*]] = arith.constant -2 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[KT:.*]] = arith.addi %[[KN]], %{{.*}} : index
// CHECK-NEXT:    %[[KS:.*]] = arith.maxsi %[[KT]], %{{.*}} : index
// CHECK:         loop.block "slice" (%[[VI:.*]] = %{{.*}}, %[[VJ:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[J2:.*]] = arith.muli %[[VJ]], %[[CM2]] : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.addi %[[VI]], %[[KS]] : index
// CHECK-NEXT:      %[[COL:.*]] = arith.addi %[[J2]], %[[C4]] : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[KX]][%[[ROW]], %[[COL]]]
// CHECK-NEXT:      mem.store %[[V]], %[[KY]][%[[VI]], %[[VJ]]]
func.func @slice(%x: tensor<?x5xf32>) -> tensor<?x2xf32> {
  %0 = graph.slice %x starts [-3, 4] ends [9223372036854775807, 0] steps [1, -2] : tensor<?x5xf32> -> tensor<?x2xf32>
  func.return %0 : tensor<?x2xf32>
}

// -----

// One kernel, one output buffer per piece; the dynamic piece gets dim(x, 1) - 1.

// CHECK-LABEL: func.func @split
// CHECK-SAME:    (%[[X:.*]]: tensor<4x?xf32>)
// CHECK-NEXT:    %[[D:.*]] = graph.dim %[[X]], 1
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[REST:.*]] = arith.subi %[[D]], %[[C1]] : index
// CHECK-NEXT:    %{{.*}}, %{{.*}} = graph.call_kernel @split_0(%[[X]]) dims(%[[REST]]) : (tensor<4x?xf32>) -> (tensor<4x1xf32>, tensor<4x?xf32>)
// CHECK-LABEL: func.func private @split_0
// CHECK-SAME:    (%[[KX:.*]]: memref<4x?xf32>, %[[Y0:.*]]: memref<4x1xf32>, %[[Y1:.*]]: memref<4x?xf32>)
// CHECK:         loop.block "split_0" (%[[I0:.*]] = %{{.*}}, %[[J0:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[V0:.*]] = mem.load %[[KX]][%[[I0]], %[[J0]]]
// CHECK-NEXT:      mem.store %[[V0]], %[[Y0]][%[[I0]], %[[J0]]]
// CHECK:         loop.block "split_1" (%[[I1:.*]] = %{{.*}}, %[[J1:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[OFF:.*]] = arith.addi %[[J1]], %{{.*}} : index
// CHECK-NEXT:      %[[V1:.*]] = mem.load %[[KX]][%[[I1]], %[[OFF]]]
// CHECK-NEXT:      mem.store %[[V1]], %[[Y1]][%[[I1]], %[[J1]]]
func.func @split(%x: tensor<4x?xf32>) -> (tensor<4x1xf32>, tensor<4x?xf32>) {
  %0, %1 = graph.split %x axis 1 sizes [1, -1] : tensor<4x?xf32> -> tensor<4x1xf32>, tensor<4x?xf32>
  func.return %0, %1 : tensor<4x1xf32>, tensor<4x?xf32>
}

// -----

// The index is loaded, widened to index, wrapped (idx < 0 -> idx + 5) and clamped to [0, 4].

// CHECK-LABEL: func.func private @gather_0
// CHECK-SAME:    (%[[X:.*]]: memref<5x3xf32>, %[[IDX:.*]]: memref<2xi32>, %[[Y:.*]]: memref<2x3xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C5:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK:         loop.block "gather" (%[[VI:.*]] = %{{.*}}, %[[VJ:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[RAW:.*]] = mem.load %[[IDX]][%[[VI]]] : memref<2xi32> -> i32
// CHECK-NEXT:      %[[K:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[K]], %[[C0]] : index
// CHECK-NEXT:      %[[KW:.*]] = arith.addi %[[K]], %[[C5]] : index
// CHECK-NEXT:      %[[KS:.*]] = arith.select %[[NEG]], %[[KW]], %[[K]] : index
// CHECK-NEXT:      %[[KL:.*]] = arith.maxsi %[[KS]], %[[C0]] : index
// CHECK-NEXT:      %[[KC:.*]] = arith.minsi %[[KL]], %[[C4]] : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[X]][%[[KC]], %[[VJ]]]
// CHECK-NEXT:      mem.store %[[V]], %[[Y]][%[[VI]], %[[VJ]]]
func.func @gather(%x: tensor<5x3xf32>, %i: tensor<2xi32>) -> tensor<2x3xf32> {
  %0 = graph.gather %x, %i axis 0 : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

// Constant pad: fill everything, then copy the input to the interior at offsets (1, 2).

// CHECK-LABEL: func.func private @pad_0
// CHECK-SAME:    (%[[X:.*]]: memref<2x3xf32>, %[[Y:.*]]: memref<3x5xf32>)
// CHECK:         loop.block "pad_fill" (%[[FI:.*]] = %{{.*}}, %[[FJ:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[VAL:.*]] = arith.constant 1.500000e+00 : f32
// CHECK-NEXT:      mem.store %[[VAL]], %[[Y]][%[[FI]], %[[FJ]]]
// CHECK:         loop.block "pad" (%[[I:.*]] = %{{.*}}, %[[J:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[OI:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK-NEXT:      %[[OJ:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[X]][%[[I]], %[[J]]]
// CHECK-NEXT:      mem.store %[[V]], %[[Y]][%[[OI]], %[[OJ]]]
func.func @pad_constant(%x: tensor<2x3xf32>) -> tensor<3x5xf32> {
  %0 = graph.pad %x pads [1, 2, 0, 0] value 1.5 : tensor<2x3xf32> -> tensor<3x5xf32>
  func.return %0 : tensor<3x5xf32>
}

// -----

// Reflect: j = i - 2; r = j < 0 ? -j : j; src = r > 3 ? 6 - r : r.

// CHECK-LABEL: func.func private @pad_0
// CHECK-SAME:    (%[[X:.*]]: memref<4xf32>, %[[Y:.*]]: memref<7xf32>)
// CHECK:         loop.block "pad" (%[[I:.*]] = %{{.*}}) [spatial] {
// CHECK-NEXT:      %[[J:.*]] = arith.subi %[[I]], %{{.*}} : index
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[J]], %{{.*}} : index
// CHECK-NEXT:      %[[MJ:.*]] = arith.subi %{{.*}}, %[[J]] : index
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[NEG]], %[[MJ]], %[[J]] : index
// CHECK-NEXT:      %[[MR:.*]] = arith.subi %{{.*}}, %[[R]] : index
// CHECK-NEXT:      %[[OVER:.*]] = arith.cmpi sgt, %[[R]], %{{.*}} : index
// CHECK-NEXT:      %[[SRC:.*]] = arith.select %[[OVER]], %[[MR]], %[[R]] : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[X]][%[[SRC]]]
// CHECK-NEXT:      mem.store %[[V]], %[[Y]][%[[I]]]
func.func @pad_reflect(%x: tensor<4xf32>) -> tensor<7xf32> {
  %0 = graph.pad %x pads [2, 1] mode "reflect" : tensor<4xf32> -> tensor<7xf32>
  func.return %0 : tensor<7xf32>
}

// -----

// Edge: the source index is clamped to [0, 3].

// CHECK-LABEL: func.func private @pad_0
// CHECK:         loop.block "pad" (%[[I:.*]] = %{{.*}}) [spatial] {
// CHECK-NEXT:      %[[J:.*]] = arith.subi %[[I]], %{{.*}} : index
// CHECK-NEXT:      %[[LO:.*]] = arith.maxsi %[[J]], %{{.*}} : index
// CHECK-NEXT:      %[[SRC:.*]] = arith.minsi %[[LO]], %{{.*}} : index
// CHECK-NEXT:      mem.load %{{.*}}[%[[SRC]]]
func.func @pad_edge(%x: tensor<4xf32>) -> tensor<6xf32> {
  %0 = graph.pad %x pads [1, 1] mode "edge" : tensor<4xf32> -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}

// -----

// The result dims come from the op's dims operands; a `?` input dim that may be 1 at run time
// reads min(i, dim - 1); the static 1 reads index 0.

// CHECK-LABEL: func.func @broadcast_to
// CHECK-SAME:    (%[[X:.*]]: tensor<?x1xf32>, %[[M:.*]]: index)
// CHECK-NEXT:    graph.call_kernel @broadcast_to_0(%[[X]]) dims(%[[M]])
// CHECK-LABEL: func.func private @broadcast_to_0
// CHECK-SAME:    (%[[KX:.*]]: memref<?x1xf32>, %[[KY:.*]]: memref<?x4xf32>)
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[KX]], 0
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[LAST:.*]] = arith.subi %[[N]], %[[C1]] : index
// CHECK:         loop.block "broadcast_to" (%[[I:.*]] = %{{.*}}, %[[J:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[R:.*]] = arith.minsi %[[I]], %[[LAST]] : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[KX]][%[[R]], %[[C0]]]
// CHECK-NEXT:      mem.store %[[V]], %[[KY]][%[[I]], %[[J]]]
func.func @broadcast_to(%x: tensor<?x1xf32>, %m: index) -> tensor<?x4xf32> {
  %0 = graph.broadcast_to %x dims(%m) : tensor<?x1xf32> -> tensor<?x4xf32>
  func.return %0 : tensor<?x4xf32>
}

// -----

// Tile: (r, i, j) with the output row r*2 + i (affine); dims with repeat 1 get no r variable.

// CHECK-LABEL: func.func private @tile_0
// CHECK-SAME:    (%[[X:.*]]: memref<2x3xf32>, %[[Y:.*]]: memref<4x3xf32>)
// CHECK:         %[[C2:.*]] = arith.constant 2 : index
// CHECK:         loop.block "tile" (%[[R:.*]] = %{{.*}}, %[[I:.*]] = %{{.*}}, %[[J:.*]] = %{{.*}}) [spatial, spatial, spatial] {
// CHECK-NEXT:      %[[T:.*]] = arith.muli %[[R]], %[[C2]] : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.addi %[[T]], %[[I]] : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[X]][%[[I]], %[[J]]]
// CHECK-NEXT:      mem.store %[[V]], %[[Y]][%[[ROW]], %[[J]]]
func.func @tile(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = graph.tile %x repeats [2, 1] : tensor<2x3xf32> -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

// Lower triangle with k = 1: keep where j - i <= 1.

// CHECK-LABEL: func.func private @trilu_0
// CHECK-SAME:    (%[[X:.*]]: memref<3x3xf32>, %[[Y:.*]]: memref<3x3xf32>)
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK:         loop.block "trilu" (%[[I:.*]] = %{{.*}}, %[[J:.*]] = %{{.*}}) [spatial, spatial] {
// CHECK-NEXT:      %[[D:.*]] = arith.subi %[[J]], %[[I]] : index
// CHECK-NEXT:      %[[KEEP:.*]] = arith.cmpi sle, %[[D]], %[[C1]] : index
// CHECK-NEXT:      %[[V:.*]] = mem.load %[[X]][%[[I]], %[[J]]]
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[S:.*]] = arith.select %[[KEEP]], %[[V]], %[[Z]] : f32
// CHECK-NEXT:      mem.store %[[S]], %[[Y]][%[[I]], %[[J]]]
func.func @trilu(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = graph.trilu %x k 1 {upper = false} : tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}

// -----

// The length max(ceildiv(limit - start, delta), 0) is computed at the graph level from
// graph.extract of the 0-d operands; the kernel writes start + i * delta.

// CHECK-LABEL: func.func @range
// CHECK-SAME:    (%[[S:.*]]: tensor<i64>, %[[L:.*]]: tensor<i64>, %[[D:.*]]: tensor<i64>)
// CHECK-NEXT:    %[[SV:.*]] = graph.extract %[[S]] : tensor<i64> -> i64
// CHECK-NEXT:    %[[LV:.*]] = graph.extract %[[L]] : tensor<i64> -> i64
// CHECK-NEXT:    %[[DV:.*]] = graph.extract %[[D]] : tensor<i64> -> i64
// CHECK-NEXT:    %[[SPAN:.*]] = arith.subi %[[LV]], %[[SV]] : i64
// CHECK-NEXT:    %[[Q:.*]] = arith.ceildivsi %[[SPAN]], %[[DV]] : i64
// CHECK-NEXT:    %[[QI:.*]] = arith.index_cast %[[Q]] : i64 to index
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[N:.*]] = arith.maxsi %[[QI]], %[[C0]] : index
// CHECK-NEXT:    graph.call_kernel @range_0(%[[S]], %[[L]], %[[D]]) dims(%[[N]])
// CHECK-LABEL: func.func private @range_0
// CHECK-SAME:    (%[[KS:.*]]: memref<i64>, %{{.*}}: memref<i64>, %[[KD:.*]]: memref<i64>, %[[Y:.*]]: memref<?xi64>)
// CHECK:         loop.block "range" (%[[I:.*]] = %{{.*}}) [spatial] {
// CHECK-NEXT:      %[[A:.*]] = mem.load %[[KS]][] : memref<i64> -> i64
// CHECK-NEXT:      %[[B:.*]] = mem.load %[[KD]][] : memref<i64> -> i64
// CHECK-NEXT:      %[[II:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT:      %[[P:.*]] = arith.muli %[[II]], %[[B]] : i64
// CHECK-NEXT:      %[[V:.*]] = arith.addi %[[A]], %[[P]] : i64
// CHECK-NEXT:      mem.store %[[V]], %[[Y]][%[[I]]]
func.func @range(%s: tensor<i64>, %l: tensor<i64>, %d: tensor<i64>) -> tensor<?xi64> {
  %0 = graph.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  func.return %0 : tensor<?xi64>
}

// -----

// A loop-free block stores each extent (mem.dim, or a constant for static dims).

// CHECK-LABEL: func.func private @shape_0
// CHECK-SAME:    (%[[X:.*]]: memref<?x4xf32>, %[[Y:.*]]: memref<2xi64>)
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[X]], 0
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    loop.block "shape" () [] {
// CHECK-NEXT:      %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:      mem.store %[[NI]], %[[Y]][%[[C0]]]
// CHECK-NEXT:      %[[C4:.*]] = arith.constant 4 : i64
// CHECK-NEXT:      mem.store %[[C4]], %[[Y]][%[[C1]]]
// CHECK-NEXT:    }
func.func @shape(%x: tensor<?x4xf32>) -> tensor<2xi64> {
  %0 = graph.shape %x : tensor<?x4xf32> -> tensor<2xi64>
  func.return %0 : tensor<2xi64>
}

// -----

// graph.from_dims stays at the graph level (graph-bufferize stores its operands); no kernel.

// CHECK-LABEL: func.func @from_dims
// CHECK-NEXT:    %[[N:.*]] = graph.dim
// CHECK-NEXT:    %[[R:.*]] = graph.from_dims(%[[N]], %[[N]]) : tensor<2xi64>
// CHECK-NEXT:    func.return %[[R]]
// CHECK-NOT:     loop.kernel
func.func @from_dims(%x: tensor<?x4xf32>) -> tensor<2xi64> {
  %n = graph.dim %x, 0 : tensor<?x4xf32>
  %0 = graph.from_dims(%n, %n) : tensor<2xi64>
  func.return %0 : tensor<2xi64>
}
