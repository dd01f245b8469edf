// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// An atomic per element under its mask, with the requested ordering; the old values
// go to a buffer only when they are used.
// CHECK-LABEL: func.func public @atomic_add
// CHECK: scf.for
// CHECK: "tcpu.atomic_rmw"
// CHECK-SAME: kind = "add"
// CHECK-SAME: ordering = "acq_rel"
// CHECK-NOT: memref.store
// CHECK: func.return
tt.func public @atomic_add(%p: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %ps = tt.splat %p : !tt.ptr<i32> -> tensor<8x!tt.ptr<i32>>
  %pp = tt.addptr %ps, %r : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
  %m = arith.constant dense<true> : tensor<8xi1>
  %old = tt.atomic_rmw add, acq_rel, gpu, %pp, %r, %m : (tensor<8x!tt.ptr<i32>>, tensor<8xi32>, tensor<8xi1>) -> tensor<8xi32>
  tt.return
}

// Compare-and-swap on a scalar pointer: one cmpxchg, its old value used directly.
// CHECK-LABEL: func.func public @cas
// CHECK: %[[OLD:.*]] = "tcpu.atomic_cas"
// CHECK-SAME: ordering = "monotonic"
// CHECK: "tcpu.store"(%{{.*}}, %[[OLD]])
tt.func public @cas(%p: !tt.ptr<i32>, %q: !tt.ptr<i32>) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %old = tt.atomic_cas relaxed, gpu, %p, %c0, %c1 : (!tt.ptr<i32>, i32, i32) -> i32
  tt.store %q, %old : !tt.ptr<i32>
  tt.return
}

// tt.atomic_poll with a timeout: the deadline is the clock at the op plus the budget,
// shared by every element; one runtime poll per element, its flags in a buffer.
// CHECK-LABEL: func.func public @poll
// CHECK: %[[NOW:.*]] = "tcpu.clock"() : () -> i64
// CHECK: %[[DEADLINE:.*]] = arith.addi %[[NOW]], %{{.*}} : i64
// CHECK: scf.for
// CHECK: "tcpu.atomic_poll"(%{{.*}}, %{{.*}}, %[[DEADLINE]]) <{acquire = true
// CHECK: memref.store
tt.func public @poll(%p: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<i8> {tt.divisibility = 16 : i32}, %t: i64) {
  %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %ps = tt.splat %p : !tt.ptr<i32> -> tensor<8x!tt.ptr<i32>>
  %pp = tt.addptr %ps, %r : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
  %c1 = arith.constant dense<1> : tensor<8xi32>
  %ok = tt.atomic_poll acquire, gpu, %pp, %c1 timeout %t : tensor<8x!tt.ptr<i32>>, tensor<8xi32> -> tensor<8xi1>
  %os = tt.splat %o : !tt.ptr<i8> -> tensor<8x!tt.ptr<i8>>
  %op = tt.addptr %os, %r : tensor<8x!tt.ptr<i8>>, tensor<8xi32>
  %ok8 = arith.extui %ok : tensor<8xi1> to tensor<8xi8>
  tt.store %op, %ok8 : tensor<8x!tt.ptr<i8>>
  tt.return
}
