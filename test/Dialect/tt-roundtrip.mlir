// RUN: triton-cpu-opt %s | FileCheck %s

// Every tt op, written as stock Triton 3.9 prints it, parses and prints back unchanged.

// CHECK-LABEL: tt.func public @memory
// CHECK-SAME: %{{.*}}: !tt.ptr<f32> {tt.divisibility = 16 : i32}
// CHECK-SAME: attributes {noinline = false}
tt.func public @memory(%p: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32, %addr: i64) attributes {noinline = false} {
  // CHECK: tt.get_program_id x : i32
  // CHECK: tt.get_num_programs z : i32
  // CHECK: tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  // CHECK: tt.splat %{{.*}} : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  // CHECK: tt.addptr %{{.*}}, %{{.*}} : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  %pid = tt.get_program_id x : i32
  %np = tt.get_num_programs z : i32
  %offs = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
  %nn = tt.splat %n : i32 -> tensor<64xi32>
  %mask = arith.cmpi slt, %offs, %nn : tensor<64xi32>
  %other = arith.constant dense<0xFF800000> : tensor<64xf32>
  %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
  %ptrs = tt.addptr %ps, %offs : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
  // CHECK: tt.load %{{.*}} : tensor<64x!tt.ptr<f32>>
  // CHECK: tt.load %{{.*}}, %{{.*}}, %{{.*}} {cachePolicy = #tt.cache_policy<cache_modifier = cg, eviction_policy = evict_last>, isVolatile = true} : tensor<64x!tt.ptr<f32>>
  // CHECK: tt.load %{{.*}} : !tt.ptr<f32>
  %x = tt.load %ptrs : tensor<64x!tt.ptr<f32>>
  %y = tt.load %ptrs, %mask, %other {cachePolicy = #tt.cache_policy<cache_modifier = cg, eviction_policy = evict_last>, isVolatile = true} : tensor<64x!tt.ptr<f32>>
  %s = tt.load %p : !tt.ptr<f32>
  // CHECK: tt.store %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x!tt.ptr<f32>>
  // CHECK: tt.store %{{.*}}, %{{.*}} {cachePolicy = #tt.cache_policy<cache_modifier = wb, eviction_policy = evict_normal>} : !tt.ptr<f32>
  tt.store %ptrs, %y, %mask : tensor<64x!tt.ptr<f32>>
  tt.store %p, %s {cachePolicy = #tt.cache_policy<cache_modifier = wb, eviction_policy = evict_normal>} : !tt.ptr<f32>
  // CHECK: tt.int_to_ptr %{{.*}} : i64 -> !tt.ptr<f32>
  // CHECK: tt.ptr_to_int %{{.*}} : !tt.ptr<f32> -> i64
  // CHECK: tt.bitcast %{{.*}} : !tt.ptr<f32> -> !tt.ptr<i32>
  // CHECK: tt.bitcast %{{.*}} : tensor<64xf32> -> tensor<64xi32>
  %q = tt.int_to_ptr %addr : i64 -> !tt.ptr<f32>
  %qi = tt.ptr_to_int %q : !tt.ptr<f32> -> i64
  %pi = tt.bitcast %q : !tt.ptr<f32> -> !tt.ptr<i32>
  %xi = tt.bitcast %x : tensor<64xf32> -> tensor<64xi32>
  // CHECK: !tt.ptr<f32, "constant">
  %c = tt.int_to_ptr %qi : i64 -> !tt.ptr<f32, "constant">
  tt.return
}

// CHECK-LABEL: tt.func public @shapes
tt.func public @shapes(%x: tensor<16x16xf32>, %idx: tensor<16x16xi32>, %r: tensor<16xi32>) {
  // CHECK: tt.expand_dims %{{.*}} {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  // CHECK: tt.broadcast %{{.*}} : tensor<16x1xi32> -> tensor<16x16xi32>
  // CHECK: tt.trans %{{.*}} {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
  // CHECK: tt.reshape %{{.*}} : tensor<16x16xf32> -> tensor<256xf32>
  // CHECK: tt.reshape %{{.*}} allow_reorder : tensor<16x16xf32> -> tensor<256xf32>
  // CHECK: tt.reshape %{{.*}} allow_reorder efficient_layout : tensor<16x16xf32> -> tensor<16x8x2xf32>
  %e = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
  %b = tt.broadcast %e : tensor<16x1xi32> -> tensor<16x16xi32>
  %t = tt.trans %x {order = array<i32: 1, 0>} : tensor<16x16xf32> -> tensor<16x16xf32>
  %f = tt.reshape %x : tensor<16x16xf32> -> tensor<256xf32>
  %g = tt.reshape %x allow_reorder : tensor<16x16xf32> -> tensor<256xf32>
  %h = tt.reshape %x allow_reorder efficient_layout : tensor<16x16xf32> -> tensor<16x8x2xf32>
  // CHECK: tt.join %{{.*}}, %{{.*}} : tensor<16x16xf32> -> tensor<16x16x2xf32>
  // CHECK: = tt.split %{{.*}} : tensor<16x16x2xf32> -> tensor<16x16xf32>
  // CHECK: tt.cat %{{.*}}, %{{.*}} : tensor<16xi32> -> tensor<32xi32>
  %j = tt.join %x, %t : tensor<16x16xf32> -> tensor<16x16x2xf32>
  %lo, %hi = tt.split %j : tensor<16x16x2xf32> -> tensor<16x16xf32>
  %cat = tt.cat %r, %r : tensor<16xi32> -> tensor<32xi32>
  // CHECK: tt.gather %{{.*}}[%{{.*}}] {axis = 1 : i32} : (tensor<16x16xf32>, tensor<16x16xi32>) -> tensor<16x16xf32>
  // CHECK: tt.histogram %{{.*}} : tensor<16xi32> -> tensor<8xi32>
  // CHECK: tt.histogram %{{.*}}, %{{.*}} : tensor<16xi32> -> tensor<8xi32>
  %gt = tt.gather %x[%idx] {axis = 1 : i32} : (tensor<16x16xf32>, tensor<16x16xi32>) -> tensor<16x16xf32>
  %hist = tt.histogram %r : tensor<16xi32> -> tensor<8xi32>
  %true = arith.constant dense<true> : tensor<16xi1>
  %hm = tt.histogram %r, %true : tensor<16xi32> -> tensor<8xi32>
  // CHECK: tt.splat %{{.*}} : f32 -> tensor<1x1xf32>
  // CHECK: tt.unsplat %{{.*}} : tensor<1x1xf32>
  %one = arith.constant 1.000000e+00 : f32
  %sp = tt.splat %one : f32 -> tensor<1x1xf32>
  %us = tt.unsplat %sp : tensor<1x1xf32>
  tt.return
}

// CHECK-LABEL: tt.func public @elementwise
tt.func public @elementwise(%x: tensor<64xf32>, %y: tensor<64xf32>, %u: tensor<64xi32>) {
  // CHECK: tt.clampf %{{.*}}, %{{.*}}, %{{.*}}, propagateNan = none : tensor<64xf32>
  // CHECK: tt.clampf %{{.*}}, %{{.*}}, %{{.*}}, propagateNan = all : tensor<64xf32>
  // CHECK: tt.precise_sqrt %{{.*}} : tensor<64xf32>
  // CHECK: tt.precise_divf %{{.*}}, %{{.*}} : tensor<64xf32>
  // CHECK: tt.approx_divf %{{.*}}, %{{.*}} : tensor<64xf32>
  // CHECK: tt.mulhiui %{{.*}}, %{{.*}} : tensor<64xi32>
  %a = tt.clampf %x, %y, %y, propagateNan = none : tensor<64xf32>
  %b = tt.clampf %x, %y, %y, propagateNan = all : tensor<64xf32>
  %c = tt.precise_sqrt %x : tensor<64xf32>
  %d = tt.precise_divf %x, %y : tensor<64xf32>
  %e = tt.approx_divf %x, %y : tensor<64xf32>
  %f = tt.mulhiui %u, %u : tensor<64xi32>
  // CHECK: tt.fp_to_fp %{{.*}}, rounding = rtne : tensor<64xf32> -> tensor<64xf8E5M2>
  // CHECK: tt.fp_to_fp %{{.*}} : tensor<64xf8E5M2> -> tensor<64xf32>
  // CHECK: tt.fp_to_fp %{{.*}}, rounding = rtz : tensor<64xf32> -> tensor<64xbf16>
  %g = tt.fp_to_fp %x, rounding = rtne : tensor<64xf32> -> tensor<64xf8E5M2>
  %h = tt.fp_to_fp %g : tensor<64xf8E5M2> -> tensor<64xf32>
  %i = tt.fp_to_fp %x, rounding = rtz : tensor<64xf32> -> tensor<64xbf16>
  // CHECK: tt.extern_elementwise %{{.*}}, %{{.*}} {libname = "libm", libpath = "", pure = true, symbol = "powf"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %j = tt.extern_elementwise %x, %y {libname = "libm", libpath = "", pure = true, symbol = "powf"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  // CHECK: tt.elementwise_inline_asm "mov $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %{{.*}} : tensor<64xi32> -> tensor<64xi32>
  %k = tt.elementwise_inline_asm "mov $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %u : tensor<64xi32> -> tensor<64xi32>
  // CHECK: tt.map_elementwise
  %m = "tt.map_elementwise"(%x, %y) <{pack = 1 : i32}> ({
  ^bb0(%v: f32, %w: f32):
    %s = arith.addf %v, %w : f32
    tt.map_elementwise.return %s : f32
  }) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  tt.return
}

// CHECK-LABEL: tt.func public @atomics
tt.func public @atomics(%p: tensor<64x!tt.ptr<f32>>, %v: tensor<64xf32>, %m: tensor<64xi1>, %s: !tt.ptr<i32>, %i: i32) {
  // CHECK: tt.atomic_rmw fadd, acq_rel, gpu, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
  // CHECK: tt.atomic_rmw exch, relaxed, sys, %{{.*}}, %{{.*}} : (!tt.ptr<i32>, i32) -> i32
  // CHECK: tt.atomic_cas acquire, cta, %{{.*}}, %{{.*}}, %{{.*}} : (!tt.ptr<i32>, i32, i32) -> i32
  %a = tt.atomic_rmw fadd, acq_rel, gpu, %p, %v, %m : (tensor<64x!tt.ptr<f32>>, tensor<64xf32>, tensor<64xi1>) -> tensor<64xf32>
  %b = tt.atomic_rmw exch, relaxed, sys, %s, %i : (!tt.ptr<i32>, i32) -> i32
  %c = tt.atomic_cas acquire, cta, %s, %i, %b : (!tt.ptr<i32>, i32, i32) -> i32
  // CHECK: tt.atomic_load acquire, gpu, %{{.*}}, %{{.*}} : (tensor<64x!tt.ptr<f32>>, tensor<64xi1>) -> tensor<64xf32>
  // CHECK: tt.atomic_store release, gpu, %{{.*}}, %{{.*}} : !tt.ptr<i32>
  // CHECK: tt.atomic_poll acquire, sys, %{{.*}}, %{{.*}} timeout %{{.*}} : !tt.ptr<i32>, i32 -> i1
  %d = tt.atomic_load acquire, gpu, %p, %m : (tensor<64x!tt.ptr<f32>>, tensor<64xi1>) -> tensor<64xf32>
  tt.atomic_store release, gpu, %s, %c : !tt.ptr<i32>
  %ns = arith.constant 1000 : i64
  %e = tt.atomic_poll acquire, sys, %s, %i timeout %ns : !tt.ptr<i32>, i32 -> i1
  tt.return
}

// CHECK-LABEL: tt.func public @dots
tt.func public @dots(%a: tensor<16x32xf16>, %b: tensor<32x16xf16>, %c: tensor<16x16xf32>, %a8: tensor<16x64xf8E5M2>, %b8: tensor<64x16xf8E5M2>, %sa: tensor<16x2xi8>, %sb: tensor<16x2xi8>) {
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32xf16> * tensor<32x16xf16> -> tensor<16x16xf32>
  // CHECK: tt.dot %{{.*}}, %{{.*}}, %{{.*}}, inputPrecision = tf32 {maxNumImpreciseAcc = 32 : i32} : tensor<16x32xf16> * tensor<32x16xf16> -> tensor<16x16xf32>
  // CHECK: tt.dot_scaled %{{.*}} scale %{{.*}}, %{{.*}} scale %{{.*}}, %{{.*}} lhs = e5m2 rhs = e5m2 {fastMath = false} : tensor<16x64xf8E5M2>, tensor<16x2xi8> * tensor<64x16xf8E5M2>, tensor<16x2xi8> -> tensor<16x16xf32>
  %d = tt.dot %a, %b, %c : tensor<16x32xf16> * tensor<32x16xf16> -> tensor<16x16xf32>
  %e = tt.dot %a, %b, %d, inputPrecision = tf32 {maxNumImpreciseAcc = 32 : i32} : tensor<16x32xf16> * tensor<32x16xf16> -> tensor<16x16xf32>
  %f = tt.dot_scaled %a8 scale %sa, %b8 scale %sb, %e lhs = e5m2 rhs = e5m2 {fastMath = false} : tensor<16x64xf8E5M2>, tensor<16x2xi8> * tensor<64x16xf8E5M2>, tensor<16x2xi8> -> tensor<16x16xf32>
  tt.return
}

// CHECK-LABEL: tt.func public @regions
tt.func public @regions(%x: tensor<16x32xf32>, %i: tensor<16x32xi32>) {
  // CHECK: "tt.reduce"(%{{.*}}, %{{.*}}) <{axis = 1 : i32}> ({
  // CHECK: tt.reduce.return %{{.*}}, %{{.*}} : f32, i32
  // CHECK: }) : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<16xf32>, tensor<16xi32>)
  %v, %k = "tt.reduce"(%x, %i) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %ai: i32, %b: f32, %bi: i32):
    %gt = arith.cmpf ogt, %a, %b : f32
    %mv = arith.select %gt, %a, %b : f32
    %mi = arith.select %gt, %ai, %bi : i32
    tt.reduce.return %mv, %mi : f32, i32
  }) : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<16xf32>, tensor<16xi32>)
  // CHECK: "tt.scan"(%{{.*}}) <{axis = 0 : i32, reverse = true}> ({
  // CHECK: tt.scan.return %{{.*}} : f32
  %s = "tt.scan"(%x) <{axis = 0 : i32, reverse = true}> ({
  ^bb0(%a: f32, %b: f32):
    %sum = arith.addf %a, %b : f32
    tt.scan.return %sum : f32
  }) : (tensor<16x32xf32>) -> tensor<16x32xf32>
  tt.return
}

