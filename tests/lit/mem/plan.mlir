// RUN: mini-opt %s -p mem-plan --verify-diagnostics | filecheck %s
// RUN: not mini-opt %s -p 'mem-plan{alignment=128}' 2>&1 | filecheck %s --check-prefix=ALIGN
// ALIGN: error: mem-plan: alignment must be a power of two <= 64 (the arena's own alignment), got 128

func.func private @k(%a: memref<16xf32>, %b: memref<16xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k2(%a: memref<16xf32>, %b: memref<16xf32>, %c: memref<16xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @kd(%a: memref<?x4xf32>, %b: memref<?x4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k1(%a: memref<1xf32>, %b: memref<1xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k32(%a: memref<?x4xf32>, %b: memref<?x32xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k8(%a: memref<?x32xf32>, %b: memref<?x8xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k16(%a: memref<?x8xf32>, %b: memref<?x16xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @k4(%a: memref<?x16xf32>, %b: memref<?x4xf32>) attributes {loop.kernel} {
  func.return
}
func.func private @kv(%a: memref<4x4xf32>, %b: memref<16xf32>) attributes {loop.kernel} {
  func.return
}

// %a and %b live at the same time: different offsets. %c is born after %a died: %a's bytes.
// The result buffer is not planned; the arena is freed before the return.
// CHECK-LABEL: func.func @share_when_disjoint
// CHECK-SAME:    (%[[X:.*]]: memref<16xf32>) -> memref<16xf32> {
// CHECK-NEXT:    %[[ARENA:.*]] = mem.arena : memref<128xi8>
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = mem.slot %[[ARENA]][%[[O0]]] {mem.offset = 0 : i64, mem.size = 64 : i64} : memref<128xi8> -> memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[X]], %[[A]])
// CHECK-NEXT:    %[[O64:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[B:.*]] = mem.slot %[[ARENA]][%[[O64]]] {mem.offset = 64 : i64, mem.size = 64 : i64} : memref<128xi8> -> memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[A]], %[[B]])
// CHECK-NEXT:    %[[O0B:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[C:.*]] = mem.slot %[[ARENA]][%[[O0B]]] {mem.offset = 0 : i64, mem.size = 64 : i64} : memref<128xi8> -> memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[B]], %[[C]])
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[C]], %[[R]])
// CHECK-NEXT:    mem.dealloc %[[ARENA]] : memref<128xi8>
// CHECK-NEXT:    func.return %[[R]] : memref<16xf32>
// expected-remark @+1 {{peak bytes: 128 (3 buffers planned, 192 bytes before planning)}}
func.func @share_when_disjoint(%x: memref<16xf32>) -> memref<16xf32> {
  %a = mem.alloc() : memref<16xf32>
  func.call @k(%x, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  %b = mem.alloc() : memref<16xf32>
  func.call @k(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  mem.dealloc %a : memref<16xf32>
  %c = mem.alloc() : memref<16xf32>
  func.call @k(%b, %c) : (memref<16xf32>, memref<16xf32>) -> ()
  mem.dealloc %b : memref<16xf32>
  %r = mem.alloc() {mem.result_slot = 0 : i64} : memref<16xf32>
  func.call @k(%c, %r) : (memref<16xf32>, memref<16xf32>) -> ()
  mem.dealloc %c : memref<16xf32>
  func.return %r : memref<16xf32>
}

// A view of %a keeps %a alive until the view's last use: %c cannot take %a's bytes, %d can.
// CHECK-LABEL: func.func @view_extends_lifetime
// CHECK-NEXT:    %[[ARENA:.*]] = mem.arena : memref<128xi8>
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = mem.slot %[[ARENA]][%{{.*}}] {mem.offset = 0 : i64, mem.size = 64 : i64} : memref<128xi8> -> memref<16xf32>
// CHECK-NEXT:    func.call @k(%{{.*}}, %[[A]])
// CHECK-NEXT:    %[[V:.*]] = mem.view %[[A]] : memref<16xf32> -> memref<4x4xf32>
// CHECK-NEXT:    arith.constant 64 : index
// CHECK-NEXT:    %[[C:.*]] = mem.slot %[[ARENA]][%{{.*}}] {mem.offset = 64 : i64, mem.size = 64 : i64} : memref<128xi8> -> memref<16xf32>
// CHECK-NEXT:    func.call @k(%{{.*}}, %[[C]])
// CHECK-NEXT:    func.call @kv(%[[V]], %[[C]])
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    %[[D:.*]] = mem.slot %[[ARENA]][%{{.*}}] {mem.offset = 0 : i64, mem.size = 64 : i64} : memref<128xi8> -> memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[C]], %[[D]])
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64}
// CHECK-NEXT:    func.call @k(%[[D]], %[[R]])
// CHECK-NEXT:    mem.dealloc %[[ARENA]] : memref<128xi8>
// CHECK-NEXT:    func.return %[[R]]
// expected-remark @+1 {{peak bytes: 128 (3 buffers planned, 192 bytes before planning)}}
func.func @view_extends_lifetime(%x: memref<16xf32>) -> memref<16xf32> {
  %a = mem.alloc() : memref<16xf32>
  func.call @k(%x, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  %v = mem.view %a : memref<16xf32> -> memref<4x4xf32>
  %c = mem.alloc() : memref<16xf32>
  func.call @k(%x, %c) : (memref<16xf32>, memref<16xf32>) -> ()
  func.call @kv(%v, %c) : (memref<4x4xf32>, memref<16xf32>) -> ()
  mem.dealloc %a : memref<16xf32>
  %d = mem.alloc() : memref<16xf32>
  func.call @k(%c, %d) : (memref<16xf32>, memref<16xf32>) -> ()
  mem.dealloc %c : memref<16xf32>
  %r = mem.alloc() {mem.result_slot = 0 : i64} : memref<16xf32>
  func.call @k(%d, %r) : (memref<16xf32>, memref<16xf32>) -> ()
  mem.dealloc %d : memref<16xf32>
  func.return %r : memref<16xf32>
}

// Dynamic sizes: offsets after the (here empty) static region, computed at run time where the
// arena is made; the dims are moved up there (`mem.dim %a` becomes the dim %a was made with).
// %a, %b, %c have the same dynamic factor (structurally: `mem.dim %x, 0` twice), so they are planned
// together in units of it, like static buffers: %a at 0, %b (overlapping both) at 64 * n, %c at
// %a's offset (disjoint lifetimes). %d has another factor: its own region.
// CHECK-LABEL: func.func @dynamic
// CHECK-SAME:    (%[[X:.*]]: memref<?x4xf32>) -> memref<?x4xf32> {
// CHECK-NEXT:    %[[N:.*]] = mem.dim %[[X]], 0 : memref<?x4xf32>
// CHECK-NEXT:    %[[M:.*]] = mem.dim %[[X]], 0 : memref<?x4xf32>
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[M2:.*]] = arith.muli %[[M]], %[[TWO]] : index
// CHECK-NEXT:    %[[OFF0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[U1:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[B1:.*]] = arith.muli %[[U1]], %[[N]] : index
// CHECK-NEXT:    %[[OFF1:.*]] = arith.addi %[[OFF0]], %[[B1]] : index
// CHECK-NEXT:    %[[R0:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[S0:.*]] = arith.muli %[[R0]], %[[N]] : index
// CHECK-NEXT:    %[[OFF2:.*]] = arith.addi %[[OFF0]], %[[S0]] : index
// CHECK-NEXT:    %[[R1:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[S1:.*]] = arith.muli %[[R1]], %[[M2]] : index
// CHECK-NEXT:    %[[SIZE:.*]] = arith.addi %[[OFF2]], %[[S1]] : index
// CHECK-NEXT:    %[[ARENA:.*]] = mem.arena(%[[SIZE]]) : memref<?xi8>
// CHECK-NEXT:    %[[A:.*]] = mem.slot %[[ARENA]][%[[OFF0]]](%[[N]]) {mem.dynamic_slot = 0 : i64} : memref<?xi8> -> memref<?x4xf32>
// CHECK-NEXT:    func.call @kd(%[[X]], %[[A]])
// CHECK-NEXT:    %[[B:.*]] = mem.slot %[[ARENA]][%[[OFF1]]](%[[N]]) {mem.dynamic_slot = 1 : i64} : memref<?xi8> -> memref<?x4xf32>
// CHECK-NEXT:    func.call @kd(%[[A]], %[[B]])
// CHECK-NEXT:    %[[C:.*]] = mem.slot %[[ARENA]][%[[OFF0]]](%[[M]]) {mem.dynamic_slot = 0 : i64} : memref<?xi8> -> memref<?x4xf32>
// CHECK-NEXT:    func.call @kd(%[[B]], %[[C]])
// CHECK-NEXT:    %[[D:.*]] = mem.slot %[[ARENA]][%[[OFF2]]](%[[M2]]) {mem.dynamic_slot = 2 : i64} : memref<?xi8> -> memref<?x4xf32>
// CHECK-NEXT:    func.call @kd(%[[C]], %[[D]])
// CHECK-NEXT:    %[[R:.*]] = mem.alloc(%[[M2]]) {mem.result_slot = 0 : i64}
// CHECK-NEXT:    func.call @kd(%[[D]], %[[R]])
// CHECK-NEXT:    mem.dealloc %[[ARENA]] : memref<?xi8>
// CHECK-NEXT:    func.return %[[R]]
// expected-remark @+1 {{peak bytes: 0 + dynamic (4 buffers planned, 0 bytes before planning + dynamic); dynamic: 4 buffers in 3 slots after the static region, in 2 regions of 128 * x.dim0, 64 * m2 bytes}}
func.func @dynamic(%x: memref<?x4xf32>) -> memref<?x4xf32> {
  %n = mem.dim %x, 0 : memref<?x4xf32>
  %a = mem.alloc(%n) : memref<?x4xf32>
  func.call @kd(%x, %a) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  %na = mem.dim %a, 0 : memref<?x4xf32>
  %b = mem.alloc(%na) : memref<?x4xf32>
  func.call @kd(%a, %b) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %a : memref<?x4xf32>
  %m = mem.dim %x, 0 : memref<?x4xf32>
  %c = mem.alloc(%m) : memref<?x4xf32>
  func.call @kd(%b, %c) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %b : memref<?x4xf32>
  %two = arith.constant 2 : index
  %m2 = arith.muli %m, %two : index
  %d = mem.alloc(%m2) : memref<?x4xf32>
  func.call @kd(%c, %d) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %c : memref<?x4xf32>
  %r = mem.alloc(%m2) {mem.result_slot = 0 : i64} : memref<?x4xf32>
  func.call @kd(%d, %r) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %d : memref<?x4xf32>
  func.return %r : memref<?x4xf32>
}

// Static and dynamic together: the dynamic slot starts at the 64-aligned end of the static region.
// CHECK-LABEL: func.func @static_then_dynamic
// CHECK:         %[[BASE:.*]] = arith.constant 64 : index
// CHECK:         %[[SIZE:.*]] = arith.addi %[[BASE]], %{{.*}} : index
// CHECK-NEXT:    %[[ARENA:.*]] = mem.arena(%[[SIZE]]) : memref<?xi8>
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    %[[S:.*]] = mem.slot %[[ARENA]][%{{.*}}] {mem.offset = 0 : i64, mem.size = 4 : i64} : memref<?xi8> -> memref<1xf32>
// CHECK:         mem.slot %[[ARENA]][%[[BASE]]](%{{.*}}) {mem.dynamic_slot = 0 : i64}
// expected-remark @+1 {{peak bytes: 4 + dynamic (2 buffers planned, 4 bytes before planning + dynamic); dynamic: 1 buffer in 1 slot after the static region, in 1 region of 64 * x.dim0 bytes}}
func.func @static_then_dynamic(%x: memref<?x4xf32>, %one: memref<1xf32>) -> memref<?x4xf32> {
  %s = mem.alloc() : memref<1xf32>
  func.call @k1(%one, %s) : (memref<1xf32>, memref<1xf32>) -> ()
  %n = mem.dim %x, 0 : memref<?x4xf32>
  %a = mem.alloc(%n) : memref<?x4xf32>
  func.call @kd(%x, %a) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  %r = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?x4xf32>
  func.call @kd(%a, %r) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %a : memref<?x4xf32>
  mem.dealloc %s : memref<1xf32>
  func.return %r : memref<?x4xf32>
}

// Buffers of different sizes with one dynamic factor (a batch) reuse each other's bytes as static
// ones do: the region is the static plan of the per-batch sizes (%a 128 at 0, %c 64 at 0 after %a
// died, %b 32 at 128: 160, aligned 192) times the batch, not one slot per size laid end to end
// (128 + 64 + 64 per batch before).
// CHECK-LABEL: func.func @dynamic_sizes_share_bytes
// CHECK:         %[[N:.*]] = mem.dim %{{.*}}, 0 : memref<?x4xf32>
// CHECK:         %[[OFF0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[U:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[UB:.*]] = arith.muli %[[U]], %[[N]] : index
// CHECK-NEXT:    %[[OFFB:.*]] = arith.addi %[[OFF0]], %[[UB]] : index
// CHECK-NEXT:    %[[R:.*]] = arith.constant 192 : index
// CHECK-NEXT:    %[[RB:.*]] = arith.muli %[[R]], %[[N]] : index
// CHECK-NEXT:    %[[SIZE:.*]] = arith.addi %[[OFF0]], %[[RB]] : index
// CHECK-NEXT:    %[[ARENA:.*]] = mem.arena(%[[SIZE]]) : memref<?xi8>
// CHECK-NEXT:    mem.slot %[[ARENA]][%[[OFF0]]](%{{.*}}) {mem.dynamic_slot = 0 : i64} : memref<?xi8> -> memref<?x32xf32>
// CHECK:         mem.slot %[[ARENA]][%[[OFFB]]](%{{.*}}) {mem.dynamic_slot = 1 : i64} : memref<?xi8> -> memref<?x8xf32>
// CHECK:         mem.slot %[[ARENA]][%[[OFF0]]](%{{.*}}) {mem.dynamic_slot = 0 : i64} : memref<?xi8> -> memref<?x16xf32>
// expected-remark @+1 {{peak bytes: 0 + dynamic (3 buffers planned, 0 bytes before planning + dynamic); dynamic: 3 buffers in 2 slots after the static region, in 1 region of 192 * x.dim0 bytes}}
func.func @dynamic_sizes_share_bytes(%x: memref<?x4xf32>) -> memref<?x4xf32> {
  %n = mem.dim %x, 0 : memref<?x4xf32>
  %a = mem.alloc(%n) : memref<?x32xf32>
  func.call @k32(%x, %a) : (memref<?x4xf32>, memref<?x32xf32>) -> ()
  %b = mem.alloc(%n) : memref<?x8xf32>
  func.call @k8(%a, %b) : (memref<?x32xf32>, memref<?x8xf32>) -> ()
  mem.dealloc %a : memref<?x32xf32>
  %c = mem.alloc(%n) : memref<?x16xf32>
  func.call @k16(%b, %c) : (memref<?x8xf32>, memref<?x16xf32>) -> ()
  mem.dealloc %b : memref<?x8xf32>
  %r = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?x4xf32>
  func.call @k4(%c, %r) : (memref<?x16xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %c : memref<?x16xf32>
  func.return %r : memref<?x4xf32>
}

// A size that depends on data read at run time cannot be computed where the arena is made:
// that buffer stays on the heap, the others are still planned.
// CHECK-LABEL: func.func @data_dependent_size
// CHECK:         mem.arena : memref<64xi8>
// CHECK:         mem.load
// CHECK:         %[[Q:.*]] = arith.index_cast
// CHECK-NEXT:    %[[E:.*]] = mem.alloc(%[[Q]]) : memref<?x4xf32>
// CHECK:         mem.dealloc %[[E]] : memref<?x4xf32>
// expected-remark @+1 {{peak bytes: 64 (1 buffer planned, 64 bytes before planning); 1 dynamic buffer left on the heap (size not computable at the arena)}}
func.func @data_dependent_size(%x: memref<?x4xf32>, %y: memref<16xf32>) -> memref<?x4xf32> {
  %s = mem.alloc() : memref<16xf32>
  func.call @k(%y, %s) : (memref<16xf32>, memref<16xf32>) -> ()
  %c0 = arith.constant 0 : index
  %f = mem.load %s[%c0] : memref<16xf32> -> f32
  %i = arith.fptosi %f : f32 to i64
  %q = arith.index_cast %i : i64 to index
  mem.dealloc %s : memref<16xf32>
  %e = mem.alloc(%q) : memref<?x4xf32>
  func.call @kd(%x, %e) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  %r = mem.alloc(%q) {mem.result_slot = 0 : i64} : memref<?x4xf32>
  func.call @kd(%e, %r) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %e : memref<?x4xf32>
  func.return %r : memref<?x4xf32>
}

// Nothing to plan: arguments, params, stack buffers, result buffers and buffers that are returned
// are never touched; no arena.
// CHECK-LABEL: func.func @nothing_to_plan
// CHECK-SAME:    (%[[X:.*]]: memref<16xf32>, %[[W:.*]]: memref<16xf32> {mem.param = "w"}) -> (memref<16xf32>, memref<16xf32>) {
// CHECK-NEXT:    %[[S:.*]] = mem.alloca() : memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[W]], %[[S]])
// CHECK-NEXT:    %[[R:.*]] = mem.alloc() {mem.result_slot = 0 : i64} : memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[S]], %[[R]])
// CHECK-NEXT:    %[[E:.*]] = mem.alloc() : memref<16xf32>
// CHECK-NEXT:    func.call @k(%[[X]], %[[E]])
// CHECK-NEXT:    func.return %[[R]], %[[E]]
// expected-remark @+1 {{peak bytes: 0 (0 buffers planned, 0 bytes before planning)}}
func.func @nothing_to_plan(%x: memref<16xf32>, %w: memref<16xf32> {mem.param = "w"}) -> (memref<16xf32>, memref<16xf32>) {
  %s = mem.alloca() : memref<16xf32>
  func.call @k(%w, %s) : (memref<16xf32>, memref<16xf32>) -> ()
  %r = mem.alloc() {mem.result_slot = 0 : i64} : memref<16xf32>
  func.call @k(%s, %r) : (memref<16xf32>, memref<16xf32>) -> ()
  %e = mem.alloc() : memref<16xf32>
  func.call @k(%x, %e) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return %r, %e : memref<16xf32>, memref<16xf32>
}

// Kernels keep their own scratch buffers.
// CHECK-LABEL: func.func private @kernel_scratch
// CHECK-NEXT:    %[[T:.*]] = mem.alloc() : memref<16xf32>
// CHECK-NEXT:    mem.dealloc %[[T]]
func.func private @kernel_scratch(%a: memref<16xf32>) attributes {loop.kernel} {
  %t = mem.alloc() : memref<16xf32>
  mem.dealloc %t : memref<16xf32>
  func.return
}

// A dim broadcast with itself (`maxsi %d, %d`, as a broadcasting op's shape function builds it)
// is that dim: %c's size `maxsi(maxsi(n, n), ...)` is %a's, so %c and %a (disjoint lifetimes)
// share slot 0, and every buffer is planned (%b is not left on the heap because its maxsi read an
// operand that moving the other operand had just replaced).
// CHECK-LABEL: func.func @max_of_itself
// CHECK:         mem.slot %{{.*}} {mem.dynamic_slot = 0 : i64}
// CHECK:         mem.slot %{{.*}} {mem.dynamic_slot = 1 : i64}
// CHECK:         mem.slot %{{.*}} {mem.dynamic_slot = 0 : i64}
// CHECK:         mem.alloc(%{{.*}}) {mem.result_slot = 0 : i64}
// expected-remark @+1 {{peak bytes: 0 + dynamic (3 buffers planned, 0 bytes before planning + dynamic); dynamic: 3 buffers in 2 slots after the static region, in 1 region of 128 * x.dim0 bytes}}
func.func @max_of_itself(%x: memref<?x4xf32>) -> memref<?x4xf32> {
  %n = mem.dim %x, 0 : memref<?x4xf32>
  %a = mem.alloc(%n) : memref<?x4xf32>
  func.call @kd(%x, %a) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  %na = mem.dim %a, 0 : memref<?x4xf32>
  %m = arith.maxsi %na, %na : index
  %b = mem.alloc(%m) : memref<?x4xf32>
  func.call @kd(%a, %b) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %a : memref<?x4xf32>
  %nb = mem.dim %b, 0 : memref<?x4xf32>
  %m2 = arith.maxsi %nb, %nb : index
  %c = mem.alloc(%m2) : memref<?x4xf32>
  func.call @kd(%b, %c) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %b : memref<?x4xf32>
  %r = mem.alloc(%n) {mem.result_slot = 0 : i64} : memref<?x4xf32>
  func.call @kd(%c, %r) : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  mem.dealloc %c : memref<?x4xf32>
  func.return %r : memref<?x4xf32>
}
