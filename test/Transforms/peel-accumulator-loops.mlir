// RUN: triton-cpu-opt %s -p peel-accumulator-loops | FileCheck %s

// A loop accumulating into a constant-initialized tensor: its first iteration runs under
// an scf.if (lb < ub) before the loop, with the induction variable at lb and the carried
// values at their inits; the loop continues from lb + step, or from ub when it runs no
// iteration, carrying the if's results. The hints stay on the loop.
// CHECK-LABEL: tt.func public @row_sum
// CHECK: %[[FIRST:.*]] = arith.cmpi slt, %c0, %n : i32
// CHECK: %[[Y0:.*]], %[[Y1:.*]] = scf.if %[[FIRST]] -> (tensor<16xf32>, i32) {
// CHECK:   tt.splat %c0 : i32 -> tensor<16xi32>
// CHECK:   tt.load
// CHECK:   %[[A:.*]] = arith.addf %zero, %{{.*}} : tensor<16xf32>
// CHECK:   %[[K:.*]] = arith.addi %k0, %c1 : i32
// CHECK:   scf.yield %[[A]], %[[K]] : tensor<16xf32>, i32
// CHECK: } else {
// CHECK:   scf.yield %zero, %k0 : tensor<16xf32>, i32
// CHECK: }
// CHECK: %[[NEXT:.*]] = arith.addi %c0, %c16 : i32
// CHECK: %[[START:.*]] = arith.select %[[FIRST]], %[[NEXT]], %n : i32
// CHECK: scf.for %off = %[[START]] to %n step %c16 iter_args(%acc = %[[Y0]], %k = %[[Y1]]) -> (tensor<16xf32>, i32) : i32 {
// CHECK: arith.addf %acc
// CHECK: } {tt.num_stages = 2 : i32}
tt.func public @row_sum(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c16 = arith.constant 16 : i32
  %k0 = arith.constant 0 : i32
  %zero = arith.constant dense<0.0> : tensor<16xf32>
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %res:2 = scf.for %off = %c0 to %n step %c16 iter_args(%acc = %zero, %k = %k0) -> (tensor<16xf32>, i32) : i32 {
    %offs = tt.splat %off : i32 -> tensor<16xi32>
    %cols = arith.addi %offs, %r : tensor<16xi32>
    %p = tt.addptr %xs, %cols : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    %a = arith.addf %acc, %v : tensor<16xf32>
    %kn = arith.addi %k, %c1 : i32
    scf.yield %a, %kn : tensor<16xf32>, i32
  } {tt.num_stages = 2 : i32}
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  tt.store %yp, %res#0 : tensor<16x!tt.ptr<f32>>
  tt.return
}

// Not peeled: a carried tensor that starts from a load (not a constant), and a loop with
// a tt.dot (a matmul's K loop).
// CHECK-LABEL: tt.func public @not_peeled
// CHECK-NOT: scf.if
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: tt.return
tt.func public @not_peeled(%x: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %p = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %v0 = tt.load %p : tensor<16x!tt.ptr<f32>>
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v0) -> (tensor<16xf32>) : i32 {
    %a = arith.addf %acc, %acc : tensor<16xf32>
    scf.yield %a : tensor<16xf32>
  }
  tt.store %p, %s : tensor<16x!tt.ptr<f32>>
  %m = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<16x16xf32>) : i32 {
    %d = tt.dot %acc, %acc, %acc : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
    scf.yield %d : tensor<16x16xf32>
  }
  tt.return
}