// CHECK-LABEL: tt.func public @debug
tt.func public @debug(%x: tensor<64xf32>, %pid: i32, %cond: tensor<64xi1>) {
  // CHECK: tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %{{.*}} : tensor<64xf32>
  // CHECK: tt.print " pid: " {hex = true, isSigned = array<i32: 1, 1>} : %{{.*}}, %{{.*}} : i32, i32
  // CHECK: tt.print " done" {hex = false, isSigned = array<i32>}
  // CHECK: tt.assert %{{.*}}, "x must be positive" : tensor<64xi1>
  tt.print " x: " {hex = false, isSigned = array<i32: 0>} : %x : tensor<64xf32>
  tt.print " pid: " {hex = true, isSigned = array<i32: 1, 1>} : %pid, %pid : i32, i32
  tt.print " done" {hex = false, isSigned = array<i32>}
  tt.assert %cond, "x must be positive" : tensor<64xi1>
  tt.return
}

// CHECK-LABEL: tt.func public @descriptors
tt.func public @descriptors(%p: !tt.ptr<f32>, %m: i32, %n: i32, %sm: i64, %one: i64, %xs: tensor<8xi32>) {
  // CHECK: tt.make_tensor_descriptor %{{.*}}, [%{{.*}}, %{{.*}}], [%{{.*}}, %{{.*}}] : <f32>, <16x32xf32>
  // CHECK: tt.descriptor_load %{{.*}}[%{{.*}}, %{{.*}}] : !tt.tensordesc<16x32xf32> -> tensor<16x32xf32>
  // CHECK: tt.descriptor_store %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !tt.tensordesc<16x32xf32>, tensor<16x32xf32>
  // CHECK: tt.descriptor_reduce add, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !tt.tensordesc<16x32xf32>, tensor<16x32xf32>
  // CHECK: tt.descriptor_gather %{{.*}}[%{{.*}}, %{{.*}}] : (!tt.tensordesc<1x32xf32>, tensor<8xi32>, i32) -> tensor<8x32xf32>
  // CHECK: tt.descriptor_scatter %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !tt.tensordesc<1x32xf32>, tensor<8xi32>, i32, tensor<8x32xf32>
  %d = tt.make_tensor_descriptor %p, [%m, %n], [%sm, %one] : <f32>, <16x32xf32>
  %x = tt.descriptor_load %d[%m, %n] : !tt.tensordesc<16x32xf32> -> tensor<16x32xf32>
  tt.descriptor_store %d[%m, %n], %x : !tt.tensordesc<16x32xf32>, tensor<16x32xf32>
  tt.descriptor_reduce add, %d[%m, %n], %x : !tt.tensordesc<16x32xf32>, tensor<16x32xf32>
  %d1 = tt.make_tensor_descriptor %p, [%m, %n], [%sm, %one] : <f32>, <1x32xf32>
  %g = tt.descriptor_gather %d1[%xs, %n] : (!tt.tensordesc<1x32xf32>, tensor<8xi32>, i32) -> tensor<8x32xf32>
  tt.descriptor_scatter %d1[%xs, %n], %g : !tt.tensordesc<1x32xf32>, tensor<8xi32>, i32, tensor<8x32xf32>
  tt.return
}

// CHECK-LABEL: tt.func private @helper
// CHECK-SAME: -> (f32, i32) attributes {noinline = true}
// CHECK: tt.return %{{.*}}, %{{.*}} : f32, i32
tt.func private @helper(%x: f32, %i: i32) -> (f32, i32) attributes {noinline = true} {
  tt.return %x, %i : f32, i32
}

// CHECK-LABEL: tt.func public @calls
// CHECK: tt.call @helper(%{{.*}}, %{{.*}}) : (f32, i32) -> (f32, i32)
tt.func public @calls(%x: f32, %i: i32) attributes {noinline = false} {
  %r:2 = tt.call @helper(%x, %i) : (f32, i32) -> (f32, i32)
  tt.return
}
