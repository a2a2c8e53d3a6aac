// RUN: mini-opt %s -p 'convert-mem-to-llvm{checks=true}' | filecheck %s
// RUN: mini-opt %s -p 'convert-mem-to-llvm' | filecheck %s --check-prefix=OFF

// Checked mode: an access whose indices are not known to be in bounds is guarded (unsigned compares
// against the dims, the whole vector along the last dim); out of bounds goes through a scratch slot
// and records the site. Fresh buffers are filled with poison (an f32 signaling NaN here).

// CHECK-LABEL: func.func private @k
// CHECK-SAME:    (%[[X:.*]]: !llvm.ptr {llvm.noalias}, %[[XD:.*]]: i64, %[[Y:.*]]: !llvm.ptr {llvm.noalias}, %[[YD:.*]]: i64)
// CHECK:         %[[POISON:.*]] = llvm.mlir.constant(9197939944203855269) : i64
// CHECK:         %[[SCRATCH:.*]] = llvm.alloca %{{.*}} x i8 {alignment = 64 : i64}
// CHECK:         %[[STACK:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK:         %[[ADDR:.*]] = llvm.getelementptr inbounds %[[X]][4]
// CHECK-NEXT:    %[[OK:.*]] = llvm.icmp "ult" %{{.*}}, %[[XD]] : i64
// CHECK-NEXT:    llvm.cond_br %[[OK]], ^[[CONT:.*]](%[[ADDR]] : !llvm.ptr), ^[[BAD:.*]]
// CHECK-NEXT:  ^[[BAD]]:
// CHECK-NEXT:    %[[SITE:.*]] = llvm.mlir.addressof @__mm_site.k.0 : !llvm.ptr
// CHECK-NEXT:    llvm.call @__minimlir_check_fail(%[[SITE]], {{.*}}, %[[XD]], {{.*}})
// CHECK-NEXT:    llvm.br ^[[CONT]](%[[SCRATCH]] : !llvm.ptr)
// CHECK-NEXT:  ^[[CONT]](%[[P:.*]]: !llvm.ptr):
// CHECK-NEXT:    %{{.*}} = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-NEXT:    llvm.call @__minimlir_poison(%[[STACK]], %{{.*}}, %[[POISON]])

// Checks off: no guard, no poison, no site.
// OFF-LABEL: func.func private @k
// OFF-NOT:   __minimlir
// OFF-NOT:   __mm_site
func.func private @k(%x: memref<?x4xf32>, %y: memref<?x4xf32>) attributes {loop.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = mem.load %x[%c1, %c0] {check.site = {block = "b", node = "N", buffer = "input 'x'"}} : memref<?x4xf32> -> vector<4xf32>
  mem.store %v, %y[%c0, %c0] : vector<4xf32>, memref<?x4xf32>
  %s = mem.alloca() : memref<8xf32>
  func.return
}

// A vector along a dynamic last dim checks its first and its last lane.
// CHECK-LABEL: func.func private @lanes
// CHECK:         %[[END:.*]] = llvm.add %{{.*}}, %{{.*}} : i64
// CHECK:         llvm.icmp "ule" %[[END]], %{{.*}} : i64
// CHECK:         llvm.call @__minimlir_check_fail
func.func private @lanes(%x: memref<?xf32>, %i: index) -> vector<8xf32> attributes {loop.kernel} {
  %v = mem.load %x[%i] : memref<?xf32> -> vector<8xf32>
  func.return %v : vector<8xf32>
}

// The site strings (kernel, block, buffer, node, access, lanes, element, type) are module constants.
// CHECK:       llvm.mlir.global internal constant @__mm_site.k.0("k\1Fb\1Finput 'x'\1FN\1Fload\1F4\1Ff32\1Fmemref<?x4xf32>\00")
