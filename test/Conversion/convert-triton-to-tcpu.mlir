// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// A contiguous masked access becomes one loop over the block in steps of 16
// lanes, with vector loads/stores at a scalar address; no 1024-wide vector.
// CHECK-LABEL: func.func public @add
// CHECK: tcpu.program_id
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: "tcpu.vload"
// CHECK-SAME: alignment = 16
// CHECK-SAME: -> vector<16xf32>
// CHECK: arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: "tcpu.vstore"
// CHECK-NOT: tensor<
// CHECK-NOT: {{= tt\.|^ *tt\.}}
tt.func public @add(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %c = arith.constant 1024 : i32
  %pid = tt.get_program_id x : i32
  %base = arith.muli %pid, %c : i32
  %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
  %b = tt.splat %base : i32 -> tensor<1024xi32>
  %offs = arith.addi %b, %r : tensor<1024xi32>
  %nn = tt.splat %n : i32 -> tensor<1024xi32>
  %m = arith.cmpi slt, %offs, %nn : tensor<1024xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
  %v = tt.load %xp, %m : tensor<1024x!tt.ptr<f32>>
  %s = arith.addf %v, %v : tensor<1024xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
  %op = tt.addptr %os, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
  tt.store %op, %s, %m : tensor<1024x!tt.ptr<f32>>
  tt.return
}

// A strided access (column of a row-major matrix) is a gather/scatter; a pointer
// constant along the last dimension is one scalar load (before the loop: it is the same
// for every step, see lane_groups.py) broadcast to the lanes.
// CHECK-LABEL: func.func public @strided
// CHECK: %[[S:.*]] = "tcpu.load"
// CHECK: scf.for
// CHECK: "tcpu.gather"
// CHECK: vector.broadcast %[[S]] : f32 to vector<16xf32>
// CHECK: "tcpu.scatter"
tt.func public @strided(%x: !tt.ptr<f32>, %y: !tt.ptr<f32>, %o: !tt.ptr<f32>) {
  %c = arith.constant dense<64> : tensor<64xi32>
  %z = arith.constant dense<0> : tensor<64xi32>
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %offs = arith.muli %r, %c : tensor<64xi32>
  %zero = arith.muli %r, %z : tensor<64xi32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %zero : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %b = tt.load %yp : tensor<64x!tt.ptr<f32>>
  %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %s = arith.addf %v, %b : tensor<64xf32>
  %os = tt.splat %o : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %op = tt.addptr %os, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %op, %s : tensor<64x!tt.ptr<f32>>
  tt.return
}

