// RUN: triton-cpu-opt %s -p prefetch-next-program | FileCheck %s
// RUN: triton-cpu-opt %s -p 'prefetch-next-program{indirect=false}' | FileCheck %s --check-prefix=DIRECT

// A row per program: after the first reduction over the loaded row, the same address
// computation runs again with the next program's ids (axis 0 first, wrapping into 1 and 2)
// and feeds tcpu.prefetch. The weight load does not depend on the program id: no prefetch.
// CHECK-LABEL: tt.func public @row_per_program
// CHECK: %[[X:.*]] = tt.load %[[P:[a-z0-9_]+]]
// CHECK: %[[W:.*]] = tt.load
// CHECK: "tt.reduce"(%[[X]])
// CHECK: tt.reduce.return
// CHECK-NEXT: })
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[PX:.*]] = tt.get_program_id x
// CHECK-NEXT: %[[BX:.*]] = arith.addi %[[PX]], %[[ONE]]
// CHECK-NEXT: %[[GX:.*]] = tt.get_num_programs x
// CHECK-NEXT: %[[WX:.*]] = arith.cmpi sge, %[[BX]], %[[GX]]
// CHECK-NEXT: %[[NX:.*]] = arith.select %[[WX]], %[[ZERO]], %[[BX]]
// CHECK: %[[OFF:.*]] = arith.muli %[[NX]], %stride
// CHECK-NEXT: %[[BASE:.*]] = tt.addptr %x, %[[OFF]]
// CHECK-NEXT: %[[SPLAT:.*]] = tt.splat %[[BASE]]
// CHECK-NEXT: %[[NP:.*]] = tt.addptr %[[SPLAT]], %r
// CHECK-NEXT: "tcpu.prefetch"(%[[NP]]) : (tensor<256x!tt.ptr<f32>>) -> ()
// CHECK-NOT: tcpu.prefetch
// CHECK: tt.return
tt.func public @row_per_program(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %w: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %stride: i32) {
  %pid = tt.get_program_id x : i32
  %row = arith.muli %pid, %stride : i32
  %base = tt.addptr %x, %row : !tt.ptr<f32>, i32
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %bs = tt.splat %base : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %p = tt.addptr %bs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %p : tensor<256x!tt.ptr<f32>>
  %ws = tt.splat %w : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %wp = tt.addptr %ws, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %wv = tt.load %wp : tensor<256x!tt.ptr<f32>>
  %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  %ss = tt.splat %s : f32 -> tensor<256xf32>
  %d = arith.subf %v, %ss : tensor<256xf32>
  %o = arith.mulf %d, %wv : tensor<256xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  tt.store %yp, %o : tensor<256x!tt.ptr<f32>>
  tt.return
}

// A persistent loop over rows starting at the program id: the next iteration's row, or at
// the last iteration the next program's first row (its lower bound, recomputed).
// CHECK-LABEL: tt.func public @persistent_rows
// CHECK: scf.for %row = %pid to %n step %step
// CHECK: "tt.reduce"
// CHECK: %[[NEXT:.*]] = arith.addi %row, %step
// CHECK-NEXT: %[[MORE:.*]] = arith.cmpi slt, %[[NEXT]], %n
// CHECK: %[[NPX:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i32
// CHECK: %[[ROW:.*]] = arith.select %[[MORE]], %[[NEXT]], %[[NPX]] : i32
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[ROW]], %stride
// CHECK: "tcpu.prefetch"
// CHECK: tt.store
tt.func public @persistent_rows(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %stride: i32, %n: i32) {
  %pid = tt.get_program_id x : i32
  %step = tt.get_num_programs x : i32
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  scf.for %row = %pid to %n step %step : i32 {
    %off = arith.muli %row, %stride : i32
    %base = tt.addptr %x, %off : !tt.ptr<f32>, i32
    %bs = tt.splat %base : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %p = tt.addptr %bs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    %v = tt.load %p : tensor<256x!tt.ptr<f32>>
    %m = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %c = arith.maxnumf %a, %b : f32
      tt.reduce.return %c : f32
    }) : (tensor<256xf32>) -> f32
    %ms = tt.splat %m : f32 -> tensor<256xf32>
    %d = arith.subf %v, %ms : tensor<256xf32>
    %ybase = tt.addptr %y, %off : !tt.ptr<f32>, i32
    %ys = tt.splat %ybase : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    tt.store %yp, %d : tensor<256x!tt.ptr<f32>>
  }
  tt.return
}

