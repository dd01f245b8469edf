// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A store fed by a load through the same argument (core.py, _own_store_may_overwrite). The
// store runs chunk by chunk, each chunk's read before its write; that is the tile's value
// only when no chunk writes what another reads. Through the load's own tile, contiguous:
// one nest, load and store fused.
// CHECK-LABEL: func.func public @same_tile
// CHECK-NOT: memref.alloca
// CHECK: scf.for
// CHECK: "tcpu.vload"
// CHECK: "tcpu.vstore"
// CHECK-NOT: scf.for
// CHECK: func.return
tt.func public @same_tile(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %pp : tensor<64x!tt.ptr<f32>>
  %one = arith.constant dense<1.0> : tensor<64xf32>
  %w = arith.addf %v, %one : tensor<64xf32>
  tt.store %pp, %w : tensor<64x!tt.ptr<f32>>
  tt.return
}

// One element further on: the next chunk would read what this one wrote, so the tile is
// read into a buffer first, then stored.
// CHECK-LABEL: func.func public @shifted
// CHECK: %[[BUF:.*]] = memref.alloca() {{.*}} : memref<64xf32>
// CHECK: scf.for
// CHECK: "tcpu.vload"
// CHECK: vector.store %{{.*}}, %[[BUF]]
// CHECK: scf.for
// CHECK: vector.load %[[BUF]]
// CHECK: "tcpu.vstore"
tt.func public @shifted(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %pp : tensor<64x!tt.ptr<f32>>
  %one = arith.constant dense<1> : tensor<64xi32>
  %q = tt.addptr %pp, %one : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %q, %v : tensor<64x!tt.ptr<f32>>
  tt.return
}

// Rows 10 elements apart, 16 lanes each, under a mask that keeps the columns below 10: the
// lanes kept share no address (rows_disjoint_under), so each row is updated where read.
// CHECK-LABEL: func.func public @rows_under_mask
// CHECK-NOT: memref.alloca
// CHECK: "tcpu.vload"
// CHECK: "tcpu.vstore"
// CHECK: func.return
tt.func public @rows_under_mask(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %c = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %cols = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
  %rows = tt.expand_dims %r {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
  %stride = arith.constant dense<10> : tensor<4x1xi32>
  %ro = arith.muli %rows, %stride : tensor<4x1xi32>
  %cb = tt.broadcast %cols : tensor<1x16xi32> -> tensor<4x16xi32>
  %rb = tt.broadcast %ro : tensor<4x1xi32> -> tensor<4x16xi32>
  %off = arith.addi %cb, %rb : tensor<4x16xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x16x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %off : tensor<4x16x!tt.ptr<f32>>, tensor<4x16xi32>
  %k = arith.constant dense<10> : tensor<1x16xi32>
  %m1 = arith.cmpi slt, %cols, %k : tensor<1x16xi32>
  %m = tt.broadcast %m1 : tensor<1x16xi1> -> tensor<4x16xi1>
  %v = tt.load %pp, %m : tensor<4x16x!tt.ptr<f32>>
  %one = arith.constant dense<1.0> : tensor<4x16xf32>
  %w = arith.addf %v, %one : tensor<4x16xf32>
  tt.store %pp, %w, %m : tensor<4x16x!tt.ptr<f32>>
  tt.return
}

// Rows 8 elements apart under the same mask: they overlap, the tile is buffered.
// CHECK-LABEL: func.func public @rows_overlap_under_mask
// CHECK: %[[BUF:.*]] = memref.alloca() {{.*}} : memref<4x16xf32>
// CHECK: "tcpu.vload"
// CHECK: vector.store %{{.*}}, %[[BUF]]
// CHECK: vector.load %[[BUF]]
// CHECK: "tcpu.vstore"
tt.func public @rows_overlap_under_mask(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %c = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %cols = tt.expand_dims %c {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32>
  %rows = tt.expand_dims %r {axis = 1 : i32} : tensor<4xi32> -> tensor<4x1xi32>
  %stride = arith.constant dense<8> : tensor<4x1xi32>
  %ro = arith.muli %rows, %stride : tensor<4x1xi32>
  %cb = tt.broadcast %cols : tensor<1x16xi32> -> tensor<4x16xi32>
  %rb = tt.broadcast %ro : tensor<4x1xi32> -> tensor<4x16xi32>
  %off = arith.addi %cb, %rb : tensor<4x16xi32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<4x16x!tt.ptr<f32>>
  %pp = tt.addptr %ps, %off : tensor<4x16x!tt.ptr<f32>>, tensor<4x16xi32>
  %k = arith.constant dense<10> : tensor<1x16xi32>
  %m1 = arith.cmpi slt, %cols, %k : tensor<1x16xi32>
  %m = tt.broadcast %m1 : tensor<1x16xi1> -> tensor<4x16xi1>
  %v = tt.load %pp, %m : tensor<4x16x!tt.ptr<f32>>
  %one = arith.constant dense<1.0> : tensor<4x16xf32>
  %w = arith.addf %v, %one : tensor<4x16xf32>
  tt.store %pp, %w, %m : tensor<4x16x!tt.ptr<f32>>
  tt.return
}

// The indices of a tl.gather loaded from the argument the gathered values are then stored
// into, reversed. A gather's indices are read where its value is, inside the store's nest,
// so they count as the store's operands: the indices are read into a buffer before the
// store's loop writes any of them.
// CHECK-LABEL: func.func public @gather_indices_overwritten
// CHECK: scf.for
// CHECK: "tcpu.addptr"(%io
// CHECK-NEXT: "tcpu.vload"
// CHECK-NEXT: vector.store %{{.*}}, %[[IDX:[0-9]+]][
// CHECK: scf.for
// CHECK: memref.load %[[IDX]]
// CHECK: "tcpu.scatter"
tt.func public @gather_indices_overwritten(%v: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %io: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %vs = tt.splat %v : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %vp = tt.addptr %vs, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  %src = tt.load %vp : tensor<64x!tt.ptr<i32>>
  %ios = tt.splat %io : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %iop = tt.addptr %ios, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  %raw = tt.load %iop : tensor<64x!tt.ptr<i32>>
  %c63 = arith.constant dense<63> : tensor<64xi32>
  %idx = arith.andi %raw, %c63 : tensor<64xi32>
  %g = tt.gather %src[%idx] {axis = 0 : i32} : (tensor<64xi32>, tensor<64xi32>) -> tensor<64xi32>
  %rev = arith.subi %c63, %r : tensor<64xi32>
  %dst = tt.addptr %ios, %rev : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  tt.store %dst, %g : tensor<64x!tt.ptr<i32>>
  tt.return
}
