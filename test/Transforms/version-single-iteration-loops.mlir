// RUN: triton-cpu-opt %s -p version-single-iteration-loops | FileCheck %s

// Two loops over the same run-time bound %n, the first carrying a 64-element tile (the
// shape of Inductor's looped reductions): the body from the first loop on runs under an
// scf.if on 0 < n <= 0 + 64. Its then-branch holds each loop's body once, with the
// induction variable at the lower bound and the carried tile at its initial value; the
// ops between the loops read the first copy's result. The else-branch holds the loops as
// they were. Ops before the first loop stay outside.
// CHECK-LABEL: tt.func public @two_loops
// CHECK: %xs = tt.splat %x
// CHECK: %[[LO:.*]] = arith.constant 0 : i32
// CHECK: %[[HI:.*]] = arith.constant 64 : i32
// CHECK: %[[RUNS:.*]] = arith.cmpi slt, %[[LO]], %n : i32
// CHECK: %[[ONCE:.*]] = arith.cmpi sle, %n, %[[HI]] : i32
// CHECK: %[[COND:.*]] = arith.andi %[[RUNS]], %[[ONCE]] : i1
// CHECK: scf.if %[[COND]] {
// CHECK-NOT: scf.for
// CHECK:   tt.splat %c0 : i32 -> tensor<64xi32>
// CHECK:   %[[V:.*]] = tt.load
// CHECK:   %[[A:.*]] = arith.addf %zero, %[[V]] : tensor<64xf32>
// CHECK:   %[[S:.*]] = "tt.reduce"(%[[A]])
// CHECK:   %[[E:.*]] = tt.splat %[[S]] : f32 -> tensor<64xf32>
// CHECK:   tt.load
// CHECK:   %[[D:.*]] = arith.divf %{{.*}}, %[[E]] : tensor<64xf32>
// CHECK:   tt.store %{{.*}}, %[[D]]
// CHECK-NOT: scf.for
// CHECK: } else {
// CHECK:   %[[R:.*]] = scf.for %off = %c0 to %n step %c64 iter_args(%acc = %zero)
// CHECK:   "tt.reduce"(%[[R]])
// CHECK:   scf.for %{{.*}} = %c0 to %n step %c64 : i32 {
// CHECK:     tt.store
// CHECK:   }
// CHECK-NEXT: }
// CHECK-NEXT: tt.return
tt.func public @two_loops(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant dense<0.0> : tensor<64xf32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %sum = scf.for %off = %c0 to %n step %c64 iter_args(%acc = %zero) -> (tensor<64xf32>) : i32 {
    %offs = tt.splat %off : i32 -> tensor<64xi32>
    %cols = arith.addi %offs, %r : tensor<64xi32>
    %p = tt.addptr %xs, %cols : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %p : tensor<64x!tt.ptr<f32>>
    %a = arith.addf %acc, %v : tensor<64xf32>
    scf.yield %a : tensor<64xf32>
  }
  %s = "tt.reduce"(%sum) <{axis = 0 : i32}> ({
  ^bb0(%l: f32, %rr: f32):
    %t = arith.addf %l, %rr : f32
    tt.reduce.return %t : f32
  }) : (tensor<64xf32>) -> f32
  %ss = tt.splat %s : f32 -> tensor<64xf32>
  scf.for %off = %c0 to %n step %c64 : i32 {
    %offs = tt.splat %off : i32 -> tensor<64xi32>
    %cols = arith.addi %offs, %r : tensor<64xi32>
    %p = tt.addptr %xs, %cols : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %v = tt.load %p : tensor<64x!tt.ptr<f32>>
    %d = arith.divf %v, %ss : tensor<64xf32>
    %q = tt.addptr %ys, %cols : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %q, %d : tensor<64x!tt.ptr<f32>>
  }
  tt.return
}

// Left alone: a loop with a constant bound, a loop whose carried tile is smaller than 64
// elements, and a K loop (tt.dot).
// CHECK-LABEL: tt.func public @left_alone
// CHECK-NOT: scf.if
// CHECK: tt.return
tt.func public @left_alone(%x: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %c64 = arith.constant 64 : i32
  %z64 = arith.constant dense<0.0> : tensor<64xf32>
  %z16 = arith.constant dense<0.0> : tensor<16xf32>
  %zd = arith.constant dense<0.0> : tensor<16x16xf32>
  %a = scf.for %off = %c0 to %c64 step %c64 iter_args(%acc = %z64) -> (tensor<64xf32>) : i32 {
    %t = arith.addf %acc, %acc : tensor<64xf32>
    scf.yield %t : tensor<64xf32>
  }
  %b = scf.for %off = %c0 to %n step %c16 iter_args(%acc = %z16) -> (tensor<16xf32>) : i32 {
    %t = arith.addf %acc, %acc : tensor<16xf32>
    scf.yield %t : tensor<16xf32>
  }
  %d = scf.for %off = %c0 to %n step %c16 iter_args(%acc = %zd) -> (tensor<16x16xf32>) : i32 {
    %t = tt.dot %acc, %acc, %acc : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
    scf.yield %t : tensor<16x16xf32>
  }
  tt.return
}