// A loop over the blocks of a row that accumulates each block into a loop-carried tensor
// (upstream's layer norm): the prefetch goes at the end of the iteration, before the yield;
// at the last iteration it is the next program's first block.
// CHECK-LABEL: tt.func public @accumulated_blocks
// CHECK: scf.for %off = %c0 to %n step %c256
// CHECK: %[[V:.*]] = tt.load
// CHECK: %[[A:.*]] = arith.addf %acc, %[[V]]
// CHECK: %[[NEXT:.*]] = arith.addi %off, %c256
// CHECK: "tcpu.prefetch"
// CHECK-NEXT: scf.yield %[[A]]
tt.func public @accumulated_blocks(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32>, %n: i32) {
  %pid = tt.get_program_id x : i32
  %c0 = arith.constant 0 : i32
  %c256 = arith.constant 256 : i32
  %zero = arith.constant dense<0.0> : tensor<256xf32>
  %start = arith.muli %pid, %n : i32
  %row = tt.addptr %x, %start : !tt.ptr<f32>, i32
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %xs = tt.splat %row : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %sum = scf.for %off = %c0 to %n step %c256 iter_args(%acc = %zero) -> (tensor<256xf32>) : i32 {
    %os = tt.splat %off : i32 -> tensor<256xi32>
    %cols = arith.addi %os, %r : tensor<256xi32>
    %p = tt.addptr %xs, %cols : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    %v = tt.load %p : tensor<256x!tt.ptr<f32>>
    %a = arith.addf %acc, %v : tensor<256xf32>
    scf.yield %a : tensor<256xf32>
  }
  %t = "tt.reduce"(%sum) <{axis = 0 : i32}> ({
  ^bb0(%l: f32, %q: f32):
    %c = arith.addf %l, %q : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  %tp = tt.addptr %y, %pid : !tt.ptr<f32>, i32
  tt.store %tp, %t : !tt.ptr<f32>
  tt.return
}

// The same loop in 16-element tiles: the address moves by 64 bytes (a line) per iteration,
// a stream the hardware prefetcher follows; no prefetch.
// CHECK-LABEL: tt.func public @accumulated_small_tiles
// CHECK-NOT: tcpu.prefetch
// CHECK: tt.return
tt.func public @accumulated_small_tiles(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32>, %n: i32) {
  %pid = tt.get_program_id x : i32
  %c0 = arith.constant 0 : i32
  %c16 = arith.constant 16 : i32
  %zero = arith.constant dense<0.0> : tensor<16xf32>
  %start = arith.muli %pid, %n : i32
  %ss = tt.splat %start : i32 -> tensor<16xi32>
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %sum = scf.for %off = %c0 to %n step %c16 iter_args(%acc = %zero) -> (tensor<16xf32>) : i32 {
    %os = tt.splat %off : i32 -> tensor<16xi32>
    %cols = arith.addi %os, %r : tensor<16xi32>
    %idx = arith.addi %ss, %cols : tensor<16xi32>
    %p = tt.addptr %xs, %idx : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %v = tt.load %p : tensor<16x!tt.ptr<f32>>
    %a = arith.addf %acc, %v : tensor<16xf32>
    scf.yield %a : tensor<16xf32>
  }
  %t = "tt.reduce"(%sum) <{axis = 0 : i32}> ({
  ^bb0(%l: f32, %q: f32):
    %c = arith.addf %l, %q : f32
    tt.reduce.return %c : f32
  }) : (tensor<16xf32>) -> f32
  %tp = tt.addptr %y, %pid : !tt.ptr<f32>, i32
  tt.store %tp, %t : !tt.ptr<f32>
  tt.return
}

// Left alone: an elementwise kernel (no reduction reads the load: the hardware prefetcher
// follows its contiguous stream), an address read through two loads, a loop-carried
// pointer, and a loop reading the same tile in every iteration.
// CHECK-LABEL: tt.func public @left_alone
// CHECK-NOT: tcpu.prefetch
// CHECK: tt.return
tt.func public @left_alone(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %idx: !tt.ptr<i32>, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %pid = tt.get_program_id x : i32
  %c256 = arith.constant 256 : i32
  %start = arith.muli %pid, %c256 : i32
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %ss = tt.splat %start : i32 -> tensor<256xi32>
  %offs = arith.addi %ss, %r : tensor<256xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %p = tt.addptr %xs, %offs : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %v = tt.load %p : tensor<256x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %offs : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  tt.store %yp, %v : tensor<256x!tt.ptr<f32>>
  %ip = tt.addptr %idx, %pid : !tt.ptr<i32>, i32
  %i1 = tt.load %ip : !tt.ptr<i32>
  %ip2 = tt.addptr %idx, %i1 : !tt.ptr<i32>, i32
  %row = tt.load %ip2 : !tt.ptr<i32>
  %rb = tt.addptr %x, %row : !tt.ptr<f32>, i32
  %rs = tt.splat %rb : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %rp = tt.addptr %rs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %g = tt.load %rp : tensor<256x!tt.ptr<f32>>
  %gs = "tt.reduce"(%g) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tt.reduce.return %c : f32
  }) : (tensor<256xf32>) -> f32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %res:2 = scf.for %i = %c0 to %n step %c1 iter_args(%q = %p, %acc = %zero) -> (tensor<256x!tt.ptr<f32>>, f32) : i32 {
    %lv = tt.load %q : tensor<256x!tt.ptr<f32>>
    %ls = "tt.reduce"(%lv) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tt.reduce.return %c : f32
    }) : (tensor<256xf32>) -> f32
    %acc2 = arith.addf %acc, %ls : f32
    %q2 = tt.addptr %q, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
    scf.yield %q2, %acc2 : tensor<256x!tt.ptr<f32>>, f32
  }
  %t = arith.addf %gs, %res#1 : f32
  %tp = tt.addptr %y, %pid : !tt.ptr<f32>, i32
  tt.store %tp, %t : !tt.ptr<f32>
  %q = tt.addptr %rp, %ss : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  scf.for %j = %c0 to %n step %c1 : i32 {
    %qv = tt.load %q : tensor<256x!tt.ptr<f32>>
    %qs = "tt.reduce"(%qv) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tt.reduce.return %c : f32
    }) : (tensor<256xf32>) -> f32
    tt.store %tp, %qs : !tt.ptr<f32>
    %iv = tt.load %p : tensor<256x!tt.ptr<f32>>
    %is = "tt.reduce"(%iv) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tt.reduce.return %c : f32
    }) : (tensor<256xf32>) -> f32
    tt.store %tp, %is : !tt.ptr<f32>
  }
  tt.return
}

