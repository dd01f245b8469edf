// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=512 amx=true}' | FileCheck %s
// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=512}' | FileCheck %s --check-prefix=NOAMX
// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=512 amx=true amx-int8=true}' | FileCheck %s --check-prefix=INT8

// A bf16 x bf16 -> fp32 dot where AMX tiles may run: A's bits are copied to an i16
// buffer, each 32-column panel of B is packed as bf16 pairs along K (the two rows' vectors
// interleaved by one shuffle) into a 16 x 64 i16 buffer, then each 32 x 32 block of C is
// loaded into tiles 0..3, takes one tile_dot per pair of A tiles (4, 5) and B tiles (6, 7)
// for each 32 steps of K, and is stored back; the tiles are configured before the panels
// and released after them. C0 here is +0.0 everywhere: the tiles start from tile_zero,
// nothing is loaded from C's buffer.
// CHECK-LABEL: func.func public @dot_bf16
// CHECK-DAG: %[[PANEL:.*]] = memref.alloca() {{.*}} : memref<16x64xi16>
// CHECK-DAG: %[[C:.*]] = memref.alloca() {{.*}} : memref<32x32xf32>
// CHECK-DAG: %[[A:.*]] = memref.alloca() {{.*}} : memref<32x32xi16>
// CHECK: "tcpu.bitcast"({{.*}}) : (vector<32xbf16>) -> vector<32xi16>
// CHECK: "tcpu.tile_config"()
// CHECK: scf.for
// CHECK: vector.shuffle {{.*}} [0, 32, 1, 33, 2, 34, {{.*}}, 31, 63] : vector<32xi16>, vector<32xi16>
// CHECK: vector.store {{.*}}, %[[PANEL]]
// CHECK: scf.for
// CHECK-NOT: "tcpu.tile_load"(%[[C]],
// CHECK: "tcpu.tile_zero"() <{tile = 0 : i32}>
// CHECK-NEXT: "tcpu.tile_zero"() <{tile = 1 : i32}>
// CHECK-NEXT: "tcpu.tile_zero"() <{tile = 2 : i32}>
// CHECK-NEXT: "tcpu.tile_zero"() <{tile = 3 : i32}>
// CHECK: scf.for
// CHECK: "tcpu.tile_load"(%[[A]], {{.*}}) <{tile = 4 : i32}>
// CHECK: "tcpu.tile_load"(%[[A]], {{.*}}) <{tile = 5 : i32}>
// CHECK: "tcpu.tile_load"(%[[PANEL]], {{.*}}) <{tile = 6 : i32}>
// CHECK: "tcpu.tile_load"(%[[PANEL]], {{.*}}) <{tile = 7 : i32}>
// CHECK: "tcpu.tile_dot"() <{kind = "bf16", acc = 0 : i32, a = 4 : i32, b = 6 : i32}>
// CHECK: "tcpu.tile_dot"() <{kind = "bf16", acc = 1 : i32, a = 4 : i32, b = 7 : i32}>
// CHECK: "tcpu.tile_dot"() <{kind = "bf16", acc = 2 : i32, a = 5 : i32, b = 6 : i32}>
// CHECK: "tcpu.tile_dot"() <{kind = "bf16", acc = 3 : i32, a = 5 : i32, b = 7 : i32}>
// CHECK: "tcpu.tile_store"(%[[C]], {{.*}}) <{tile = 0 : i32}>
// CHECK-COUNT-3: "tcpu.tile_store"(%[[C]],
// CHECK: "tcpu.tile_release"()
// Without the option, no tile op.
// NOAMX-LABEL: func.func public @dot_bf16
// NOAMX-NOT: tcpu.tile
// NOAMX: math.fma {{.*}} : vector<16xf32>
// NOAMX-NOT: tcpu.tile
// An int8 dot (amx-int8): B's panel holds quads of rows along K, made of two byte-pair
// interleavings and one of the pairs as 16-bit lanes; one tile_dot "ss" (tdpbssd) per
// pair of tiles for each 64 steps of K, accumulating in i32.
// INT8-LABEL: func.func public @dot_int8
// INT8: %[[PANEL:.*]] = memref.alloca() {{.*}} : memref<16x64xi16>
// INT8: "tcpu.tile_config"()
// INT8: vector.shuffle {{.*}} : vector<32xi8>, vector<32xi8>
// INT8: "tcpu.bitcast"({{.*}}) : (vector<64xi8>) -> vector<32xi16>
// INT8: vector.shuffle {{.*}} : vector<32xi8>, vector<32xi8>
// INT8: "tcpu.bitcast"({{.*}}) : (vector<64xi8>) -> vector<32xi16>
// INT8: vector.shuffle {{.*}} : vector<32xi16>, vector<32xi16>
// INT8: "tcpu.tile_zero"() <{tile = 0 : i32}>
// INT8: "tcpu.tile_load"(%{{.*}}, {{.*}}) <{tile = 4 : i32}> : (memref<64x64xi8>, index, index) -> ()
// INT8: "tcpu.tile_load"(%[[PANEL]], {{.*}}) <{tile = 6 : i32}>
// INT8: "tcpu.tile_dot"() <{kind = "ss", acc = 0 : i32, a = 4 : i32, b = 6 : i32}>
// INT8: "tcpu.tile_store"(%{{.*}}, {{.*}}) <{tile = 0 : i32}> : (memref<64x64xi32>, index, index) -> ()
// INT8: "tcpu.tile_release"()

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

