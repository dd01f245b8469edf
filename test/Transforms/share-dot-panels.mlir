// RUN: triton-cpu-opt %s -p share-dot-panels | FileCheck %s
// RUN: triton-cpu-opt %s -p 'share-dot-panels{amx-int8=true}' | FileCheck %s --check-prefix=INT8
// RUN: triton-cpu-opt %s -p 'share-dot-panels{amx=false bf16-dot=true}' | FileCheck %s --check-prefix=PAIRS
// RUN: triton-cpu-opt %s -p 'share-dot-panels{amx=false}' | FileCheck %s --check-prefix=NONE

// Without AMX, on a host with vdpbf16ps (bf16-dot), the bf16 x bf16 -> fp32 dots are marked
// too (the conversion packs their B as pairs into the cache); fp32 and int8 dots are not.
// Without either, nothing is.
// PAIRS-LABEL: tt.func public @grouped
// PAIRS: "tcpu.panel_key"(%rn, %off, %left) : (i32, i64, i32) -> ()
// PAIRS-NEXT: tt.dot
// PAIRS-LABEL: tt.func public @loaded_index
// PAIRS: "tcpu.panel_key"(%eb) : (!tt.ptr<bf16>) -> ()
// PAIRS-LABEL: tt.func public @fp32
// PAIRS-NOT: tcpu.panel_key
// PAIRS-LABEL: tt.func public @int8
// PAIRS-NOT: tcpu.panel_key
// NONE-NOT: tcpu.panel_key