// A gather (Inductor's `table[idx]` with `e[:, ::2] + e[:, 1::2]`): no reduction, but the
// rows come from an index load, which the hardware prefetcher cannot follow. The index load
// itself is cloned with the next program's ids, and one prefetch covers both loads (they
// differ by one element: the same lines). Without `indirect`, nothing.
// CHECK-LABEL: tt.func public @gather_rows
// CHECK: %[[T:.*]] = tt.load %[[TP:[a-z0-9_]+]] : tensor<512x!tt.ptr<i64>>
// CHECK: %[[A:.*]] = tt.load %[[AP:[a-z0-9_]+]] : tensor<512x!tt.ptr<f32>>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[NX:.*]] = arith.select
// CHECK: %[[NOFF:.*]] = arith.muli %[[NX]], %c512
// CHECK: %[[NT:.*]] = tt.load %{{.*}} : tensor<512x!tt.ptr<i64>>
// CHECK: arith.muli %[[NT]], %c256
// CHECK: %[[NP:.*]] = tt.addptr
// CHECK-NEXT: "tcpu.prefetch"(%[[NP]]) : (tensor<512x!tt.ptr<f32>>) -> ()
// CHECK-NOT: tcpu.prefetch
// CHECK: tt.return
// DIRECT-LABEL: tt.func public @gather_rows
// DIRECT-NOT: tcpu.prefetch
// DIRECT: tt.return
tt.func public @gather_rows(%idx: !tt.ptr<i64> {tt.divisibility = 16 : i32}, %table: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %pid = tt.get_program_id x : i32
  %c512 = arith.constant 512 : i32
  %start = arith.muli %pid, %c512 : i32
  %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32>
  %ss = tt.splat %start : i32 -> tensor<512xi32>
  %xi = arith.addi %ss, %r : tensor<512xi32>
  %c128 = arith.constant dense<128> : tensor<512xi32>
  %x1 = arith.divsi %xi, %c128 : tensor<512xi32>
  %x0 = arith.remsi %xi, %c128 : tensor<512xi32>
  %is = tt.splat %idx : !tt.ptr<i64> -> tensor<512x!tt.ptr<i64>>
  %ip = tt.addptr %is, %x1 : tensor<512x!tt.ptr<i64>>, tensor<512xi32>
  %t = tt.load %ip : tensor<512x!tt.ptr<i64>>
  %c2 = arith.constant dense<2> : tensor<512xi32>
  %c256 = arith.constant dense<256> : tensor<512xi64>
  %two_x0 = arith.muli %x0, %c2 : tensor<512xi32>
  %wide = arith.extsi %two_x0 : tensor<512xi32> to tensor<512xi64>
  %row = arith.muli %t, %c256 : tensor<512xi64>
  %off = arith.addi %wide, %row : tensor<512xi64>
  %ts = tt.splat %table : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %ap = tt.addptr %ts, %off : tensor<512x!tt.ptr<f32>>, tensor<512xi64>
  %a = tt.load %ap : tensor<512x!tt.ptr<f32>>
  %c1 = arith.constant dense<1> : tensor<512xi64>
  %off1 = arith.addi %off, %c1 : tensor<512xi64>
  %bp = tt.addptr %ts, %off1 : tensor<512x!tt.ptr<f32>>, tensor<512xi64>
  %b = tt.load %bp : tensor<512x!tt.ptr<f32>>
  %sum = arith.addf %a, %b : tensor<512xf32>
  %os = tt.splat %out : !tt.ptr<f32> -> tensor<512x!tt.ptr<f32>>
  %op = tt.addptr %os, %xi : tensor<512x!tt.ptr<f32>>, tensor<512xi32>
  tt.store %op, %sum : tensor<512x!tt.ptr<f32>>
  tt.return
}

