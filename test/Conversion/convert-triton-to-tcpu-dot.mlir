// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s
// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256},cse' | FileCheck %s --check-prefix=SPREAD

// tt.dot: both operands packed to buffers, then for each 6 x 2 micro-tile of 8-lane
// accumulators a K loop carrying them, updated with vector FMAs on a broadcast of A: the
// first row of micro-tiles, a loop over the other full ones (one here), then the last 4
// of the 16 rows as a 4 x 2 micro-tile.
// CHECK-LABEL: func.func public @dot
// CHECK-COUNT-3: memref.alloca
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: memref.load
// CHECK: vector.broadcast {{.*}} : f32 to vector<8xf32>
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK: scf.for
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: tt.dot
tt.func public @dot(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %c16 = arith.constant dense<16> : tensor<16x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %rs = arith.muli %row, %c16 : tensor<16x1xi32>
  %rb = tt.broadcast %rs : tensor<16x1xi32> -> tensor<16x16xi32>
  %cb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
  %off = arith.addi %rb, %cb : tensor<16x16xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %ap = tt.addptr %as, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  %x = tt.load %ap : tensor<16x16x!tt.ptr<f32>>
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = tt.dot %x, %x, %z, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %op, %d : tensor<16x16x!tt.ptr<f32>>
  tt.return
}

