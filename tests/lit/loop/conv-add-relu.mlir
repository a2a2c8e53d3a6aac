// RUN: mini-opt %S/Inputs/conv-add-relu.mlir -p 'loop-split{block=conv2d loop=2 factors=16},loop-split{block=conv2d loop=4 factors=16},loop-reorder{block=conv2d order=4,3},loop-reverse-compute-at{block=add target=conv2d loop=3},loop-reverse-compute-at{block=relu target=conv2d loop=3}' | filecheck %s

// conv2d -> add -> relu in one kernel (two local buffers): the conv is tiled 16x16 over its
// output (dynamic extents: guarded tiles), add and relu are computed at each conv tile.

// CHECK-LABEL: func.func @conv_add_relu
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[H:.*]] = mem.dim %{{.*}}, 2 : memref<?x?x?x?xf32>
// CHECK-DAG:     %[[W:.*]] = mem.dim %{{.*}}, 3 : memref<?x?x?x?xf32>
// CHECK:         %[[CONV:.*]] = mem.alloca
// CHECK-NEXT:    %[[SUM:.*]] = mem.alloca
// CHECK-NEXT:    %[[NH:.*]] = arith.ceildivsi %[[H]], %[[C16]] : index
// CHECK-NEXT:    %[[NW:.*]] = arith.ceildivsi %[[W]], %[[C16]] : index
// CHECK:         loop.for %[[N:.*]] = {{.*}} {
// CHECK-NEXT:      loop.for %[[O:.*]] = {{.*}} {
// CHECK-NEXT:        loop.for %[[HO:.*]] = %{{.*}} to %[[NH]] step %{{.*}} {
// CHECK:               loop.for %[[WO:.*]] = %{{.*}} to %[[NW]] step %{{.*}} {
// CHECK-NEXT:            loop.for %[[HI:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:                   %[[GW:.*]] = arith.minsi %[[C16]], %{{.*}} : index
// CHECK-NEXT:              loop.for %[[WI:.*]] = %{{.*}} to %[[GW]] step %{{.*}} {
// CHECK:                     loop.block "conv2d"
// CHECK:                       mem.store %{{.*}}, %[[CONV]]
// CHECK:                   } init {
// The add tile: rows ho*16 + [0, min(16, H - ho*16)), columns likewise, under the conv tile.
// CHECK:                 %[[T:.*]] = arith.muli %[[HO]], %[[C16]] : index
// CHECK-NEXT:            %[[R:.*]] = arith.subi %[[H]], %[[T]] : index
// CHECK-NEXT:            %[[EH:.*]] = arith.minsi %[[C16]], %[[R]] : index
// CHECK-NEXT:            loop.for %[[AH:.*]] = %{{.*}} to %[[EH]] step %{{.*}} {
// CHECK:                   loop.for %[[AW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:                     loop.block "add" (%{{.*}} = %[[N]], %{{.*}} = %[[O]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) [spatial, spatial, spatial, spatial] {
// CHECK:                       mem.load %[[CONV]]
// CHECK:                       mem.store %{{.*}}, %[[SUM]]
// CHECK:                 loop.for
// CHECK:                   loop.for
// CHECK:                     loop.block "relu" (%{{.*}} = %[[N]], %{{.*}} = %[[O]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) [spatial, spatial, spatial, spatial] {
// CHECK:                       mem.load %[[SUM]]
// CHECK-NOT:     loop.block
// CHECK:         func.return