tt.func public @dot_int8(%a: !tt.ptr<i8> {tt.divisibility = 16 : i32}, %o: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %c64 = arith.constant dense<64> : tensor<64x1xi32>
  %row = tt.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %col = tt.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %rs = arith.muli %row, %c64 : tensor<64x1xi32>
  %rb = tt.broadcast %rs : tensor<64x1xi32> -> tensor<64x64xi32>
  %cb = tt.broadcast %col : tensor<1x64xi32> -> tensor<64x64xi32>
  %off = arith.addi %rb, %cb : tensor<64x64xi32>
  %as = tt.splat %a : !tt.ptr<i8> -> tensor<64x64x!tt.ptr<i8>>
  %ap = tt.addptr %as, %off : tensor<64x64x!tt.ptr<i8>>, tensor<64x64xi32>
  %x = tt.load %ap : tensor<64x64x!tt.ptr<i8>>
  %z = arith.constant dense<0> : tensor<64x64xi32>
  %d = tt.dot %x, %x, %z : tensor<64x64xi8> * tensor<64x64xi8> -> tensor<64x64xi32>
  %os = tt.splat %o : !tt.ptr<i32> -> tensor<64x64x!tt.ptr<i32>>
  %op = tt.addptr %os, %off : tensor<64x64x!tt.ptr<i32>>, tensor<64x64xi32>
  tt.store %op, %d : tensor<64x64x!tt.ptr<i32>>
  tt.return
}

