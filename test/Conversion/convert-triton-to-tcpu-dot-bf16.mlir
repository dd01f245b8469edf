// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=512 bf16-dot=true}' | FileCheck %s --check-prefix=PAIRS
// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=512}' | FileCheck %s --check-prefix=WIDEN

// A bf16 x bf16 -> fp32 dot on a host with vdpbf16ps: A is repacked as i32 pairs along
// K (its bits as they lie in memory), B as i32 pairs of rows 2k and 2k + 1, and the K
// loop runs over K/2 pairs, each a broadcast pair of A times a vector of B's pairs.
// PAIRS-LABEL: func.func public @dot_bf16
// PAIRS-DAG: memref.alloca() {{.*}} : memref<32x16xi32>
// PAIRS-DAG: memref.alloca() {{.*}} : memref<16x32xi32>
// PAIRS: "tcpu.bitcast"({{.*}}) : (vector<32xbf16>) -> vector<16xi32>
// PAIRS: "tcpu.bitcast"({{.*}}) : (vector<32xbf16>) -> vector<32xi16>
// PAIRS: arith.shli {{.*}} : vector<32xi32>
// PAIRS: arith.ori {{.*}} : vector<32xi32>
// PAIRS: scf.for
// PAIRS: vector.broadcast {{.*}} : i32 to vector<16xi32>
// PAIRS: "tcpu.dot_bf16_pairs"({{.*}}) : (vector<16xf32>, vector<16xi32>, vector<16xi32>) -> vector<16xf32>
// PAIRS-NOT: math.fma
// Without the instruction: both operands widened to fp32, vector FMAs.
// WIDEN-LABEL: func.func public @dot_bf16
// WIDEN-NOT: tcpu.dot_bf16_pairs
// WIDEN: math.fma {{.*}} : vector<16xf32>
tt.func public @dot_bf16(%a: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %c32 = arith.constant dense<32> : tensor<32x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %rs = arith.muli %row, %c32 : tensor<32x1xi32>
  %rb = tt.broadcast %rs : tensor<32x1xi32> -> tensor<32x32xi32>
  %cb = tt.broadcast %col : tensor<1x32xi32> -> tensor<32x32xi32>
  %off = arith.addi %rb, %cb : tensor<32x32xi32>
  %as = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %ap = tt.addptr %as, %off : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
  %x = tt.load %ap : tensor<32x32x!tt.ptr<bf16>>
  %z = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
  %d = tt.dot %x, %x, %z, inputPrecision = tf32 : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
  tt.store %op, %d : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// A dot marked by share-dot-panels, in a K loop: B's pairs go to the thread's panel cache
// (data [S + 1, K / 2, N] i32: 16 x 64 pairs, 4 KiB a slot, S = 64 and the spare), at
// slot (k - lb) / step, packed only where the lookup missed; the micro-kernel reads them
// from there.
// PAIRS-LABEL: func.func public @marked
// PAIRS: %[[TAGS:.*]], %[[DATA:.*]] = "tcpu.panel_cache"() : () -> (memref<65x8xi64>, memref<65x16x64xi32>)
// PAIRS: scf.for %[[K:.*]] = %c0 to %K step %c32 : i32 {
// PAIRS:   %[[SLOT:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// PAIRS:   %[[KEY:.*]] = "tcpu.ptr_to_int"(%bk) : (!tt.ptr<bf16>) -> i64
// PAIRS:   %[[WHERE:.*]] = arith.select %{{.*}}, %[[SLOT]], %{{.*}} : index
// PAIRS:   scf.if %{{.*}} {
// PAIRS:     arith.ori {{.*}} : vector<32xi32>
// PAIRS:     vector.store %{{.*}}, %[[DATA]][%[[WHERE]], %{{.*}}, %{{.*}}] : memref<65x16x64xi32>, vector<32xi32>
// PAIRS:   vector.load %[[DATA]][%[[WHERE]], %{{.*}}, %{{.*}}] : memref<65x16x64xi32>, vector<16xi32>
// PAIRS:   "tcpu.dot_bf16_pairs"
// Without the instruction the mark is dropped: no cache.
// WIDEN-LABEL: func.func public @marked
// WIDEN-NOT: tcpu.panel
tt.func public @marked(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %K: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x64xf32>
  %rows = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %cols = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %re = tt.expand_dims %rows {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %ce = tt.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %c64 = arith.constant dense<64> : tensor<32x1xi32>
  %rs = arith.muli %re, %c64 : tensor<32x1xi32>
  %rb = tt.broadcast %rs : tensor<32x1xi32> -> tensor<32x64xi32>
  %cb = tt.broadcast %ce : tensor<1x64xi32> -> tensor<32x64xi32>
  %boff = arith.addi %rb, %cb : tensor<32x64xi32>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %r = scf.for %k = %c0 to %K step %c32 iter_args(%acc = %zero) -> (tensor<32x64xf32>) : i32 {
    %bk = tt.addptr %b, %k : !tt.ptr<bf16>, i32
    %bs = tt.splat %bk : !tt.ptr<bf16> -> tensor<32x64x!tt.ptr<bf16>>
    %bp = tt.addptr %bs, %boff : tensor<32x64x!tt.ptr<bf16>>, tensor<32x64xi32>
    %x = tt.load %ap : tensor<32x32x!tt.ptr<bf16>>
    %y = tt.load %bp : tensor<32x64x!tt.ptr<bf16>>
    "tcpu.panel_key"(%bk) : (!tt.ptr<bf16>) -> ()
    %d = tt.dot %x, %y, %acc : tensor<32x32xbf16> * tensor<32x64xbf16> -> tensor<32x64xf32>
    scf.yield %d : tensor<32x64xf32>
  }
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x64x!tt.ptr<f32>>
  tt.store %cp, %r : tensor<32x64x!tt.ptr<f32>>
  tt.return
}
