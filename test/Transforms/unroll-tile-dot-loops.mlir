// RUN: triton-cpu-opt %s -p unroll-tile-dot-loops | FileCheck %s
// RUN: triton-cpu-opt %s -p 'unroll-tile-dot-loops{amx-int8=true}' | FileCheck %s --check-prefix=INT8

// A K loop accumulating bf16 dots of K = 64 (128 bytes per row of A): unrolled by 2. The
// first loop runs the pairs of iterations, up to lb + (trips / 2) * 2 * step (at most ub),
// the second copy of the body at k + step, reading the first's dot; the original loop
// runs what is left from there, carrying the first loop's results. The hints stay on both.
// CHECK-LABEL: tt.func public @k_loop
// CHECK: %[[LB:.*]] = arith.extsi %c0 : i32 to i64
// CHECK: %[[UB:.*]] = arith.extsi %n : i32 to i64
// CHECK: %[[SPAN:.*]] = arith.subi %[[UB]], %[[LB]] : i64
// CHECK: %[[TRIPS:.*]] = arith.maxsi %[[SPAN]], %{{.*}} : i64
// CHECK: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK: %[[PAIRS:.*]] = arith.divsi %[[TRIPS]], %[[TWO]] : i64
// CHECK: %[[SPAN2:.*]] = arith.muli %[[PAIRS]], %{{.*}} : i64
// CHECK: %[[END:.*]] = arith.addi %[[LB]], %[[SPAN2]] : i64
// CHECK: %[[MID64:.*]] = arith.minsi %[[END]], %[[UB]] : i64
// CHECK: %[[MID:.*]] = arith.trunci %[[MID64]] : i64 to i32
// CHECK: %[[STEP2:.*]] = arith.constant 2 : i32
// CHECK: %[[M:.*]] = scf.for %[[K:.*]] = %c0 to %[[MID]] step %[[STEP2]] iter_args(%[[ACC:.*]] = %zero) -> (tensor<32x32xf32>) : i32 {
// CHECK:   tt.splat %[[K]] : i32 -> tensor<32x64xi32>
// CHECK:   %[[D0:.*]] = tt.dot %{{.*}}, %{{.*}}, %[[ACC]]
// CHECK:   %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:   %[[K1:.*]] = arith.addi %[[K]], %[[ONE]] : i32
// CHECK:   tt.splat %[[K1]] : i32 -> tensor<32x64xi32>
// CHECK:   %[[D1:.*]] = tt.dot %{{.*}}, %{{.*}}, %[[D0]]
// CHECK:   scf.yield %[[D1]] : tensor<32x32xf32>
// CHECK: } {tt.num_stages = 2 : i32}
// CHECK: %r = scf.for %k = %[[MID]] to %n step %c1 iter_args(%acc = %[[M]]) -> (tensor<32x32xf32>) : i32 {
// CHECK-NOT: tt.dot
// CHECK:   tt.dot %{{.*}}, %{{.*}}, %acc
// CHECK-NOT: tt.dot
// CHECK: } {tt.num_stages = 2 : i32}
// CHECK: tt.store %{{.*}}, %r
tt.func public @k_loop(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x64x!tt.ptr<bf16>>
  %bp = tt.splat %b : !tt.ptr<bf16> -> tensor<64x32x!tt.ptr<bf16>>
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<32x32xf32>) : i32 {
    %ks = tt.splat %k : i32 -> tensor<32x64xi32>
    %pa = tt.addptr %ap, %ks : tensor<32x64x!tt.ptr<bf16>>, tensor<32x64xi32>
    %x = tt.load %pa : tensor<32x64x!tt.ptr<bf16>>
    %y = tt.load %bp : tensor<64x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x64xbf16> * tensor<64x32xbf16> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  } {tt.num_stages = 2 : i32}
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %r : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// K = 32 bf16 (64 bytes per row), a step of 32: four iterations per chain; the trip
// count rounds (ub - lb) up to steps.
// CHECK-LABEL: tt.func public @k_loop_by_four
// CHECK: %[[SPAN:.*]] = arith.maxsi
// CHECK: %[[UP:.*]] = arith.addi %[[SPAN]], %{{.*}} : i64
// CHECK: %[[TRIPS:.*]] = arith.divsi %[[UP]], %{{.*}} : i64
// CHECK: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK: arith.divsi %[[TRIPS]], %[[FOUR]] : i64
// CHECK: %[[STEP4:.*]] = arith.constant 128 : i32
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %[[STEP4]]
// CHECK-COUNT-4: tt.dot
// CHECK: scf.yield
// CHECK: scf.for %k = %{{.*}} to %n step %c32
tt.func public @k_loop_by_four(%a: !tt.ptr<bf16>, %b: !tt.ptr<bf16>, %c: !tt.ptr<f32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c32 = arith.constant 32 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %ap = tt.splat %a : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %bp = tt.splat %b : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%acc = %zero) -> (tensor<32x32xf32>) : i32 {
    %ks = tt.splat %k : i32 -> tensor<32x32xi32>
    %pa = tt.addptr %ap, %ks : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %x = tt.load %pa : tensor<32x32x!tt.ptr<bf16>>
    %y = tt.load %bp : tensor<32x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x32xbf16> * tensor<32x32xbf16> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  %cp = tt.splat %c : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  tt.store %cp, %r : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// Left alone: K = 128 bf16 (a chain's length already); an accumulator read by something
// else in the body; a dot whose result is bf16 (it rounds after each dot: a chain would
// round once); a step that is not a constant; fp32 operands (no tiles).
// CHECK-LABEL: tt.func public @left_alone
// CHECK-COUNT-5: scf.for
// CHECK-NOT: scf.for
tt.func public @left_alone(%a: !tt.ptr<bf16>, %f: !tt.ptr<f32>, %n: i32, %s: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0.0> : tensor<32x32xf32>
  %zb = arith.constant dense<0.0> : tensor<32x32xbf16>
  %a128 = tt.splat %a : !tt.ptr<bf16> -> tensor<32x128x!tt.ptr<bf16>>
  %b128 = tt.splat %a : !tt.ptr<bf16> -> tensor<128x32x!tt.ptr<bf16>>
  %a64 = tt.splat %a : !tt.ptr<bf16> -> tensor<32x64x!tt.ptr<bf16>>
  %b64 = tt.splat %a : !tt.ptr<bf16> -> tensor<64x32x!tt.ptr<bf16>>
  %fp = tt.splat %f : !tt.ptr<f32> -> tensor<32x32x!tt.ptr<f32>>
  %r0 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<32x32xf32>) : i32 {
    %x = tt.load %a128 : tensor<32x128x!tt.ptr<bf16>>
    %y = tt.load %b128 : tensor<128x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x128xbf16> * tensor<128x32xbf16> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  %r1 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<32x32xf32>) : i32 {
    %x = tt.load %a64 : tensor<32x64x!tt.ptr<bf16>>
    %y = tt.load %b64 : tensor<64x32x!tt.ptr<bf16>>
    tt.store %fp, %acc : tensor<32x32x!tt.ptr<f32>>
    %d = tt.dot %x, %y, %acc : tensor<32x64xbf16> * tensor<64x32xbf16> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  %r2 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zb) -> (tensor<32x32xbf16>) : i32 {
    %x = tt.load %a64 : tensor<32x64x!tt.ptr<bf16>>
    %y = tt.load %b64 : tensor<64x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x64xbf16> * tensor<64x32xbf16> -> tensor<32x32xbf16>
    scf.yield %d : tensor<32x32xbf16>
  }
  %r3 = scf.for %k = %c0 to %n step %s iter_args(%acc = %zero) -> (tensor<32x32xf32>) : i32 {
    %x = tt.load %a64 : tensor<32x64x!tt.ptr<bf16>>
    %y = tt.load %b64 : tensor<64x32x!tt.ptr<bf16>>
    %d = tt.dot %x, %y, %acc : tensor<32x64xbf16> * tensor<64x32xbf16> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  %xf = tt.load %fp : tensor<32x32x!tt.ptr<f32>>
  %r4 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<32x32xf32>) : i32 {
    %d = tt.dot %xf, %xf, %acc : tensor<32x32xf32> * tensor<32x32xf32> -> tensor<32x32xf32>
    scf.yield %d : tensor<32x32xf32>
  }
  tt.store %fp, %r0 : tensor<32x32x!tt.ptr<f32>>
  tt.store %fp, %r1 : tensor<32x32x!tt.ptr<f32>>
  tt.store %fp, %r3 : tensor<32x32x!tt.ptr<f32>>
  tt.store %fp, %r4 : tensor<32x32x!tt.ptr<f32>>
  tt.return
}

