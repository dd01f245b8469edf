// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// tl.debug_barrier is dropped (one program runs on one thread); a scalar tl.assume
// stays for the code generator.
// CHECK-LABEL: func.func public @hints
// CHECK-NOT: ttg.barrier
// CHECK: llvm.intr.assume %{{.*}} : i1
// CHECK: "tcpu.vstore"
// CHECK-NOT: ttg.barrier
tt.func public @hints(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %pos = arith.cmpi sgt, %n, %c0 : i32
  llvm.intr.assume %pos : i1
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
  ttg.barrier all
  tt.store %xp, %v : tensor<16x!tt.ptr<f32>>
  ttg.barrier local | global_read
  tt.return
}

// tcpu.prefetch of a tile (from prefetch-next-program) becomes one scalar prefetch per
// 64-byte line: 16 fp32 elements, so 4 per 64-element row, for each of the 2 rows.
// CHECK-LABEL: func.func public @prefetch_tile
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[TWO]] step %{{.*}} {
// CHECK: %[[LINE:.*]] = arith.constant 16 : index
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %[[LINE]] {
// CHECK: %[[P:.*]] = "tcpu.addptr"(%x, %{{.*}}) : (!tt.ptr<f32>, i32) -> !tt.ptr<f32>
// CHECK-NEXT: "tcpu.prefetch"(%[[P]]) : (!tt.ptr<f32>) -> ()
// CHECK-NOT: tcpu.prefetch
// CHECK: func.return
tt.func public @prefetch_tile(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rows = tt.make_range {end = 2 : i32, start = 0 : i32} : tensor<2xi32>
  %c64 = arith.constant dense<64> : tensor<2x1xi32>
  %re = tt.expand_dims %rows {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
  %ro = arith.muli %re, %c64 : tensor<2x1xi32>
  %rb = tt.broadcast %ro : tensor<2x1xi32> -> tensor<2x64xi32>
  %ce = tt.expand_dims %r {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %cb = tt.broadcast %ce : tensor<1x64xi32> -> tensor<2x64xi32>
  %o = arith.addi %rb, %cb : tensor<2x64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<2x64x!tt.ptr<f32>>
  %p = tt.addptr %xs, %o : tensor<2x64x!tt.ptr<f32>>, tensor<2x64xi32>
  "tcpu.prefetch"(%p) : (tensor<2x64x!tt.ptr<f32>>) -> ()
  tt.return
}

// Lanes two fp32 elements apart within runs of 128 (Inductor's `2*x0 + 256*row`): one
// prefetch every 8 lanes still covers every line; a tile with no known step between its
// lanes (a gather with an index per lane) is not prefetched.
// CHECK-LABEL: func.func public @prefetch_strided
// CHECK: %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[EIGHT]] {
// CHECK: "tcpu.prefetch"
// CHECK-NOT: tcpu.prefetch
// CHECK: func.return
tt.func public @prefetch_strided(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %rows: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %c128 = arith.constant dense<128> : tensor<256xi32>
  %c2 = arith.constant dense<2> : tensor<256xi32>
  %c256 = arith.constant dense<256> : tensor<256xi32>
  %x0 = arith.remsi %r, %c128 : tensor<256xi32>
  %x1 = arith.divsi %r, %c128 : tensor<256xi32>
  %rs = tt.splat %rows : !tt.ptr<i32> -> tensor<256x!tt.ptr<i32>>
  %rp = tt.addptr %rs, %x1 : tensor<256x!tt.ptr<i32>>, tensor<256xi32>
  %row = tt.load %rp : tensor<256x!tt.ptr<i32>>
  %a = arith.muli %x0, %c2 : tensor<256xi32>
  %b = arith.muli %row, %c256 : tensor<256xi32>
  %o = arith.addi %a, %b : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %p = tt.addptr %xs, %o : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  "tcpu.prefetch"(%p) : (tensor<256x!tt.ptr<f32>>) -> ()
  %ip = tt.addptr %rs, %r : tensor<256x!tt.ptr<i32>>, tensor<256xi32>
  %each = tt.load %ip : tensor<256x!tt.ptr<i32>>
  %g = tt.addptr %xs, %each : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  "tcpu.prefetch"(%g) : (tensor<256x!tt.ptr<f32>>) -> ()
  tt.return
}

// An index per lane times 16 floats: every lane in a line of its own, but no run to step
// along: not prefetched either.
// CHECK-LABEL: func.func public @prefetch_scattered_rows
// CHECK-NOT: tcpu.prefetch
// CHECK: func.return
tt.func public @prefetch_scattered_rows(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %rows: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %c16 = arith.constant dense<16> : tensor<64xi32>
  %rs = tt.splat %rows : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %ip = tt.addptr %rs, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  %each = tt.load %ip : tensor<64x!tt.ptr<i32>>
  %o = arith.muli %each, %c16 : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %p = tt.addptr %xs, %o : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  "tcpu.prefetch"(%p) : (tensor<64x!tt.ptr<f32>>) -> ()
  tt.return
}

// A tile prefetch waits for the next loop over its shape in its block: the store's loop
// over the 16 chunks of 16 lanes issues one line per chunk, after its work. None before.
// CHECK-LABEL: func.func public @prefetch_spread_store
// CHECK-NOT: tcpu.prefetch
// CHECK: scf.for
// CHECK: math.exp
// CHECK: "tcpu.vstore"
// CHECK-NOT: scf.for
// CHECK: "tcpu.prefetch"
// CHECK-NEXT: }
// CHECK-NOT: tcpu.prefetch
// CHECK: func.return
tt.func public @prefetch_spread_store(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %p = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %p : tensor<256x!tt.ptr<f32>>
  %c256 = arith.constant dense<256> : tensor<256xi32>
  %q = tt.addptr %p, %c256 : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  "tcpu.prefetch"(%q) : (tensor<256x!tt.ptr<f32>>) -> ()
  %e = math.exp %v : tensor<256xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  tt.store %yp, %e : tensor<256x!tt.ptr<f32>>
  tt.return
}

// A row reduction next: the prefetch goes all at once before its loop (a layer norm's
// next row, after its mean, measured slower spread over the variance's reduction).
// CHECK-LABEL: func.func public @prefetch_spread_reduce
// CHECK: scf.for
// CHECK: "tcpu.prefetch"
// CHECK-NEXT: }
// CHECK: "tcpu.vload"
// CHECK: scf.for {{.*}} iter_args
// CHECK-NOT: tcpu.prefetch
// CHECK: func.return
tt.func public @prefetch_spread_reduce(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32>) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %p = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %p : tensor<256x!tt.ptr<f32>>
  %c256 = arith.constant dense<256> : tensor<256xi32>
  %q = tt.addptr %p, %c256 : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  "tcpu.prefetch"(%q) : (tensor<256x!tt.ptr<f32>>) -> ()
  %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  tt.store %y, %s : !tt.ptr<f32>
  tt.return
}

// A loop over another shape is not the prefetch's: it goes all at once before that loop.
// CHECK-LABEL: func.func public @prefetch_other_shape
// CHECK: scf.for
// CHECK: "tcpu.prefetch"
// CHECK-NEXT: }
// CHECK: scf.for
// CHECK: "tcpu.vstore"
// CHECK-NOT: tcpu.prefetch
// CHECK: func.return
tt.func public @prefetch_other_shape(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %r2 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %p = tt.addptr %xs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %p : tensor<256x!tt.ptr<f32>>
  %xs2 = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %q = tt.addptr %xs2, %r2 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  "tcpu.prefetch"(%q) : (tensor<64x!tt.ptr<f32>>) -> ()
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  tt.store %yp, %v : tensor<256x!tt.ptr<f32>>
  tt.return
}

// A gather's prefetch issued by the store's loop (Inductor's next-program rows, two fp32
// elements apart): two lines per 16-lane chunk. In lane groups of 128 both lines come from
// the group's row pointer: the index load and the division run once per group, not
// again for the second line.
// CHECK-LABEL: func.func public @prefetch_in_groups
// CHECK-COUNT-2: "tcpu.load"
// CHECK: scf.for
// CHECK-NOT: "tcpu.load"
// CHECK-NOT: arith.divsi
// CHECK: "tcpu.prefetch"
// CHECK-NOT: "tcpu.load"
// CHECK-NOT: arith.divsi
// CHECK: "tcpu.prefetch"
// CHECK-NEXT: }
tt.func public @prefetch_in_groups(%idx: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %t: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %c512 = arith.constant 512 : i32
  %c128 = arith.constant dense<128> : tensor<512xi32>
  %c256 = arith.constant dense<256> : tensor<512xi32>
  %c2 = arith.constant dense<2> : tensor<512xi32>
  %pid = tt.get_program_id x : i32
  %base = arith.muli %pid, %c512 : i32
  %next = arith.addi %base, %c512 : i32
  %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32>
  %bs = tt.splat %base : i32 -> tensor<512xi32>
  %x = arith.addi %bs, %r : tensor<512xi32>
  %x1 = arith.divsi %x, %c128 : tensor<512xi32>
  %x0 = arith.remsi %x, %c128 : tensor<512xi32>
  %is = tt.splat %idx : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>>
  %ip = tt.addptr %is, %x1 : tensor<512x!tt.ptr<i32>>, tensor<512xi32>
  %row = tt.load %ip : tensor<512x!tt.ptr<i32>>
  %ro = arith.muli %row, %c256 : tensor<512xi32>
  %o = arith.addi %ro, %x0 : tensor<512xi32>
  %ts = tt.splat %t : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %tp = tt.addptr %ts, %o : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  %v = tt.load %tp : tensor<512x!tt.ptr<f32>>
  %ns = tt.splat %next : i32 -> tensor<512xi32>
  %nx = arith.addi %ns, %r : tensor<512xi32>
  %n1 = arith.divsi %nx, %c128 : tensor<512xi32>
  %n0 = arith.remsi %nx, %c128 : tensor<512xi32>
  %nip = tt.addptr %is, %n1 : tensor<512x!tt.ptr<i32>>, tensor<512xi32>
  %nrow = tt.load %nip : tensor<512x!tt.ptr<i32>>
  %nro = arith.muli %nrow, %c256 : tensor<512xi32>
  %n2 = arith.muli %n0, %c2 : tensor<512xi32>
  %no = arith.addi %nro, %n2 : tensor<512xi32>
  %np = tt.addptr %ts, %no : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  "tcpu.prefetch"(%np) : (tensor<512x!tt.ptr<f32>>) -> ()
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %x : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  tt.store %yp, %v : tensor<512x!tt.ptr<f32>>
  tt.return
}
