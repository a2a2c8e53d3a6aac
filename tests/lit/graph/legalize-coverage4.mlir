// RUN: mini-opt %s --split-input-file -p graph-legalize | filecheck %s

// graph.nms_select: keep and the per-(b, c) count start at 0; one nest over (b, c, r, q) carries
// the flag of candidate r through q (cleared by a kept q that suppresses r), stored at q = N-1.

// CHECK-LABEL: func.func private @nms_select_0
// CHECK-SAME:    (%[[S:.*]]: memref<?x6x6xi1>, %[[O:.*]]: memref<?x2x6xi64>, %[[V:.*]]: memref<?x2x6xi1>, %[[M:.*]]: memref<i64>, %[[K:.*]]: memref<?x2x6xi1>)
// CHECK:         %[[FLAG:.*]] = mem.alloc(%{{.*}}) : memref<?x2xi1>
// CHECK:         %[[CNT:.*]] = mem.alloc(%{{.*}}) : memref<?x2xi64>
// CHECK:         loop.block "nms_init"
// CHECK:         loop.block "nms_count_init"
// CHECK:         loop.block "nms_select" (%[[B:.*]] = %{{.*}}, %[[C:.*]] = %{{.*}}, %[[R:.*]] = %{{.*}}, %[[Q:.*]] = %{{.*}}) [spatial, spatial, spatial, spatial] {
// CHECK:           %[[BR:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:           %[[BQ:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:           mem.load %[[S]][%[[B]], %[[BQ]], %[[BR]]] : memref<?x6x6xi1> -> i1
// CHECK:           mem.store %{{.*}}, %[[FLAG]][%[[B]], %[[C]]]
// CHECK:           mem.store %{{.*}}, %[[K]][%[[B]], %[[C]], %[[R]]]
// CHECK:           mem.store %{{.*}}, %[[CNT]][%[[B]], %[[C]]]
// CHECK:         mem.dealloc %[[FLAG]]
func.func @nms(%s: tensor<?x6x6xi1>, %o: tensor<?x2x6xi64>, %v: tensor<?x2x6xi1>, %m: tensor<i64>) -> tensor<?x2x6xi1> {
  %0 = graph.nms_select %s, %o, %v, %m : (tensor<?x6x6xi1>, tensor<?x2x6xi64>, tensor<?x2x6xi1>, tensor<i64>) -> tensor<?x2x6xi1>
  func.return %0 : tensor<?x2x6xi1>
}

// -----

// CHECK-LABEL: func.func private @bitcast_0
// CHECK:         loop.block "bitcast"
// CHECK:           %[[V:.*]] = mem.load
// CHECK-NEXT:      %[[B:.*]] = arith.bitcast %[[V]] : f32 to i32
// CHECK-NEXT:      mem.store %[[B]]
func.func @bitcast(%x: tensor<?x3xf32>) -> tensor<?x3xi32> {
  %0 = graph.bitcast %x : tensor<?x3xf32> -> tensor<?x3xi32>
  func.return %0 : tensor<?x3xi32>
}
