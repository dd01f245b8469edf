// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256},split-bound-check-loops,cse' | FileCheck %s

// A check `start + iota <= n` selects the values a sum reduces. The conversion walks the
// 1024 lanes in steps of 64 (four chunks of 16); the chunks from 64 on become two loops.
// The first runs while every check of the step holds, with the checks replaced by true:
// i + 48 + start + 15 <= n, i.e. i < n - start - 62 (in i64), rounded up to a step and
// clamped to the 15 steps. The second loop is the original code, from there to 1024.
// CHECK-LABEL: func.func public @where_sum
// CHECK: %[[N:.*]] = arith.extsi %n : i32 to i64
// CHECK: %[[S:.*]] = arith.extsi %start : i32 to i64
// CHECK: %[[D:.*]] = arith.subi %[[N]], %[[S]] : i64
// CHECK: %[[C:.*]] = arith.constant -62 : i64
// CHECK: %[[X:.*]] = arith.addi %[[D]], %[[C]] : i64
// CHECK: %[[C64:.*]] = arith.constant 64 : i64
// CHECK: %[[R:.*]] = arith.subi %[[X]], %[[C64]] : i64
// CHECK: %[[Z:.*]] = arith.maxsi %[[R]], %{{.*}} : i64
// CHECK: arith.divsi
// CHECK: %[[T:.*]] = arith.constant 15 : i64
// CHECK: arith.minsi %{{.*}}, %[[T]] : i64
// CHECK: %[[SPLIT:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[M:.*]], %{{.*}}, %{{.*}}, %{{.*}} = scf.for %{{.*}} = %{{.*}} to %[[SPLIT]] step
// CHECK-NOT: arith.cmpi
// CHECK: %[[TRUE:.*]] = arith.constant dense<true> : vector<16xi1>
// CHECK-NOT: arith.cmpi
// CHECK: arith.select %[[TRUE]]
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %[[SPLIT]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[M]],
// CHECK: arith.cmpi sle
tt.func public @where_sum(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out: !tt.ptr<f32>, %start: i32, %n: i32) {
  %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
  %s = tt.splat %start : i32 -> tensor<1024xi32>
  %cols = arith.addi %s, %r : tensor<1024xi32>
  %ns = tt.splat %n : i32 -> tensor<1024xi32>
  %valid = arith.cmpi sle, %cols, %ns : tensor<1024xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
  %v = tt.load %xp : tensor<1024x!tt.ptr<f32>>
  %zero = arith.constant dense<0.0> : tensor<1024xf32>
  %w = arith.select %valid, %v, %zero : tensor<1024xi1>, tensor<1024xf32>
  %sum = "tt.reduce"(%w) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %t = arith.addf %a, %b : f32
    tt.reduce.return %t : f32
  }) : (tensor<1024xf32>) -> f32
  tt.store %out, %sum : !tt.ptr<f32>
  tt.return
}

// Unsigned, with the operands swapped (n > start + iota): the bound and the offset are
// zero-extended, and the first loop's chunks hold every lane below n.
// CHECK-LABEL: func.func public @swapped_unsigned
// CHECK: arith.extui %n : i32 to i64
// CHECK: arith.extui %start : i32 to i64
// CHECK: scf.for
// CHECK: dense<true>
// CHECK: scf.for
// CHECK: arith.cmpi ugt
tt.func public @swapped_unsigned(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32},
                                 %start: i32, %n: i32) {
  %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
  %s = tt.splat %start : i32 -> tensor<1024xi32>
  %cols = arith.addi %s, %r : tensor<1024xi32>
  %ns = tt.splat %n : i32 -> tensor<1024xi32>
  %valid = arith.cmpi ugt, %ns, %cols : tensor<1024xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
  %v = tt.load %xp : tensor<1024x!tt.ptr<f32>>
  %neg = arith.constant dense<-1.0> : tensor<1024xf32>
  %w = arith.select %valid, %v, %neg : tensor<1024xi1>, tensor<1024xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
  tt.store %yp, %w : tensor<1024x!tt.ptr<f32>>
  tt.return
}

// A check that only masks a load and a store is one scalar compare per chunk: no split.
// CHECK-LABEL: func.func public @mask_only
// CHECK-NOT: dense<true>
// CHECK: func.return
tt.func public @mask_only(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
  %ns = tt.splat %n : i32 -> tensor<1024xi32>
  %valid = arith.cmpi slt, %r, %ns : tensor<1024xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
  %v = tt.load %xp, %valid : tensor<1024x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
  tt.store %yp, %v, %valid : tensor<1024x!tt.ptr<f32>>
  tt.return
}