// int8 dots of K = 64 (64 bytes per row) run by four with amx-int8, and not without it.
// INT8-LABEL: tt.func public @int8_loop
// INT8: scf.for
// INT8-COUNT-4: tt.dot
// INT8: scf.for
// CHECK-LABEL: tt.func public @int8_loop
// CHECK: scf.for
// CHECK-NEXT: tt.load
// CHECK-NEXT: tt.dot
// CHECK-NEXT: scf.yield
// CHECK-NOT: scf.for
tt.func public @int8_loop(%a: !tt.ptr<i8>, %o: !tt.ptr<i32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant dense<0> : tensor<32x32xi32>
  %ap = tt.splat %a : !tt.ptr<i8> -> tensor<32x64x!tt.ptr<i8>>
  %bp = tt.splat %a : !tt.ptr<i8> -> tensor<64x32x!tt.ptr<i8>>
  %y = tt.load %bp : tensor<64x32x!tt.ptr<i8>>
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (tensor<32x32xi32>) : i32 {
    %x = tt.load %ap : tensor<32x64x!tt.ptr<i8>>
    %d = tt.dot %x, %y, %acc : tensor<32x64xi8> * tensor<64x32xi8> -> tensor<32x32xi32>
    scf.yield %d : tensor<32x32xi32>
  }
  %op = tt.splat %o : !tt.ptr<i32> -> tensor<32x32x!tt.ptr<i32>>
  tt.store %op, %r : tensor<32x32x!tt.ptr<i32>>
  tt.return
}
