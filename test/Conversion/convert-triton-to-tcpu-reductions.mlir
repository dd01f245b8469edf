// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A reduction along the last axis: vector chunks combined lane-wise in a loop with four
// independent accumulators (chunks j, j + 4, ...), these combined pairwise, then the lanes
// pairwise (shuffles), down to one scalar result. The chunk loop is marked `tcpu.no_unroll`
// (kept a loop by LLVM: unrolled, the row's loads were merged with a later pass's).
// CHECK-LABEL: func.func public @sum_rows
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: arith.addf {{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK-NEXT: } {tcpu.no_unroll}
// CHECK-COUNT-3: arith.addf {{.*}} : vector<16xf32>
// CHECK: vector.shuffle {{.*}} [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK: arith.addf {{.*}} : vector<8xf32>
// CHECK: vector.extract {{.*}}[1] : f32 from vector<2xf32>
// CHECK: arith.addf {{.*}} : f32
// CHECK: "tcpu.store"
tt.func public @sum_rows(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32>) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %xp : tensor<256x!tt.ptr<f32>>
  %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  tt.store %o, %s : !tt.ptr<f32>
  tt.return
}

// A scan along the last axis: a sequential carry written to a buffer per step.
// CHECK-LABEL: func.func public @scan
// CHECK: memref.alloca() {{.*}} : memref<16xf32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK: arith.addf {{.*}} : f32
// CHECK: memref.store
tt.func public @scan(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %x = tt.load %pp : tensor<16x!tt.ptr<f32>>
  %s = "tt.scan"(%x) <{axis = 0 : i32, reverse = false}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.scan.return %c : f32
  }) : (tensor<16xf32>) -> tensor<16xf32>
  tt.store %pp, %s : tensor<16x!tt.ptr<f32>>
  tt.return
}

// A reduction of a reshape that merges dimensions: the lanes never run past a row of
// the reshape's source (here rows of 2), so each step reads a 2-lane vector.
// CHECK-LABEL: func.func public @sum_flattened
// CHECK: vector<2xf32>
// CHECK-NOT: vector<16xf32>
// CHECK: "tcpu.store"
tt.func public @sum_flattened(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32>) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
  %m = tt.reshape %v : tensor<16xf32> -> tensor<8x2xf32>
  %f = tt.reshape %m : tensor<8x2xf32> -> tensor<16xf32>
  %s = "tt.reduce"(%f) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<16xf32>) -> f32
  tt.store %o, %s : !tt.ptr<f32>
  tt.return
}

// A value computed into a buffer (exp: math with two consumers) whose first consumer is a
// reduction of its shape: the reduction's loop computes it and writes the buffer (after
// its first chunk, peeled to start the accumulator), one pass over the row; the division
// then reads the buffer, with no loop of its own computing exp.
// CHECK-LABEL: func.func public @exp_sum_deferred
// CHECK: math.exp
// CHECK: vector.store
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK: math.exp
// CHECK: vector.store
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK-NOT: math.exp
// CHECK: arith.divf
// CHECK: "tcpu.vstore"
tt.func public @exp_sum_deferred(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %xp : tensor<256x!tt.ptr<f32>>
  %e = math.exp %v : tensor<256xf32>
  %s = "tt.reduce"(%e) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  %ss = tt.splat %s : f32 -> tensor<256xf32>
  %q = arith.divf %e, %ss : tensor<256xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %op = tt.addptr %os, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  tt.store %op, %q : tensor<256x!tt.ptr<f32>>
  tt.return
}

// tl.max on floats (maxnumf): each chain starts from select(x > -inf, x, -inf) and steps
// with select(x > acc, x, acc) (no accumulator is ever NaN: one x86 max per step); a
// result of -inf (no element above it, maybe all NaN) reduces the row again with maxnumf.
// CHECK-LABEL: func.func public @max_row
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: scf.for
// CHECK: arith.cmpf ogt
// CHECK: arith.select
// CHECK: scf.yield
// CHECK: arith.cmpf oeq
// CHECK: scf.if
// CHECK: arith.maxnumf
// CHECK: else
tt.func public @max_row(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32>) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %xp : tensor<256x!tt.ptr<f32>>
  %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.maxnumf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  tt.store %o, %s : !tt.ptr<f32>
  tt.return
}

// Not through another buffered value: `e` (exp, read by `f` and the store) is computed into
// its buffer by a loop of its own, since the sum reads it only through `f`, which is
// buffered too (deferred to the sum: computed in its loop from e's buffer).
// CHECK-LABEL: func.func public @two_exps
// CHECK: %[[F:.*]] = memref.alloca() {{.*}} : memref<256xf32>
// CHECK: %[[E:.*]] = memref.alloca() {{.*}} : memref<256xf32>
// CHECK: scf.for
// CHECK: math.exp
// CHECK: vector.store {{.*}}, %[[E]]
// CHECK: scf.for {{.*}} iter_args
// CHECK: vector.load %[[E]]
// CHECK-NEXT: math.exp
// CHECK-NEXT: vector.store {{.*}}, %[[F]]
tt.func public @two_exps(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %xp : tensor<256x!tt.ptr<f32>>
  %e = math.exp %v : tensor<256xf32>
  %f = math.exp %e : tensor<256xf32>
  %s = "tt.reduce"(%f) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  %ss = tt.splat %s : f32 -> tensor<256xf32>
  %q = arith.divf %f, %ss : tensor<256xf32>
  %t = arith.addf %q, %e : tensor<256xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %op = tt.addptr %os, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  tt.store %op, %t : tensor<256x!tt.ptr<f32>>
  tt.return
}
