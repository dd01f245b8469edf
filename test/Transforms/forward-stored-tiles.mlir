// RUN: triton-cpu-opt %s -p forward-stored-tiles | FileCheck %s

// A row stored, reduced, read back through the same pointers and mask (computed a second
// time, as the copies of two loops do) and stored again: the load takes the stored value
// (its masked-off lanes the load's `other`), and the first store, overwritten before
// anything reads it, goes.
// CHECK-LABEL: tt.func public @one_row
// CHECK-NOT: tt.load
// CHECK: %[[S:.*]] = "tt.reduce"(%e)
// CHECK: %[[F:.*]] = arith.select %m2, %e, %zero : tensor<64xi1>, tensor<64xf32>
// CHECK: %[[D:.*]] = arith.divf %[[F]], %{{.*}} : tensor<64xf32>
// CHECK-NOT: tt.store %p
// CHECK: tt.store %p2, %[[D]], %m2
// CHECK-NOT: tt.store
// CHECK: tt.return
tt.func public @one_row(%out: !tt.ptr<f32>, %n: i32) {
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %e = arith.constant dense<1.0> : tensor<64xf32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %ns = tt.splat %n : i32 -> tensor<64xi32>
  %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %m = arith.cmpi slt, %r, %ns : tensor<64xi32>
  %p = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %p, %e, %m : tensor<64x!tt.ptr<f32>>
  %s = "tt.reduce"(%e) <{axis = 0 : i32}> ({
  ^bb0(%l: f32, %rr: f32):
    %t = arith.addf %l, %rr : f32
    tt.reduce.return %t : f32
  }) : (tensor<64xf32>) -> f32
  %m2 = arith.cmpi slt, %r, %ns : tensor<64xi32>
  %p2 = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %x = tt.load %p2, %m2, %zero : tensor<64x!tt.ptr<f32>>
  %ss = tt.splat %s : f32 -> tensor<64xf32>
  %d = arith.divf %x, %ss : tensor<64xf32>
  tt.store %p2, %d, %m2 : tensor<64x!tt.ptr<f32>>
  tt.return
}

// Kept: a store through the same argument between the store and the load (other
// pointers), and a volatile load. The stores stay (each is read before it is overwritten).
// CHECK-LABEL: tt.func public @kept
// CHECK: tt.store %p, %e
// CHECK: tt.store %q, %e
// CHECK: tt.load %p
// CHECK: tt.store %p
// CHECK: tt.load %p {{.*}}isVolatile = true
// CHECK: tt.return
tt.func public @kept(%out: !tt.ptr<f32>) {
  %e = arith.constant dense<1.0> : tensor<64xf32>
  %c64 = arith.constant dense<64> : tensor<64xi32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %os = tt.splat %out : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %p = tt.addptr %os, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %r2 = arith.addi %r, %c64 : tensor<64xi32>
  %q = tt.addptr %os, %r2 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %p, %e : tensor<64x!tt.ptr<f32>>
  tt.store %q, %e : tensor<64x!tt.ptr<f32>>
  %x = tt.load %p : tensor<64x!tt.ptr<f32>>
  tt.store %p, %x : tensor<64x!tt.ptr<f32>>
  %y = tt.load %p {isVolatile = true} : tensor<64x!tt.ptr<f32>>
  tt.store %q, %y : tensor<64x!tt.ptr<f32>>
  tt.return
}