// A transposed operand (tl.trans of a row-major load): packed in 8 x 8 blocks, eight
// contiguous loads down the columns and three rounds of shuffles, not a gather per row.
// CHECK-LABEL: func.func public @dot_transposed_operand
// CHECK-COUNT-8: "tcpu.vload"({{.*}}) -> vector<8xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 8, 2, 10, 4, 12, 6, 14] : vector<8xf32>, vector<8xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 8, 9, 4, 5, 12, 13] : vector<8xf32>, vector<8xf32>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK-NOT: tcpu.gather
tt.func public @dot_transposed_operand(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %c16 = arith.constant dense<16> : tensor<16x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %rs = arith.muli %row, %c16 : tensor<16x1xi32>
  %rb = tt.broadcast %rs : tensor<16x1xi32> -> tensor<16x16xi32>
  %cb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
  %off = arith.addi %rb, %cb : tensor<16x16xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %ap = tt.addptr %as, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  %x = tt.load %ap : tensor<16x16x!tt.ptr<f32>>
  %t = tt.trans %x {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = tt.dot %x, %t, %z, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %op, %d : tensor<16x16x!tt.ptr<f32>>
  tt.return
}

// tt.dot_scaled: the e2m1 operand is decoded per element (nibble of its byte, times its
// E8M0 scale) into an fp32 buffer; the bf16 one is widened; then the fp32 micro-kernel.
// CHECK-LABEL: func.func public @dot_scaled
// CHECK: arith.shrui
// CHECK: arith.shli {{.*}} : i32
// CHECK: "tcpu.bitcast"({{.*}}) : (i32) -> f32
// CHECK: arith.mulf {{.*}} : f32
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK-NOT: tt.dot_scaled
tt.func public @dot_scaled(%a: !tt.ptr<i8> {tt.divisibility = 16 : i32}, %s: !tt.ptr<i8> {tt.divisibility = 16 : i32}, %b: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r16 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %r32 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %c16 = arith.constant dense<16> : tensor<16x1xi32>
  %row = tt.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %col = tt.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %rs = arith.muli %row, %c16 : tensor<16x1xi32>
  %rb = tt.broadcast %rs : tensor<16x1xi32> -> tensor<16x16xi32>
  %cb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
  %off = arith.addi %rb, %cb : tensor<16x16xi32>
  %as = tt.splat %a : !tt.ptr<i8> -> tensor<16x16x!tt.ptr<i8>>
  %ap = tt.addptr %as, %off : tensor<16x16x!tt.ptr<i8>>, tensor<16x16xi32>
  %x = tt.load %ap : tensor<16x16x!tt.ptr<i8>>
  %ss = tt.splat %s : !tt.ptr<i8> -> tensor<16x1x!tt.ptr<i8>>
  %sp = tt.addptr %ss, %row : tensor<16x1x!tt.ptr<i8>>, tensor<16x1xi32>
  %sc = tt.load %sp : tensor<16x1x!tt.ptr<i8>>
  %c32 = arith.constant dense<16> : tensor<32x1xi32>
  %row32 = tt.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %rs32 = arith.muli %row32, %c32 : tensor<32x1xi32>
  %rb32 = tt.broadcast %rs32 : tensor<32x1xi32> -> tensor<32x16xi32>
  %cb32 = tt.broadcast %col : tensor<1x16xi32> -> tensor<32x16xi32>
  %off32 = arith.addi %rb32, %cb32 : tensor<32x16xi32>
  %bs = tt.splat %b : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
  %bp = tt.addptr %bs, %off32 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi32>
  %y = tt.load %bp : tensor<32x16x!tt.ptr<bf16>>
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = tt.dot_scaled %x scale %sc, %y, %z lhs = e2m1 rhs = bf16 {fastMath = false} : tensor<16x16xi8>, tensor<16x1xi8> * tensor<32x16xbf16> -> tensor<16x16xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %op, %d : tensor<16x16x!tt.ptr<f32>>
  tt.return
}

// A `spread` prefetch before a dot (prefetch-next-program's, for the next K block) is
// issued by the micro-kernel. The micro-tiles are 6 x 2 of 8 lanes: in each of the 2
// columns, the first row of them, a loop over the other full rows (6 to 30), then the
// last 2 rows (2 x 2). Each of the 12 micro-tiles prefetches 6 of the tile's 64 lines (32
// rows of two lines), one every 4 steps of its K loop: a loop over its 6 lines, each a
// prefetch and then 4 steps, then the last 8 steps. None before the dot.
// SPREAD-LABEL: func.func public @dot_spread_prefetch
// SPREAD-NOT: tcpu.prefetch
// The micro-tiles run column by column: B's packed copy is one column's panel (K x 16).
// SPREAD: memref.alloca() {{.*}} : memref<32x16xf32>
// SPREAD-NOT: tcpu.prefetch
// SPREAD: %[[C6:.*]] = arith.constant 6 : index
// SPREAD-NEXT: scf.for %{{.*}} = %{{.*}} to %[[C6]] step %{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// SPREAD-NOT: scf.for
// SPREAD: "tcpu.prefetch"(%{{.*}}) : (!tt.ptr<f32>) -> ()
// SPREAD-NOT: tcpu.prefetch
// SPREAD: scf.for {{.*}} iter_args
// SPREAD-NOT: tcpu.prefetch
// SPREAD: math.fma
// SPREAD-NOT: tcpu.prefetch
// SPREAD: scf.for %{{.*}} = %[[C6]] to %{{.*}} step %[[C6]] {
// SPREAD-NOT: tcpu.prefetch
// SPREAD: scf.for %{{.*}} = %{{.*}} to %[[C6]] step %{{.*}} iter_args
// SPREAD-NOT: scf.for
// SPREAD: "tcpu.prefetch"(%{{.*}}) : (!tt.ptr<f32>) -> ()
// SPREAD-NOT: tcpu.prefetch
// SPREAD: math.fma
// SPREAD-NOT: tcpu.prefetch
// SPREAD: scf.for %{{.*}} = %{{.*}} to %[[C6]] step %{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// SPREAD-NOT: scf.for
// SPREAD: "tcpu.prefetch"(%{{.*}}) : (!tt.ptr<f32>) -> ()
// SPREAD: return
tt.func public @dot_spread_prefetch(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %c32 = arith.constant dense<32> : tensor<32x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %rs = arith.muli %row, %c32 : tensor<32x1xi32>
  %rb = tt.broadcast %rs : tensor<32x1xi32> -> tensor<32x32xi32>
  %cb = tt.broadcast %col : tensor<1x32xi32> -> tensor<32x32xi32>
  %off = arith.addi %rb, %cb : tensor<32x32xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %ap = tt.addptr %as, %off : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
  %x = tt.load %ap : tensor<32x32x!tt.ptr<f32>>
  %c1024 = arith.constant dense<1024> : tensor<32x32xi32>
  %next = tt.addptr %ap, %c1024 : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
  "tcpu.prefetch"(%next) <{spread}> : (tensor<32x32x!tt.ptr<f32>>) -> ()
  %z = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
  %d = tt.dot %x, %x, %z, inputPrecision = tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
  tt.store %op, %d : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// B loaded by its own tt.load (A another): no copy loop for B before the micro-kernel.
// The first row of 6 x 2 micro-tiles, emitted apart (no branch on the row), loads B from
// memory in its K loop and stores each vector to the packed buffer; the later rows (a
// loop over the other full ones, then the last 4 rows) read that buffer.
// CHECK-LABEL: func.func public @dot_b_packed_by_first_row
// CHECK: "tcpu.vload"
// CHECK: vector.store
// CHECK-NOT: "tcpu.vload"
// CHECK-NOT: scf.if
// CHECK: scf.for {{.*}} iter_args
// CHECK: %[[B0:.*]] = "tcpu.vload"({{.*}}) {{.*}} -> vector<8xf32>
// CHECK-NEXT: vector.store %[[B0]], %[[PACKED:.*]][
// CHECK: math.fma {{.*}}, %[[B0]], {{.*}} : vector<8xf32>
// CHECK-NOT: "tcpu.vload"
// CHECK: scf.for
// CHECK-NOT: "tcpu.vload"
// CHECK: vector.load %[[PACKED]][
// CHECK-NOT: "tcpu.vload"
// CHECK: math.fma
// CHECK-NOT: "tcpu.vload"
// CHECK: vector.load %[[PACKED]][
// CHECK-NOT: "tcpu.vload"
// CHECK: return
tt.func public @dot_b_packed_by_first_row(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %b: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %c16 = arith.constant dense<16> : tensor<16x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %rs = arith.muli %row, %c16 : tensor<16x1xi32>
  %rb = tt.broadcast %rs : tensor<16x1xi32> -> tensor<16x16xi32>
  %cb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
  %off = arith.addi %rb, %cb : tensor<16x16xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %ap = tt.addptr %as, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  %x = tt.load %ap : tensor<16x16x!tt.ptr<f32>>
  %bs = tt.splat %b : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %bp = tt.addptr %bs, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  %y = tt.load %bp : tensor<16x16x!tt.ptr<f32>>
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = tt.dot %x, %y, %z, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %op, %d : tensor<16x16x!tt.ptr<f32>>
  tt.return
}