// A matmul's K loop in uniform-loop-increments' form (loop-carried offsets advanced by a
// loop-invariant step): right before the dot, each operand's next tile, from the offsets'
// next values, in a `spread` prefetch (issued by the dot's micro-kernel). A dot in the
// function body, or on a tile that is the same in every iteration (%w), is not prefetched.
// CHECK-LABEL: tt.func public @matmul_k_loop
// CHECK: tt.dot
// CHECK: scf.for %{{.*}} iter_args(%[[OA:.*]] = %{{.*}}, %[[OB:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: %[[A:.*]] = tt.load
// CHECK: %[[B:.*]] = tt.load
// CHECK: %[[W:.*]] = tt.load
// CHECK-NEXT: %[[NA:.*]] = arith.addi %[[OA]], %[[SA:[a-z0-9_]+]] : i64
// CHECK-NEXT: %[[SNA:.*]] = tt.splat %[[NA]]
// CHECK-NEXT: %[[PA:.*]] = tt.addptr %[[TA:[a-z0-9_]+]], %[[SNA]]
// CHECK-NEXT: "tcpu.prefetch"(%[[PA]]) <{spread}> : (tensor<16x32x!tt.ptr<f32>>) -> ()
// CHECK-NEXT: %[[NB:.*]] = arith.addi %[[OB]], %[[SB:[a-z0-9_]+]] : i64
// CHECK-NEXT: %[[SNB:.*]] = tt.splat %[[NB]]
// CHECK-NEXT: %[[PB:.*]] = tt.addptr %[[TB:[a-z0-9_]+]], %[[SNB]]
// CHECK-NEXT: "tcpu.prefetch"(%[[PB]]) <{spread}> : (tensor<32x16x!tt.ptr<f32>>) -> ()
// CHECK-NEXT: tt.dot %[[A]], %[[B]]
// CHECK-NOT: tcpu.prefetch
// CHECK: tt.return
tt.func public @matmul_k_loop(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %b: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %c: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %k: i32) {
  %r16 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %r32 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %c32 = arith.constant dense<32> : tensor<16x1xi32>
  %c16 = arith.constant dense<16> : tensor<32x1xi32>
  %am = tt.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ams = arith.muli %am, %c32 : tensor<16x1xi32>
  %amb = tt.broadcast %ams : tensor<16x1xi32> -> tensor<16x32xi32>
  %ak = tt.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %akb = tt.broadcast %ak : tensor<1x32xi32> -> tensor<16x32xi32>
  %aoff = arith.addi %amb, %akb : tensor<16x32xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>>
  %ta = tt.addptr %as, %aoff : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi32>
  %bk = tt.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %bks = arith.muli %bk, %c16 : tensor<32x1xi32>
  %bkb = tt.broadcast %bks : tensor<32x1xi32> -> tensor<32x16xi32>
  %bn = tt.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %bnb = tt.broadcast %bn : tensor<1x16xi32> -> tensor<32x16xi32>
  %boff = arith.addi %bkb, %bnb : tensor<32x16xi32>
  %bs = tt.splat %b : !tt.ptr<f32> -> tensor<32x16x!tt.ptr<f32>>
  %tb = tt.addptr %bs, %boff : tensor<32x16x!tt.ptr<f32>>, tensor<32x16xi32>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %a0 = tt.load %ta : tensor<16x32x!tt.ptr<f32>>
  %w = tt.load %tb : tensor<32x16x!tt.ptr<f32>>
  %first = tt.dot %a0, %w, %zero : tensor<16x32xf32> * tensor<32x16xf32> -> tensor<16x16xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c0_64 = arith.constant 0 : i64
  %sa = arith.constant 32 : i64
  %sb = arith.constant 512 : i64
  %res:3 = scf.for %i = %c0 to %k step %c1 iter_args(%oa = %c0_64, %ob = %c0_64, %acc = %first) -> (i64, i64, tensor<16x16xf32>) : i32 {
    %soa = tt.splat %oa : i64 -> tensor<16x32xi64>
    %pa = tt.addptr %ta, %soa : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi64>
    %sob = tt.splat %ob : i64 -> tensor<32x16xi64>
    %pb = tt.addptr %tb, %sob : tensor<32x16x!tt.ptr<f32>>, tensor<32x16xi64>
    %va = tt.load %pa : tensor<16x32x!tt.ptr<f32>>
    %vb = tt.load %pb : tensor<32x16x!tt.ptr<f32>>
    %vw = tt.load %tb : tensor<32x16x!tt.ptr<f32>>
    %d = tt.dot %va, %vb, %acc : tensor<16x32xf32> * tensor<32x16xf32> -> tensor<16x16xf32>
    %d2 = tt.dot %va, %vw, %d : tensor<16x32xf32> * tensor<32x16xf32> -> tensor<16x16xf32>
    %na = arith.addi %oa, %sa : i64
    %nb = arith.addi %ob, %sb : i64
    scf.yield %na, %nb, %d2 : i64, i64, tensor<16x16xf32>
  }
  %cm = tt.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %cmb = tt.broadcast %cm : tensor<16x1xi32> -> tensor<16x16xi32>
  %cs = tt.splat %c : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %cp = tt.addptr %cs, %cmb : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %cp, %res#2 : tensor<16x16x!tt.ptr<f32>>
  tt.return
}