// Two dots, the second reading the first's result alone, nothing written between them
// (unroll-tile-dot-loops' chain): one tile kernel. Both A blocks are copied side by side
// along K into one buffer (columns 0..31 and 32..63) and both panels of B into one buffer
// (rows 0..15 and 16..31); each block of C is loaded once, takes the products of the
// chain's 64 steps of K in one loop (two steps of 32), and is stored once.
// CHECK-LABEL: func.func public @chained_dots
// CHECK-DAG: %[[PANEL:.*]] = memref.alloca() {{.*}} : memref<32x64xi16>
// CHECK-DAG: %[[C:.*]] = memref.alloca() {{.*}} : memref<32x32xf32>
// CHECK-DAG: %[[A:.*]] = memref.alloca() {{.*}} : memref<32x64xi16>
// CHECK: vector.store {{.*}}, %[[A]][%{{.*}}, %{{.*}}] : memref<32x64xi16>, vector<32xi16>
// CHECK: %[[COL:.*]] = arith.constant 32 : index
// CHECK-NEXT: vector.store {{.*}}, %[[A]][%{{.*}}, %[[COL]]] : memref<32x64xi16>, vector<32xi16>
// CHECK: "tcpu.tile_config"()
// CHECK-NOT: "tcpu.tile_config"()
// CHECK: vector.store {{.*}}, %[[PANEL]]
// CHECK: vector.store {{.*}}, %[[PANEL]]
// CHECK: "tcpu.tile_load"(%[[C]], {{.*}}) <{tile = 0 : i32}>
// CHECK-COUNT-3: "tcpu.tile_load"(%[[C]],
// CHECK: %[[K64:.*]] = arith.constant 64 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[K64]] step %{{.*}} {
// CHECK: "tcpu.tile_load"(%[[A]], {{.*}}) <{tile = 4 : i32}>
// CHECK: "tcpu.tile_load"(%[[PANEL]], {{.*}}) <{tile = 6 : i32}>
// CHECK: "tcpu.tile_dot"() <{kind = "bf16", acc = 3 : i32, a = 5 : i32, b = 7 : i32}>
// CHECK-NEXT: }
// CHECK-NEXT: "tcpu.tile_store"(%[[C]],
// CHECK-COUNT-3: "tcpu.tile_store"(%[[C]],
// CHECK: "tcpu.tile_release"()
// CHECK-NOT: "tcpu.tile_config"()
// CHECK: func.return
// A store between the two dots (it could write what the first dot's operands read; here
// the second dot's A is loaded after it): two tile kernels.
// CHECK-LABEL: func.func public @chain_broken_by_store
// CHECK: "tcpu.tile_config"()
// CHECK: "tcpu.tile_release"()
// CHECK: "tcpu.tile_config"()
// CHECK: "tcpu.tile_release"()
tt.func public @chained_dots(%a: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
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
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
  %c = tt.load %op : tensor<32x32x!tt.ptr<f32>>
  %d0 = tt.dot %x, %x, %c : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  %ap1 = tt.addptr %ap, %off : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
  %x1 = tt.load %ap1 : tensor<32x32x!tt.ptr<bf16>>
  %d1 = tt.dot %x1, %x, %d0 : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  tt.store %op, %d1 : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

tt.func public @chain_broken_by_store(%a: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
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
  %d0 = tt.dot %x, %x, %z : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  %zb = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
  tt.store %ap, %zb : tensor<32x32x!tt.ptr<bf16>>
  %x1 = tt.load %ap : tensor<32x32x!tt.ptr<bf16>>
  %d1 = tt.dot %x1, %x, %d0 : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %op = tt.addptr %os, %off : tensor<32x32x!tt.ptr<f32>>, tensor<32x32xi32>
  tt.store %op, %d1 : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// A dot marked by share-dot-panels, in a K loop: the function takes the thread's panel
// cache at entry (tags [S + 1, 8] i64, data [S + 1, N / 32, K / 2, 64] i16: S = 64 slots
// and the spare); each iteration looks up slot (k - lb) / step (the spare from 64 on),
// compares the tag's state and key (B's address) and updates the tag; B's panels are
// packed, into the slot or the spare's first panel, only where the lookup missed, and
// the B tiles load from there.
// CHECK-LABEL: func.func public @marked
// CHECK: %[[TAGS:.*]], %[[DATA:.*]] = "tcpu.panel_cache"() : () -> (memref<65x8xi64>, memref<65x2x16x64xi16>)
// CHECK: scf.for %[[K:.*]] = %c0 to %K step %c32 : i32 {
// CHECK:   %[[REL:.*]] = arith.subi %[[K]], %c0 : i32
// CHECK:   %[[N:.*]] = arith.divsi %[[REL]], %c32 : i32
// CHECK:   %[[NI:.*]] = arith.index_cast %[[N]] : i32 to index
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[NI]], %[[S:.*]] : index
// CHECK:   %[[SLOT:.*]] = arith.select %[[IN]], %[[NI]], %[[S]] : index
// CHECK:   %[[STATE:.*]] = memref.load %[[TAGS]][%[[SLOT]], %{{.*}}] : memref<65x8xi64>
// CHECK:   %[[KEY:.*]] = "tcpu.ptr_to_int"(%bk) : (!tt.ptr<bf16>) -> i64
// CHECK:   %[[STORED:.*]] = memref.load %[[TAGS]][%[[SLOT]], %{{.*}}] : memref<65x8xi64>
// CHECK:   arith.cmpi eq, %[[STORED]], %[[KEY]] : i64
// CHECK:   %[[WHERE:.*]] = arith.select %[[KEPT:.*]], %[[SLOT]], %[[S]] : index
// CHECK:   scf.if %{{.*}} {
// CHECK:     memref.store %[[KEY]], %[[TAGS]][%[[SLOT]], %{{.*}}]
// CHECK:   "tcpu.tile_config"()
// CHECK:   %[[PANEL:.*]] = arith.select %[[KEPT]], %{{.*}}, %{{.*}} : index
// CHECK:   scf.if %{{.*}} {
// CHECK:     vector.shuffle
// CHECK:     vector.store %{{.*}}, %[[DATA]][%[[WHERE]], %[[PANEL]], %{{.*}}, %{{.*}}] : memref<65x2x16x64xi16>, vector<64xi16>
// CHECK:   "tcpu.tile_load"(%[[DATA]], %[[WHERE]], %[[PANEL]], %{{.*}}, %{{.*}}) <{tile = 6 : i32}>
// CHECK:   "tcpu.tile_dot"()
tt.func public @marked(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %K: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x64xf32>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %r = scf.for %k = %c0 to %K step %c32 iter_args(%acc = %zero) -> (tensor<32x64xf32>) : i32 {
    %bk = tt.addptr %b, %k : !tt.ptr<bf16>, i32
    %bp = tt.splat %bk : !tt.ptr<bf16> -> tensor<32x64x!tt.ptr<bf16>>
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