// 2-D: a loop per row, vectors along the row; the row-broadcast operand is
// evaluated once per row as a scalar and splat.
// CHECK-LABEL: func.func public @rows
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: arith.index_cast %[[I]]
// CHECK: vector.broadcast %{{.*}} : i32 to vector<16xi32>
// CHECK: "tcpu.vstore"
tt.func public @rows(%o: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %c = arith.constant dense<64> : tensor<8x1xi32>
  %r0 = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %r1 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %e0 = tt.expand_dims %r0 {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %e1 = tt.expand_dims %r1 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
  %row = arith.muli %e0, %c : tensor<8x1xi32>
  %rb = tt.broadcast %row : tensor<8x1xi32> -> tensor<8x64xi32>
  %cb = tt.broadcast %e1 : tensor<1x64xi32> -> tensor<8x64xi32>
  %offs = arith.addi %rb, %cb : tensor<8x64xi32>
  %os = tt.splat %o : !tt.ptr<i32> -> tensor<8x64x!tt.ptr<i32>>
  %op = tt.addptr %os, %offs : tensor<8x64x!tt.ptr<i32>>, tensor<8x64xi32>
  tt.store %op, %offs : tensor<8x64x!tt.ptr<i32>>
  tt.return
}

// A tensor constant with distinct elements is a read-only global, read like a buffer.
// CHECK: "memref.global"() <{sym_name = "__tcpu_const_table_0", type = memref<8xi32>, initial_value = dense<[0, 3, 1, 2, 7, 5, 4, 6]>
// CHECK-LABEL: func.func public @table
// CHECK: %[[G:.*]] = memref.get_global @__tcpu_const_table_0 : memref<8xi32>
// CHECK: vector.load %[[G]]
// CHECK: "tcpu.vstore"
tt.func public @table(%o: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %t = arith.constant dense<[0, 3, 1, 2, 7, 5, 4, 6]> : tensor<8xi32>
  %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %os = tt.splat %o : !tt.ptr<i32> -> tensor<8x!tt.ptr<i32>>
  %op = tt.addptr %os, %r : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
  tt.store %op, %t : tensor<8x!tt.ptr<i32>>
  tt.return
}

// A contiguous load with several consumers (softmax's and layer norm's row: a reduction,
// then the output) is read again by each consumer's loop, from the same cache lines,
// rather than copied into a buffer first. A gather with several consumers is read once
// into a buffer.
// CHECK-LABEL: func.func public @reread
// CHECK-NOT: memref.alloca
// CHECK: "tcpu.vload"
// CHECK: arith.maxnumf
// CHECK: scf.for
// CHECK: "tcpu.vload"
// CHECK: arith.subf
// CHECK: "tcpu.vstore"
tt.func public @reread(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %m = "tt.reduce"(%v) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %mx = arith.maxnumf %a, %b : f32
    tt.reduce.return %mx : f32
  }) : (tensor<64xf32>) -> f32
  %ms = tt.splat %m : f32 -> tensor<64xf32>
  %d = arith.subf %v, %ms : tensor<64xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %d : tensor<64x!tt.ptr<f32>>
  tt.return
}

// A gather read by a reduction and a store is gathered once into a buffer: here by the
// reduction's chunks (its first consumer, reductions.deferring_reduce: four chunks of 16
// lanes, one per accumulator), each stored to the buffer that the store's nest reads.
// CHECK-LABEL: func.func public @gathered_once
// CHECK: %[[BUF:.*]] = memref.alloca() {{.*}} : memref<64xf32>
// CHECK-COUNT-4: vector.store {{.*}}, %[[BUF]]
// CHECK-NOT: "tcpu.gather"
// CHECK: vector.load %[[BUF]]
tt.func public @gathered_once(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %i: !tt.ptr<i32> {tt.divisibility = 16 : i32},
                              %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %is = tt.splat %i : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>>
  %ip = tt.addptr %is, %r : tensor<64x!tt.ptr<i32>>, tensor<64xi32>
  %idx = tt.load %ip : tensor<64x!tt.ptr<i32>>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %idx : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %v = tt.load %xp : tensor<64x!tt.ptr<f32>>
  %m = "tt.reduce"(%v) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %mx = arith.maxnumf %a, %b : f32
    tt.reduce.return %mx : f32
  }) : (tensor<64xf32>) -> f32
  %ms = tt.splat %m : f32 -> tensor<64xf32>
  %d = arith.subf %v, %ms : tensor<64xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %d : tensor<64x!tt.ptr<f32>>
  tt.return
}

// A contiguous store may stream: the code generator stores it past the caches when the
// bytes the launch stores exceed the runtime's threshold. Not in a kernel with atomics,
// which x86 does not order with such stores.
// CHECK-LABEL: func.func public @streamed
// CHECK: "tcpu.vstore"
// CHECK-SAME: may_stream
// CHECK-LABEL: func.func public @not_streamed
// CHECK: "tcpu.vstore"
// CHECK-NOT: may_stream
// CHECK: tcpu.atomic_rmw
tt.func public @streamed(%y: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %v = arith.sitofp %r : tensor<64xi32> to tensor<64xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %v : tensor<64x!tt.ptr<f32>>
  tt.return
}
tt.func public @not_streamed(%y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %c: !tt.ptr<i32>) {
  %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %v = arith.sitofp %r : tensor<64xi32> to tensor<64xf32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  tt.store %yp, %v : tensor<64x!tt.ptr<f32>>
  %one = arith.constant 1 : i32
  %old = tt.atomic_rmw add, acq_rel, gpu, %c, %one : (!tt.ptr<i32>, i32) -> i32
  tt.return
}