// A gather in the function body read by a dot: the dot has no next instance in this
// program, but the gathered rows are prefetched for the next program, as any gather's.
// CHECK-LABEL: tt.func public @gather_into_dot
// CHECK: %[[G:.*]] = tt.load %{{.*}} : tensor<16x32x!tt.ptr<f32>>
// CHECK: "tcpu.prefetch"(%{{.*}}) : (tensor<16x32x!tt.ptr<f32>>) -> ()
// CHECK-NOT: spread
// CHECK: tt.dot %[[G]]
tt.func public @gather_into_dot(%idx: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %table: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %w: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %out: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %pid = tt.get_program_id x : i32
  %c16 = arith.constant 16 : i32
  %base = arith.muli %pid, %c16 : i32
  %r16 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %r32 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %bs = tt.splat %base : i32 -> tensor<16xi32>
  %rows = arith.addi %bs, %r16 : tensor<16xi32>
  %is = tt.splat %idx : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>
  %ip = tt.addptr %is, %rows : tensor<16x!tt.ptr<i32>>, tensor<16xi32>
  %t = tt.load %ip : tensor<16x!tt.ptr<i32>>
  %c32 = arith.constant dense<32> : tensor<16xi32>
  %toff = arith.muli %t, %c32 : tensor<16xi32>
  %te = tt.expand_dims %toff {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %tb = tt.broadcast %te : tensor<16x1xi32> -> tensor<16x32xi32>
  %ce = tt.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %cb = tt.broadcast %ce : tensor<1x32xi32> -> tensor<16x32xi32>
  %go = arith.addi %tb, %cb : tensor<16x32xi32>
  %ts = tt.splat %table : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>>
  %gp = tt.addptr %ts, %go : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi32>
  %g = tt.load %gp : tensor<16x32x!tt.ptr<f32>>
  %c16t = arith.constant dense<16> : tensor<32x1xi32>
  %wk = tt.expand_dims %r32 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
  %wks = arith.muli %wk, %c16t : tensor<32x1xi32>
  %wkb = tt.broadcast %wks : tensor<32x1xi32> -> tensor<32x16xi32>
  %wn = tt.expand_dims %r16 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
  %wnb = tt.broadcast %wn : tensor<1x16xi32> -> tensor<32x16xi32>
  %wo = arith.addi %wkb, %wnb : tensor<32x16xi32>
  %ws = tt.splat %w : !tt.ptr<f32> -> tensor<32x16x!tt.ptr<f32>>
  %wp = tt.addptr %ws, %wo : tensor<32x16x!tt.ptr<f32>>, tensor<32x16xi32>
  %wv = tt.load %wp : tensor<32x16x!tt.ptr<f32>>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %d = tt.dot %g, %wv, %zero : tensor<16x32xf32> * tensor<32x16xf32> -> tensor<16x16xf32>
  %oe = tt.expand_dims %rows {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %c16o = arith.constant dense<16> : tensor<16x1xi32>
  %oo = arith.muli %oe, %c16o : tensor<16x1xi32>
  %ob = tt.broadcast %oo : tensor<16x1xi32> -> tensor<16x16xi32>
  %wnb2 = tt.broadcast %wn : tensor<1x16xi32> -> tensor<16x16xi32>
  %oo2 = arith.addi %ob, %wnb2 : tensor<16x16xi32>
  %os = tt.splat %out : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %op = tt.addptr %os, %oo2 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
  tt.store %op, %d : tensor<16x16x!tt.ptr<f32>>
  tt.return
}

// The same loop unrolled by two (unroll-tile-dot-loops): the offset advances twice per
// iteration, and the second copy reads it after one advance. Each copy's next tile is
// computed from the offset's next value (both advances cloned, then the second copy's own).
// CHECK-LABEL: tt.func public @unrolled_k_loop
// CHECK: scf.for %{{.*}} iter_args(%[[OA:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: %[[A0:.*]] = tt.load
// CHECK-NEXT: %[[N1:.*]] = arith.addi %[[OA]], %[[SA:[a-z0-9_]+]] : i64
// CHECK-NEXT: %[[N2:.*]] = arith.addi %[[N1]], %[[SA]] : i64
// CHECK-NEXT: %[[S0:.*]] = tt.splat %[[N2]]
// CHECK-NEXT: %[[P0:.*]] = tt.addptr %{{.*}}, %[[S0]]
// CHECK-NEXT: "tcpu.prefetch"(%[[P0]]) <{spread}>
// CHECK-NEXT: %[[D0:.*]] = tt.dot %[[A0]]
// CHECK: %[[A1:.*]] = tt.load
// CHECK-NEXT: %[[M1:.*]] = arith.addi %[[OA]], %[[SA]] : i64
// CHECK-NEXT: %[[M2:.*]] = arith.addi %[[M1]], %[[SA]] : i64
// CHECK-NEXT: %[[M3:.*]] = arith.addi %[[M2]], %[[SA]] : i64
// CHECK-NEXT: %[[S1:.*]] = tt.splat %[[M3]]
// CHECK-NEXT: %[[P1:.*]] = tt.addptr %{{.*}}, %[[S1]]
// CHECK-NEXT: "tcpu.prefetch"(%[[P1]]) <{spread}>
// CHECK-NEXT: tt.dot %[[A1]], %{{.*}}, %[[D0]]
tt.func public @unrolled_k_loop(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %b: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %c: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %k: i32) {
  %r16 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %r32 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %c32 = arith.constant dense<32> : tensor<16x1xi32>
  %am = tt.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ams = arith.muli %am, %c32 : tensor<16x1xi32>
  %amb = tt.broadcast %ams : tensor<16x1xi32> -> tensor<16x32xi32>
  %ak = tt.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %akb = tt.broadcast %ak : tensor<1x32xi32> -> tensor<16x32xi32>
  %aoff = arith.addi %amb, %akb : tensor<16x32xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>>
  %ta = tt.addptr %as, %aoff : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi32>
  %bs = tt.splat %b : !tt.ptr<f32> -> tensor<32x16x!tt.ptr<f32>>
  %w = tt.load %bs : tensor<32x16x!tt.ptr<f32>>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %c0_64 = arith.constant 0 : i64
  %sa = arith.constant 32 : i64
  %res:2 = scf.for %i = %c0 to %k step %c2 iter_args(%oa = %c0_64, %acc = %zero) -> (i64, tensor<16x16xf32>) : i32 {
    %soa = tt.splat %oa : i64 -> tensor<16x32xi64>
    %pa = tt.addptr %ta, %soa : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi64>
    %va = tt.load %pa : tensor<16x32x!tt.ptr<f32>>
    %d = tt.dot %va, %w, %acc : tensor<16x32xf32> * tensor<32x16xf32> -> tensor<16x16xf32>
    %o1 = arith.addi %oa, %sa : i64
    %soa1 = tt.splat %o1 : i64 -> tensor<16x32xi64>
    %pa1 = tt.addptr %ta, %soa1 : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi64>
    %va1 = tt.load %pa1 : tensor<16x32x!tt.ptr<f32>>
    %d1 = tt.dot %va1, %w, %d : tensor<16x32xf32> * tensor<32x16xf32> -> tensor<16x16xf32>
    %o2 = arith.addi %o1, %sa : i64
    scf.yield %o2, %d1 : i64, tensor<16x16xf32>
  }
  %cs = tt.splat %c : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  tt.store %cs, %res#1 : tensor<16x16x!tt.ptr<f32>>
  tt.return
}

// A K loop nested in a loop over tiles (a persistent matmul): its dot operand's next tile
// is prefetched as at the top level. A load in a nested loop that no dot reads (here a
// reduction's) is not: nested loops are taken for their dots only.
// CHECK-LABEL: tt.func public @nested_k_loop
// CHECK: scf.for
// CHECK: scf.for %{{.*}} iter_args(%[[OA:.*]] = %{{.*}}, %{{.*}} = %{{.*}})
// CHECK: %[[A0:.*]] = tt.load
// CHECK-NEXT: %[[N:.*]] = arith.addi %[[OA]], %{{.*}} : i64
// CHECK-NEXT: %[[S:.*]] = tt.splat %[[N]]
// CHECK-NEXT: %[[P:.*]] = tt.addptr %{{.*}}, %[[S]]
// CHECK-NEXT: "tcpu.prefetch"(%[[P]]) <{spread}>
// CHECK-NEXT: tt.dot %[[A0]]
// CHECK: scf.for
// CHECK-NOT: tcpu.prefetch
// CHECK: tt.return
tt.func public @nested_k_loop(%a: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %b: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %c: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %k: i32, %tiles: i32) {
  %r16 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %r32 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %c32 = arith.constant dense<32> : tensor<16x1xi32>
  %am = tt.expand_dims %r16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %ams = arith.muli %am, %c32 : tensor<16x1xi32>
  %amb = tt.broadcast %ams : tensor<16x1xi32> -> tensor<16x32xi32>
  %ak = tt.expand_dims %r32 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %akb = tt.broadcast %ak : tensor<1x32xi32> -> tensor<16x32xi32>
  %aoff = arith.addi %amb, %akb : tensor<16x32xi32>
  %as = tt.splat %a : !tt.ptr<f32> -> tensor<16x32x!tt.ptr<f32>>
  %ta = tt.addptr %as, %aoff : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi32>
  %bs = tt.splat %b : !tt.ptr<f32> -> tensor<32x16x!tt.ptr<f32>>
  %w = tt.load %bs : tensor<32x16x!tt.ptr<f32>>
  %zero = arith.constant dense<0.0> : tensor<16x16xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c0_64 = arith.constant 0 : i64
  %sa = arith.constant 32 : i64
  %cs = tt.splat %c : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
  %xs = tt.splat %c : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r32 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %c32s = arith.constant 32 : i32
  scf.for %t = %c0 to %tiles step %c1 : i32 {
    %res:2 = scf.for %i = %c0 to %k step %c1 iter_args(%oa = %c0_64, %acc = %zero) -> (i64, tensor<16x16xf32>) : i32 {
      %soa = tt.splat %oa : i64 -> tensor<16x32xi64>
      %pa = tt.addptr %ta, %soa : tensor<16x32x!tt.ptr<f32>>, tensor<16x32xi64>
      %va = tt.load %pa : tensor<16x32x!tt.ptr<f32>>
      %d = tt.dot %va, %w, %acc : tensor<16x32xf32> * tensor<32x16xf32> -> tensor<16x16xf32>
      %na = arith.addi %oa, %sa : i64
      scf.yield %na, %d : i64, tensor<16x16xf32>
    }
    tt.store %cs, %res#1 : tensor<16x16x!tt.ptr<f32>>
    %s = scf.for %i = %c0 to %k step %c1 iter_args(%sum = %c0) -> (i32) : i32 {
      %si = arith.muli %i, %c32s : i32
      %sp = tt.splat %si : i32 -> tensor<32xi32>
      %xi = tt.addptr %xp, %sp : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %x = tt.load %xi : tensor<32x!tt.ptr<f32>>
      %m = "tt.reduce"(%x) <{axis = 0 : i32}> ({
      ^bb0(%l: f32, %r: f32):
        %mx = arith.maxnumf %l, %r : f32
        tt.reduce.return %mx : f32
      }) : (tensor<32xf32>) -> f32
      %mi = arith.fptosi %m : f32 to i32
      %ns = arith.addi %sum, %mi : i32
      scf.yield %ns : i32
    }
    %sf = arith.sitofp %s : i32 to f32
    tt.store %c, %sf : !tt.ptr<f32>
  }
  tt.return
}

// Each branch of an scf.if in the function body (version-single-iteration-loops' copies)
// is treated as a body of its own: its load read by a reduction prefetches the next
// program's row, once per branch.
// CHECK-LABEL: tt.func public @in_branches
// CHECK: scf.if %c {
// CHECK: "tt.reduce"
// CHECK: "tcpu.prefetch"
// CHECK: } else {
// CHECK: "tt.reduce"
// CHECK: "tcpu.prefetch"
// CHECK: }
// CHECK-NOT: tcpu.prefetch
tt.func public @in_branches(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32>, %stride: i32, %c: i1) {
  %pid = tt.get_program_id x : i32
  %row = arith.muli %pid, %stride : i32
  %base = tt.addptr %x, %row : !tt.ptr<f32>, i32
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %bs = tt.splat %base : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>>
  %p = tt.addptr %bs, %r : tensor<256x!tt.ptr<f32>>, tensor<256xi32>
  %yp = tt.addptr %y, %pid : !tt.ptr<f32>, i32
  scf.if %c {
    %v = tt.load %p : tensor<256x!tt.ptr<f32>>
    %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.addf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<256xf32>) -> f32
    tt.store %yp, %s : !tt.ptr<f32>
  } else {
    %v = tt.load %p : tensor<256x!tt.ptr<f32>>
    %s = "tt.reduce"(%v) <{axis = 0 : i32}> ({
    ^bb0(%a: f32, %b: f32):
      %t = arith.maxnumf %a, %b : f32
      tt.reduce.return %t : f32
    }) : (tensor<256xf32>) -> f32
    tt.store %yp, %s : !tt.ptr<f32>
  }
  tt.return
}
