// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// Offsets through x % m and x // m (the tutorials' `rn % N`). When x is proven >= 0
// (program ids, aranges, their sums and products) a run of consecutive x that starts at a
// multiple of its length, with m a multiple of that length, stays consecutive under % and
// constant under //: a plain vector load, a scalar load broadcast.
// CHECK-LABEL: func.func public @proven
// CHECK-NOT: tcpu.is_contiguous
// CHECK-NOT: tcpu.gather
// CHECK: "tcpu.vload"
// CHECK: "tcpu.load"
// CHECK: vector.broadcast
// CHECK-NOT: tcpu.gather
tt.func public @proven(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32},
                       %m: i32 {tt.divisibility = 16 : i32}) {
  %pid = tt.get_program_id x : i32
  %c16 = arith.constant 16 : i32
  %base = arith.muli %pid, %c16 : i32
  %bs = tt.splat %base : i32 -> tensor<16xi32>
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %offs = arith.addi %bs, %r : tensor<16xi32>
  %ms = tt.splat %m : i32 -> tensor<16xi32>
  %wrapped = arith.remsi %offs, %ms : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %wrapped : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %a = tt.load %xp : tensor<16x!tt.ptr<f32>>
  %q = arith.divsi %offs, %ms : tensor<16xi32>
  %qp = tt.addptr %xs, %q : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %b = tt.load %qp : tensor<16x!tt.ptr<f32>>
  %s = arith.addf %a, %b : tensor<16xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  tt.store %yp, %s : tensor<16x!tt.ptr<f32>>
  tt.return
}

// x = arange - s may be negative, and -32 % 32 == 0 but -31 % 32 == -31: consecutive
// only if the run holds no negative multiple of m. The lowering checks the lanes'
// pointers at run time and falls back to a gather (a scatter for stores).
// CHECK-LABEL: func.func public @assumed
// CHECK: %[[PTRS:.*]] = "tcpu.addptr"(%{{.*}}, %{{.*}}) : (vector<16x!tt.ptr<f32>>, vector<16xi32>) -> vector<16x!tt.ptr<f32>>
// CHECK: %[[OK:.*]] = "tcpu.is_contiguous"(%[[PTRS]]) : (vector<16x!tt.ptr<f32>>) -> i1
// CHECK: %[[P0:.*]] = vector.extract %[[PTRS]][0]
// CHECK: scf.if %[[OK]] -> (vector<16xf32>) {
// CHECK:   "tcpu.vload"(%[[P0]])
// CHECK: } else {
// CHECK:   "tcpu.gather"(%[[PTRS]])
// CHECK: "tcpu.is_contiguous"
// CHECK: scf.if
// CHECK:   "tcpu.vstore"
// CHECK: } else {
// CHECK:   "tcpu.scatter"
tt.func public @assumed(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %s: i32 {tt.divisibility = 16 : i32},
                        %m: i32 {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %ss = tt.splat %s : i32 -> tensor<16xi32>
  %offs = arith.subi %r, %ss : tensor<16xi32>
  %ms = tt.splat %m : i32 -> tensor<16xi32>
  %wrapped = arith.remsi %offs, %ms : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %wrapped : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %a = tt.load %xp : tensor<16x!tt.ptr<f32>>
  %d = arith.addf %a, %a : tensor<16xf32>
  tt.store %xp, %d : tensor<16x!tt.ptr<f32>>
  tt.return
}

// A remainder computed before a loop and used inside it is computed once, into a buffer,
// before the loop (x86 has no vector integer division, and LLVM does not hoist a division
// that might trap): the loop reads the buffer.
// CHECK-LABEL: func.func public @rem_outside_loop
// CHECK: memref.alloca() {{.*}} : memref<16xi32>
// CHECK: arith.remsi {{.*}} : vector<16xi32>
// CHECK: vector.store
// CHECK: scf.for
// CHECK-NOT: arith.remsi
// CHECK: vector.load
// CHECK: "tcpu.vstore"
tt.func public @rem_outside_loop(%y: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %m: i32, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %ms = tt.splat %m : i32 -> tensor<16xi32>
  %q = arith.remsi %r, %ms : tensor<16xi32>
  %ys = tt.splat %y : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>
  %yp = tt.addptr %ys, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %is = tt.splat %i : i32 -> tensor<16xi32>
    %v = arith.addi %q, %is : tensor<16xi32>
    tt.store %yp, %v : tensor<16x!tt.ptr<i32>>
  }
  tt.return
}

