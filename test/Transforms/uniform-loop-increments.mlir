// RUN: triton-cpu-opt %s -p uniform-loop-increments | FileCheck %s

// A tensor of pointers advanced by a splat of a loop-invariant scalar becomes its initial
// value plus a scalar i64 offset carried by the loop; so does an integer tensor advanced
// by a splat constant (its offset keeps the element type). The loop's final tensor is
// rebuilt after the loop from the final offset.
// CHECK-LABEL: tt.func public @walk
// CHECK-DAG: %[[Z64:[0-9]+]] = arith.constant 0 : i64
// CHECK-DAG: %[[S64:[0-9]+]] = arith.extsi %s : i32 to i64
// CHECK-DAG: %[[Z32:[0-9]+]] = arith.constant 0 : i32
// CHECK-DAG: %[[C4:[0-9]+]] = arith.constant 4 : i32
// CHECK: %[[R:[0-9a-z_]+]], %{{.*}}, %{{.*}} = scf.for %i = %c0 to %n step %c1 iter_args(%[[O:[0-9a-z_]+]] = %[[Z64]], %[[K:[0-9a-z_]+]] = %[[Z32]], %acc = %zero) -> (i64, i32, tensor<8xf32>)
// CHECK-DAG: %[[OS:.*]] = tt.splat %[[O]] : i64 -> tensor<8xi64>
// CHECK-DAG: %[[P:.*]] = tt.addptr %[[P0:[a-z0-9]+]], %[[OS]] : tensor<8x!tt.ptr<f32>>, tensor<8xi64>
// CHECK-DAG: %[[KS:.*]] = tt.splat %[[K]] : i32 -> tensor<8xi32>
// CHECK-DAG: arith.addi %r, %[[KS]] : tensor<8xi32>
// CHECK: tt.load %[[P]]
// CHECK-NOT: tt.addptr %[[P]]
// CHECK: %[[ON:.*]] = arith.addi %[[O]], %[[S64]] : i64
// CHECK: %[[KN:.*]] = arith.addi %[[K]], %[[C4]] : i32
// CHECK: scf.yield %[[ON]], %[[KN]], %{{.*}} : i64, i32, tensor<8xf32>
// CHECK: %[[FS:.*]] = tt.splat %[[R]] : i64 -> tensor<8xi64>
// CHECK: %[[F:.*]] = tt.addptr %[[P0]], %[[FS]]
// CHECK: tt.load %[[F]]
tt.func public @walk(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32>, %s: i32, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %four = arith.constant dense<4> : tensor<8xi32>
  %zero = arith.constant dense<0.0> : tensor<8xf32>
  %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
  %p0 = tt.addptr %xs, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
  %ss = tt.splat %s : i32 -> tensor<8xi32>
  %res:3 = scf.for %i = %c0 to %n step %c1 iter_args(%p = %p0, %k = %r, %acc = %zero) -> (tensor<8x!tt.ptr<f32>>, tensor<8xi32>, tensor<8xf32>) : i32 {
    %v = tt.load %p : tensor<8x!tt.ptr<f32>>
    %kf = arith.sitofp %k : tensor<8xi32> to tensor<8xf32>
    %t = arith.mulf %v, %kf : tensor<8xf32>
    %a = arith.addf %acc, %t : tensor<8xf32>
    %pn = tt.addptr %p, %ss : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
    %kn = arith.addi %k, %four : tensor<8xi32>
    scf.yield %pn, %kn, %a : tensor<8x!tt.ptr<f32>>, tensor<8xi32>, tensor<8xf32>
  }
  %last = tt.load %res#0 : tensor<8x!tt.ptr<f32>>
  %sum = arith.addf %last, %res#2 : tensor<8xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
  tt.store %yp, %sum : tensor<8x!tt.ptr<f32>>
  tt.return
}

// Not rewritten: the step is computed inside the loop (it is not uniform over iterations).
// CHECK-LABEL: tt.func public @varying
// CHECK: scf.for {{.*}} -> (tensor<8x!tt.ptr<i32>>)
tt.func public @varying(%x: !tt.ptr<i32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %xs = tt.splat %x : !tt.ptr<i32> -> tensor<8x!tt.ptr<i32>>
  %p0 = tt.addptr %xs, %r : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
  %res = scf.for %i = %c0 to %n step %c1 iter_args(%p = %p0) -> (tensor<8x!tt.ptr<i32>>) : i32 {
    %is = tt.splat %i : i32 -> tensor<8xi32>
    %pn = tt.addptr %p, %is : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
    scf.yield %pn : tensor<8x!tt.ptr<i32>>
  }
  tt.store %res, %r : tensor<8x!tt.ptr<i32>>
  tt.return
}