// Rows %stride apart, a run-time value: the block (from its start: the stride is an
// argument) runs under an scf.if on stride >= 64 (the row length) or stride >= n - 0 (the
// columns the mask keeps, the column offsets starting at 0); forwarded in the
// then-branch, where the first store, overwritten by the last, goes; as written in the
// else-branch. A store through another argument in between stops neither.
// CHECK-LABEL: tt.func public @strided_rows
// CHECK: %[[W:.*]] = arith.extsi %stride : i32 to i64
// CHECK: %[[C64:.*]] = arith.constant 64 : i64
// CHECK: %[[BY_LEN:.*]] = arith.cmpi sge, %[[W]], %[[C64]] : i64
// CHECK: %[[N:.*]] = arith.extsi %n : i32 to i64
// CHECK: %[[Z:.*]] = arith.extsi %c0 : i32 to i64
// CHECK: %[[SPAN:.*]] = arith.subi %[[N]], %[[Z]] : i64
// CHECK: %[[BY_MASK:.*]] = arith.cmpi sge, %[[W]], %[[SPAN]] : i64
// CHECK: %[[OK:.*]] = arith.ori %[[BY_LEN]], %[[BY_MASK]] : i1
// CHECK: scf.if %[[OK]] {
// CHECK-NOT: tt.store %p,
// CHECK:   tt.store %op, %v
// CHECK-NOT: tt.load
// CHECK:   %[[X:.*]] = arith.select %m, %v, %zero
// CHECK:   %[[Y:.*]] = arith.addf %[[X]], %[[X]]
// CHECK:   tt.store %p, %[[Y]]
// CHECK: } else {
// CHECK:   tt.store %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x64x!tt.ptr<f32>>
// CHECK:   tt.store
// CHECK:   tt.load
// CHECK:   tt.store
// CHECK: }
tt.func public @strided_rows(%out: !tt.ptr<f32>, %other: !tt.ptr<f32>, %stride: i32, %n: i32) {
  %c0 = arith.constant 0 : i32
  %zero = arith.constant dense<0.0> : tensor<2x64xf32>
  %v = arith.constant dense<1.0> : tensor<2x64xf32>
  %rows = tt.make_range {end = 2 : i32, start = 0 : i32} : tensor<2xi32>
  %rows2 = tt.expand_dims %rows {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
  %strides = tt.splat %stride : i32 -> tensor<2x1xi32>
  %rowoff = arith.muli %rows2, %strides : tensor<2x1xi32>
  %cr = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %cr2 = tt.expand_dims %cr {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %c0s = tt.splat %c0 : i32 -> tensor<1x64xi32>
  %cols = arith.addi %c0s, %cr2 : tensor<1x64xi32>
  %ns = tt.splat %n : i32 -> tensor<1x64xi32>
  %mc = arith.cmpi slt, %cols, %ns : tensor<1x64xi32>
  %m = tt.broadcast %mc : tensor<1x64xi1> -> tensor<2x64xi1>
  %colsb = tt.broadcast %cols : tensor<1x64xi32> -> tensor<2x64xi32>
  %rowb = tt.broadcast %rowoff : tensor<2x1xi32> -> tensor<2x64xi32>
  %off = arith.addi %colsb, %rowb : tensor<2x64xi32>
  %os = tt.splat %out : !tt.ptr<f32> -> tensor<2x64x!tt.ptr<f32>>
  %p = tt.addptr %os, %off : tensor<2x64x!tt.ptr<f32>>, tensor<2x64xi32>
  tt.store %p, %v, %m : tensor<2x64x!tt.ptr<f32>>
  %ots = tt.splat %other : !tt.ptr<f32> -> tensor<2x64x!tt.ptr<f32>>
  %op = tt.addptr %ots, %off : tensor<2x64x!tt.ptr<f32>>, tensor<2x64xi32>
  tt.store %op, %v : tensor<2x64x!tt.ptr<f32>>
  %x = tt.load %p, %m, %zero : tensor<2x64x!tt.ptr<f32>>
  %y = arith.addf %x, %x : tensor<2x64xf32>
  tt.store %p, %y : tensor<2x64x!tt.ptr<f32>>
  tt.return
}

// A masked load without `other` reads 0 in its masked-off lanes (as the conversion's load
// does): forwarded, it selects between the stored value and zeros, not the stored value
// alone (which would show lanes the store never wrote).
// CHECK-LABEL: tt.func public @masked_no_other
// CHECK-NOT: tt.load
// CHECK: %[[Z:.*]] = arith.constant dense<0> : tensor<16xi32>
// CHECK: %[[F:.*]] = arith.select %m, %v, %[[Z]] : tensor<16xi1>, tensor<16xi32>
// CHECK: tt.store %q, %[[F]]
tt.func public @masked_no_other(%out: !tt.ptr<i32>, %out2: !tt.ptr<i32>, %n: i32) {
  %v = arith.constant dense<7> : tensor<16xi32>
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %ns = tt.splat %n : i32 -> tensor<16xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<16xi32>
  %os = tt.splat %out : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>
  %p = tt.addptr %os, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>
  tt.store %p, %v, %m : tensor<16x!tt.ptr<i32>>
  %x = tt.load %p, %m : tensor<16x!tt.ptr<i32>>
  %qs = tt.splat %out2 : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>
  %q = tt.addptr %qs, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>
  tt.store %q, %x : tensor<16x!tt.ptr<i32>>
  tt.return
}