// The assumed contiguity of an access in a loop, whose lanes vary only through a
// remainder computed before the loop: every chunk of the remainder is checked once,
// before the loop (as integers), and the access in the loop branches on that scalar.
// CHECK-LABEL: func.func public @check_before_loop
// CHECK: arith.remsi {{.*}} : vector<16xi32>
// CHECK: %[[C0:.*]] = "tcpu.is_contiguous"(%{{.*}}) : (vector<16xi32>) -> i1
// CHECK: %[[C1:.*]] = "tcpu.is_contiguous"(%{{.*}}) : (vector<16xi32>) -> i1
// CHECK: %[[OK:.*]] = arith.andi %[[C0]], %[[C1]] : i1
// CHECK: scf.for
// CHECK-NOT: tcpu.is_contiguous
// CHECK: scf.if %[[OK]] -> (vector<16xf32>) {
// CHECK:   "tcpu.vload"
// CHECK: } else {
// CHECK:   "tcpu.gather"
// CHECK-NOT: tcpu.is_contiguous
// CHECK: func.return
tt.func public @check_before_loop(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32},
                                  %s: i32 {tt.divisibility = 16 : i32}, %m: i32 {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %ss = tt.splat %s : i32 -> tensor<32xi32>
  %offs = arith.subi %r, %ss : tensor<32xi32>
  %ms = tt.splat %m : i32 -> tensor<32xi32>
  %wrapped = arith.remsi %offs, %ms : tensor<32xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %wrapped : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %is = tt.splat %i : i32 -> tensor<32xi32>
    %xq = tt.addptr %xp, %is : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %a = tt.load %xq : tensor<32x!tt.ptr<f32>>
    tt.store %yp, %a : tensor<32x!tt.ptr<f32>>
  }
  tt.return
}

// The same, with the loop's offset added to the remainder before the address is formed
// (upstream's tutorial 03: `b_ptr + (rk[:, None] * stride + rn[None, :])`): the sum's
// lane-uniform operand shifts every lane alike, so the remainder's chunks are still
// checked once before the loop, not the pointers of every chunk in it.
// CHECK-LABEL: func.func public @summed_offset_check_before_loop
// CHECK: arith.remsi {{.*}} : vector<16xi32>
// CHECK: %[[C0:.*]] = "tcpu.is_contiguous"(%{{.*}}) : (vector<16xi32>) -> i1
// CHECK: %[[C1:.*]] = "tcpu.is_contiguous"(%{{.*}}) : (vector<16xi32>) -> i1
// CHECK: %[[OK:.*]] = arith.andi %[[C0]], %[[C1]] : i1
// CHECK: scf.for %i
// CHECK-NOT: tcpu.is_contiguous
// CHECK: scf.if %[[OK]] -> (vector<16xf32>) {
// CHECK:   "tcpu.vload"
// CHECK: } else {
// CHECK:   "tcpu.gather"
// CHECK-NOT: tcpu.is_contiguous
// CHECK: func.return
tt.func public @summed_offset_check_before_loop(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32},
                                                %s: i32 {tt.divisibility = 16 : i32}, %m: i32 {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %ss = tt.splat %s : i32 -> tensor<32xi32>
  %offs = arith.subi %r, %ss : tensor<32xi32>
  %ms = tt.splat %m : i32 -> tensor<32xi32>
  %wrapped = arith.remsi %offs, %ms : tensor<32xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %is = tt.splat %i : i32 -> tensor<32xi32>
    %sum = arith.addi %is, %wrapped : tensor<32xi32>
    %xq = tt.addptr %xs, %sum : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %a = tt.load %xq : tensor<32x!tt.ptr<f32>>
    tt.store %yp, %a : tensor<32x!tt.ptr<f32>>
  }
  tt.return
}

// The same through a difference whose subtrahend is constant along the lanes.
// CHECK-LABEL: func.func public @difference_check_before_loop
// CHECK: arith.remsi {{.*}} : vector<16xi32>
// CHECK: %[[C0:.*]] = "tcpu.is_contiguous"(%{{.*}}) : (vector<16xi32>) -> i1
// CHECK: %[[C1:.*]] = "tcpu.is_contiguous"(%{{.*}}) : (vector<16xi32>) -> i1
// CHECK: %[[OK:.*]] = arith.andi %[[C0]], %[[C1]] : i1
// CHECK: scf.for %i
// CHECK-NOT: tcpu.is_contiguous
// CHECK: scf.if %[[OK]] -> (vector<16xf32>) {
// CHECK:   "tcpu.vload"
// CHECK: } else {
// CHECK:   "tcpu.gather"
// CHECK-NOT: tcpu.is_contiguous
// CHECK: func.return
tt.func public @difference_check_before_loop(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32},
                                             %s: i32 {tt.divisibility = 16 : i32}, %m: i32 {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %ss = tt.splat %s : i32 -> tensor<32xi32>
  %offs = arith.subi %r, %ss : tensor<32xi32>
  %ms = tt.splat %m : i32 -> tensor<32xi32>
  %wrapped = arith.remsi %offs, %ms : tensor<32xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %is = tt.splat %i : i32 -> tensor<32xi32>
    %diff = arith.subi %wrapped, %is : tensor<32xi32>
    %xq = tt.addptr %xs, %diff : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %a = tt.load %xq : tensor<32x!tt.ptr<f32>>
    tt.store %yp, %a : tensor<32x!tt.ptr<f32>>
  }
  tt.return
}
