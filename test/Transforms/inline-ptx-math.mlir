// RUN: triton-cpu-opt %s -p inline-ptx-math | FileCheck %s

// One-instruction PTX approximations become the math ops they approximate; `.ftz` flushes
// subnormal operands and results to a zero of their sign; mov is the operand itself (a
// bitcast to another 32-bit type); two- and three-operand arithmetic becomes arith/math ops,
// `.rn` ones marked never to contract into an fma; sources may be float literals. Other
// inline assembly is left in place.
// CHECK-LABEL: tt.func public @ptx
tt.func public @ptx(%x: tensor<64xf32>, %u: tensor<64xi32>, %s: f32) {
  // CHECK: %[[T:.*]] = math.tanh %x : tensor<64xf32>
  %t = tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  // ex2 with .ftz: the operand and the result each pass through |v| < 2^-126 ? copysign(0, v) : v
  // CHECK: %[[A:.*]] = math.absf %x : tensor<64xf32>
  // CHECK: %[[M:.*]] = arith.constant dense<1.1754943{{.*}}e-38> : tensor<64xf32>
  // CHECK: %[[C:.*]] = arith.cmpf olt, %[[A]], %[[M]] : tensor<64xf32>
  // CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<64xf32>
  // CHECK: %[[S:.*]] = math.copysign %[[Z]], %x : tensor<64xf32>
  // CHECK: %[[F:.*]] = arith.select %[[C]], %[[S]], %x : tensor<64xi1>, tensor<64xf32>
  // CHECK: %[[E:.*]] = math.exp2 %[[F]] : tensor<64xf32>
  // CHECK: math.absf %[[E]]
  // CHECK: arith.select %{{.*}}, %{{.*}}, %[[E]] : tensor<64xi1>, tensor<64xf32>
  %e = tt.elementwise_inline_asm "ex2.approx.ftz.f32 $0,$1" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  // CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
  // CHECK: arith.divf %[[ONE]], %s : f32
  %r = tt.elementwise_inline_asm "rcp.approx.f32 $0, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %s : f32 -> f32
  // CHECK: math.rsqrt %x : tensor<64xf32>
  %q = tt.elementwise_inline_asm "  rsqrt.approx.f32   $0 , $1 ;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  // mov between 32-bit types: a bitcast; to the same type: nothing.
  // CHECK: tt.bitcast %u : tensor<64xi32> -> tensor<64xf32>
  %b = tt.elementwise_inline_asm "mov.b32 $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %u : tensor<64xi32> -> tensor<64xf32>
  %i = tt.elementwise_inline_asm "mov.f32 $0, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  // Without a rounding modifier PTX may contract an add; with .rn it may not.
  // CHECK: %[[P:.*]] = arith.mulf %x, %x : tensor<64xf32>
  // CHECK-NOT: tcpu.no_contract
  // CHECK: arith.addf %[[P]], %x {tcpu.no_contract} : tensor<64xf32>
  %p = tt.elementwise_inline_asm "mul.f32 $0, $1, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  %a = tt.elementwise_inline_asm "add.rn.f32 $0, $1, $2;" {constraints = "=f,f,f", packed_element = 1 : i32, pure = true} %p, %x : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  // div.rn is correctly rounded; fma.rn is math.fma; PTX's hex literal 0f3F800000 is 1.0.
  // CHECK: tt.precise_divf %x, %a : tensor<64xf32>
  // CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<64xf32>
  // CHECK: math.fma %x, %[[ONE]], %a : tensor<64xf32>
  %d = tt.elementwise_inline_asm "div.rn.f32 $0, $1, $2;" {constraints = "=f,f,f", packed_element = 1 : i32, pure = true} %x, %a : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %f = tt.elementwise_inline_asm "fma.rn.f32 $0, $1, 0f3F800000, $2;" {constraints = "=f,f,f", packed_element = 1 : i32, pure = true} %x, %a : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  // The ue8m0 conversion: each operand's exponent field, plus one when it must round up,
  // at most 254; 0 below zero, 255 for NaN; the first operand (here 0.0) in the high byte.
  // CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<64xf32>
  // CHECK: tt.bitcast %[[Z]] : tensor<64xf32> -> tensor<64xi32>
  // CHECK: arith.minui
  // CHECK: arith.cmpf uno, %[[Z]], %[[Z]]
  // CHECK: tt.bitcast %x : tensor<64xf32> -> tensor<64xi32>
  // CHECK: arith.cmpf uno, %x, %x
  // CHECK: arith.shli
  // CHECK: arith.ori
  // CHECK: arith.trunci %{{.*}} : tensor<64xi32> to tensor<64xi16>
  %k = tt.elementwise_inline_asm "cvt.rp.satfinite.ue8m0x2.f32 $0, 0.0, $1;" {constraints = "=h,r", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xi16>
  // Not one instruction, an integer add, packed, or no .ftz form: left alone.
  // CHECK: tt.elementwise_inline_asm "{ .reg .f32 t; mov.f32 t, $1; mov.f32 $0, t; }"
  // CHECK: tt.elementwise_inline_asm "add.s32 $0, $1, $1;"
  // CHECK: tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=r,r", packed_element = 2 : i32
  // CHECK: tt.elementwise_inline_asm "tanh.approx.ftz.f32 $0, $1;"
  %n1 = tt.elementwise_inline_asm "{ .reg .f32 t; mov.f32 t, $1; mov.f32 $0, t; }" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  %n2 = tt.elementwise_inline_asm "add.s32 $0, $1, $1;" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %u : tensor<64xi32> -> tensor<64xi32>
  %n3 = tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=r,r", packed_element = 2 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  %n4 = tt.elementwise_inline_asm "tanh.approx.ftz.f32 $0, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  tt.return
}