// A grouped matmul's K loop (tutorial 03 after uniform-loop-increments): B's pointers are
// the column offset %rn (from the program id), splatted, plus the loop-carried scalar
// offset %off; the mask compares with K - k. The first scalar on each path back from B
// that is not a function of the arguments is a key: %rn, %off, %left (not %K, not the
// constant stride).
// CHECK-LABEL: tt.func public @grouped
// CHECK: scf.for %k = {{.*}} iter_args(%acc = %zero, %off = %c0_i64)
// CHECK:   %left = arith.subi %K, %k : i32
// CHECK:   "tcpu.panel_key"(%rn, %off, %left) : (i32, i64, i32) -> ()
// CHECK-NEXT: tt.dot
tt.func public @grouped(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %K: i32, %stride: i32) {
  %c0 = arith.constant 0 : i32
  %c0_i64 = arith.constant 0 : i64
  %c64 = arith.constant 64 : i32
  %c8 = arith.constant 8 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %other = arith.constant dense<0.0> : tensor<64x32xbf16>
  %pid = tt.get_program_id x : i32
  %tile_n = arith.divsi %pid, %c8 : i32
  %rn = arith.muli %tile_n, %c64 : i32
  %rns = tt.splat %rn : i32 -> tensor<1x32xi32>
  %cols = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
  %colse = tt.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
  %n = arith.addi %rns, %colse : tensor<1x32xi32>
  %nb = tt.broadcast %n : tensor<1x32xi32> -> tensor<64x32xi32>
  %rows = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %rowse = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
  %ss = tt.splat %stride : i32 -> tensor<64x1xi32>
  %rk = arith.muli %rowse, %ss : tensor<64x1xi32>
  %rkb = tt.broadcast %rk : tensor<64x1xi32> -> tensor<64x32xi32>
  %bo = arith.addi %rkb, %nb : tensor<64x32xi32>
  %bs = tt.splat %b : !tt.ptr<bf16> -> tensor<64x32x!tt.ptr<bf16>>
  %bp = tt.addptr %bs, %bo : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x64x!tt.ptr<bf16>>
  %step = arith.muli %stride, %c64 : i32
  %step64 = arith.extsi %step : i32 to i64
  %r, %end = scf.for %k = %c0 to %K step %c64 iter_args(%acc = %zero, %off = %c0_i64) -> (tensor<32x32xf32>, i64) : i32 {
    %offs = tt.splat %off : i64 -> tensor<64x32xi64>
    %bk = tt.addptr %bp, %offs : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi64>
    %left = arith.subi %K, %k : i32
    %ls = tt.splat %left : i32 -> tensor<64x1xi32>
    %m = arith.cmpi slt, %rowse, %ls : tensor<64x1xi32>
    %mb = tt.broadcast %m : tensor<64x1xi1> -> tensor<64x32xi1>
    %x = tt.load %ap : tensor<32x64x!tt.ptr<bf16>>
    %y = tt.load %bk, %mb, %other : tensor<64x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x64xbf16> * tensor<64x32xbf16> -> tensor<32x32xf32>
    %next = arith.addi %off, %step64 : i64
    scf.yield %d, %next : tensor<32x32xf32>, i64
  }
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %r : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// B's address from a loaded index (an expert's weight): the pointer computed from the
// loaded scalar is the key (memory holds the same index for every program of the
// launch).
// CHECK-LABEL: tt.func public @loaded_index
// CHECK: %eb = tt.addptr %b, %e
// CHECK: "tcpu.panel_key"(%eb) : (!tt.ptr<bf16>) -> ()
// CHECK-NEXT: tt.dot
tt.func public @loaded_index(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %idx: !tt.ptr<i32>, %c: !tt.ptr<f32>) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %pid = tt.get_program_id x : i32
  %ip = tt.addptr %idx, %pid : !tt.ptr<i32>, i32
  %e = tt.load %ip : !tt.ptr<i32>
  %eb = tt.addptr %b, %e : !tt.ptr<bf16>, i32
  %bp = tt.splat %eb : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %x = tt.load %ap : tensor<32x32x!tt.ptr<bf16>>
  %y = tt.load %bp : tensor<32x32x!tt.ptr<bf16>>
  %d = tt.dot %x, %y, %zero : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %d : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// Not marked: a store before the loop (a program must see its own writes, which a panel
// packed by another program would not hold); a loop-carried tensor of pointers (its value
// is not a function of the key's scalars); a volatile load of B; an fp32 dot (no AMX).
// CHECK-LABEL: tt.func public @store_before
// CHECK-NOT: tcpu.panel_key
// CHECK-LABEL: tt.func public @tensor_carried
// CHECK-NOT: tcpu.panel_key
// CHECK-LABEL: tt.func public @volatile_b
// CHECK-NOT: tcpu.panel_key
// CHECK-LABEL: tt.func public @fp32
// CHECK-NOT: tcpu.panel_key
// CHECK-LABEL: tt.func public @int8
tt.func public @store_before(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %K: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ones = arith.constant dense<1.0> : tensor<32x32xbf16>
  %bp = tt.splat %b : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  tt.store %bp, %ones : tensor<32x32x!tt.ptr<bf16>>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %r = scf.for %k = %c0 to %K step %c32 iter_args(%acc = %zero) -> (tensor<32x32xf32>) : i32 {
    %x = tt.load %ap : tensor<32x32x!tt.ptr<bf16>>
    %y = tt.load %bp : tensor<32x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %r : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

tt.func public @tensor_carried(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %K: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %inc = arith.constant dense<32> : tensor<32x32xi32>
  %bp = tt.splat %b : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %r, %e = scf.for %k = %c0 to %K step %c32 iter_args(%acc = %zero, %p = %bp) -> (tensor<32x32xf32>, tensor<32x32x!tt.ptr<bf16>>) : i32 {
    %x = tt.load %ap : tensor<32x32x!tt.ptr<bf16>>
    %y = tt.load %p : tensor<32x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
    %q = tt.addptr %p, %inc : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    scf.yield %d, %q : tensor<32x32xf32>, tensor<32x32x!tt.ptr<bf16>>
  }
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %r : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

tt.func public @volatile_b(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %bp = tt.splat %b : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %x = tt.load %ap : tensor<32x32x!tt.ptr<bf16>>
  %y = tt.load %bp {isVolatile = true} : tensor<32x32x!tt.ptr<bf16>>
  %d = tt.dot %x, %y, %zero : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %d : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

tt.func public @fp32(%a: !tt.ptr<f32>, %b: !tt.ptr<f32>, %c: !tt.ptr<f32>) {
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tt.splat %a : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %bp = tt.splat %b : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %x = tt.load %ap : tensor<32x32x!tt.ptr<f32>>
  %y = tt.load %bp : tensor<32x32x!tt.ptr<f32>>
  %d = tt.dot %x, %y, %zero : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %d : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// int8 dots only where AMX-INT8 is asked for: not marked by default, marked with it
// (B's pointers all launch-invariant: no key, one slot).
// CHECK-NOT: tcpu.panel_key
// INT8-LABEL: tt.func public @int8
// INT8: "tcpu.panel_key"() : () -> ()
// INT8-NEXT: tt.dot
tt.func public @int8(%a: !tt.ptr<i8>, %b: !tt.ptr<i8>, %c: !tt.ptr<i32>) {
  %zero = arith.constant dense<0> : tensor<32x32xi32>
  %ap = tt.splat %a : !tt.ptr<i8> -> tensor<32x64x!tt.ptr<i8>>
  %bp = tt.splat %b : !tt.ptr<i8> -> tensor<64x32x!tt.ptr<i8>>
  %x = tt.load %ap : tensor<32x64x!tt.ptr<i8>>
  %y = tt.load %bp : tensor<64x32x!tt.ptr<i8>>
  %d = tt.dot %x, %y, %zero : tensor<32x64xi8> * tensor<64x32xi8> -> tensor<32x32xi32>
  %cp = tt.splat %c : !tt.ptr<i32> -> tensor<32x32x!tt.ptr<i32>>
  tt.store %cp, %d : tensor<32x32x!tt.ptr<i32>>
  tt.return
}
