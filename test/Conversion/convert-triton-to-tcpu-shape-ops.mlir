// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// tl.cat of two 4-element vectors stored as one 8-element vector: the lanes cover both
// halves, so the halves are evaluated side by side and joined with one shuffle.
// CHECK-LABEL: func.func public @cat_whole
// CHECK: %[[A:.*]] = "tcpu.vload"{{.*}} -> vector<4xf32>
// CHECK: %[[B:.*]] = "tcpu.vload"{{.*}} -> vector<4xf32>
// CHECK: vector.shuffle %[[A]], %[[B]] [0, 1, 2, 3, 4, 5, 6, 7] : vector<4xf32>, vector<4xf32>
// CHECK: "tcpu.vstore"
tt.func public @cat_whole(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<4x!tt.ptr<f32>>
  %ap = tt.addptr %as, %r : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
  %x = tt.load %ap : tensor<4x!tt.ptr<f32>>
  %c4 = arith.constant dense<4> : tensor<4xi32>
  %r4 = arith.addi %r, %c4 : tensor<4xi32>
  %bp = tt.addptr %as, %r4 : tensor<4x!tt.ptr<f32>>, tensor<4xi32>
  %y = tt.load %bp : tensor<4x!tt.ptr<f32>>
  %c = tt.cat %x, %y : tensor<4xf32> -> tensor<8xf32>
  %r8 = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
  %op = tt.addptr %os, %r8 : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
  tt.store %op, %c : tensor<8x!tt.ptr<f32>>
  tt.return
}

// A transposed load: the lanes run along the source's first dimension, so the
// access is a gather; no tensor op is left.
// CHECK-LABEL: func.func public @transpose
// CHECK: "tcpu.gather"
// CHECK: "tcpu.vstore"
// CHECK-NOT: tt.trans
tt.func public @transpose(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %c16 = arith.constant dense<16> : tensor<16x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %rs = arith.muli %row, %c16 : tensor<16x1xi32>
  %rb = tt.broadcast %rs : tensor<16x1xi32> -> tensor<16x16xi32>
  %cb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
  %off = arith.addi %rb, %cb : tensor<16x16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  %v = tt.load %xp : tensor<16x16x!tt.ptr<f32>>
  %t = tt.trans %v {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %op, %t : tensor<16x16x!tt.ptr<f32>>
  tt.return
}

// tt.unsplat: the one element of a one-element tensor, evaluated as a scalar.
// CHECK-LABEL: func.func public @unsplat
// CHECK: %[[V:.*]] = "tcpu.load"
// CHECK: %[[C:.*]] = arith.cmpf ogt, %[[V]], %{{.*}} : f32
// CHECK: scf.if %[[C]]
tt.func public @unsplat(%x: !tt.ptr<f32>) {
  %r = tt.make_range {end = 1 : i32, start = 0 : i32} : tensor<1xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<1x!tt.ptr<f32>>, tensor<1xi32>
  %v = tt.load %xp : tensor<1x!tt.ptr<f32>>
  %s = tt.unsplat %v : tensor<1xf32>
  %z = arith.constant 0.0 : f32
  %c = arith.cmpf ogt, %s, %z : f32
  scf.if %c {
    tt.store %x, %s : !tt.ptr<f32>
  }
  tt.return
}

// A gather in a branch whose source (%y) is defined before a reduction that also fills
// the buffer of the load %y reads (the strided load is read once, by the reduction's
// loop): the source's buffer is filled after that, right before the branch, not at
// %y's definition, where the load's buffer is not written yet.
// CHECK-LABEL: func.func public @gather_in_branch_after_reduce
// CHECK: vector.store %{{.*}}, %[[X:[0-9]+]][%{{.*}}] : memref<64xi32>, vector<16xi32>
// CHECK-COUNT-3: vector.store %{{.*}}, %[[X]][%{{.*}}] : memref<64xi32>, vector<16xi32>
// CHECK: %s = arith.addi
// CHECK: scf.for
// CHECK: vector.load %[[X]]
// CHECK: scf.if %c
// CHECK: memref.load
tt.func public @gather_in_branch_after_reduce(%v: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %i: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %c: i1) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %c2 = arith.constant dense<2> : tensor<64xi32>
  %r2 = arith.muli %r, %c2 : tensor<64xi32>
  %vs = tt.splat %v : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %vp = tt.addptr %vs, %r2 : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  %x = tt.load %vp : tensor<64x!tt.ptr<i32>>
  %c1 = arith.constant dense<1> : tensor<64xi32>
  %y = arith.addi %x, %c1 : tensor<64xi32>
  %s = "tt.reduce"(%x) <{axis = 0 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %m = arith.addi %a, %b : i32
    tt.reduce.return %m : i32
  }) : (tensor<64xi32>) -> i32
  %is = tt.splat %i : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %ip = tt.addptr %is, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  %idx = tt.load %ip : tensor<64x!tt.ptr<i32>>
  %os = tt.splat %o : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %op = tt.addptr %os, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  scf.if %c {
    %g = tt.gather %y[%idx] {axis = 0 : i32} : (tensor<64xi32>, tensor<64xi32>) -> tensor<64xi32>
    tt.store %op, %g : tensor<64x!tt.ptr<i32>>
  }
  tt.store %o, %s : !tt.ptr<i32>
  tt.return
}
