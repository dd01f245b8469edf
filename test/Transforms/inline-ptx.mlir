// RUN: triton-cpu-opt %s -p inline-ptx | FileCheck %s

// One-instruction PTX approximations become the math ops they approximate; `.ftz` flushes
// subnormal operands and results to a zero of their sign; mov is the operand itself (a
// bitcast to another 32-bit type); two- and three-operand arithmetic becomes arith/math ops,
// `.rn` ones marked never to contract into an fma; sources may be float literals. Other
// inline assembly is left in place.
// CHECK-LABEL: tt.func public @ptx
tt.func public @ptx(%x: tensor<64xf32>, %u: tensor<64xi32>, %s: f32, %v: tensor<64xi8>, %ptr: tensor<64x!tt.ptr<i32>>) {
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
  // CHECK: arith.trunci %{{.*}} : tensor<64xi32> to tensor<64xi8>
  // CHECK: arith.shli %{{.*}} : tensor<64xi16>
  // CHECK: %[[K:.*]] = arith.ori %{{.*}} : tensor<64xi16>
  %k = tt.elementwise_inline_asm "cvt.rp.satfinite.ue8m0x2.f32 $0, 0.0, $1;" {constraints = "=h,r", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xi16>
  // A block: registers are SSA values, a predicated instruction a select on its predicate
  // (fla's softplus); the literal 20. is read as an f32.
  // CHECK: %[[C20:.*]] = arith.constant dense<2.000000e+01> : tensor<64xf32>
  // CHECK: %[[GT:.*]] = arith.cmpf ogt, %x, %[[C20]] : tensor<64xf32>
  // CHECK: math.exp2
  // CHECK: math.log2
  // CHECK: %[[SP:.*]] = arith.select %[[GT]], %{{.*}}, %{{.*}} : tensor<64xi1>, tensor<64xf32>
  %sp = tt.elementwise_inline_asm "{ .reg .pred p; setp.gt.f32 p, $1, 20.; @p mov.f32 $0, $1; @!p ex2.approx.ftz.f32 $0, $1; @!p lg2.approx.ftz.f32 $0, $0; }" {constraints = "=r,r", packed_element = 1 : i32, pure = true} %x : tensor<64xf32> -> tensor<64xf32>
  // Two fp8 codes in one 16-bit register: tt.fp_to_fp to f8E4M3FN (saturating), a in the
  // high byte; then integer moves: zero-extended to 32 bits, shifted.
  // CHECK: tt.fp_to_fp %x, rounding = rtne : tensor<64xf32> -> tensor<64xf8E4M3FN>
  // CHECK: tt.bitcast %{{.*}} : tensor<64xf8E4M3FN> -> tensor<64xi8>
  // CHECK: %[[W:.*]] = arith.extui %{{.*}} : tensor<64xi16> to tensor<64xi32>
  // CHECK: %[[EIGHT:.*]] = arith.constant dense<8> : tensor<64xi32>
  // CHECK: arith.shrui %[[W]], %[[EIGHT]] : tensor<64xi32>
  %e8:2 = tt.elementwise_inline_asm "{ .reg .b16 packed; cvt.rn.satfinite.e4m3x2.f32 packed, $3, $2; cvt.u32.u16 $0, packed; shr.b32 $1, $0, 8; }" {constraints = "=r,=r,r,r", packed_element = 1 : i32, pure = true} %x, %x : tensor<64xf32>, tensor<64xf32> -> tensor<64xi32>, tensor<64xi32>
  // pack = 4 over i8 elements: one 32-bit register per instance, so the block becomes the
  // scalar body of a tt.map_elementwise with the four bytes packed low byte first.
  // CHECK: %[[M:.*]] = "tt.map_elementwise"(%v) <{pack = 4 : i32}> ({
  // CHECK: ^{{.*}}(%[[B0:.*]]: i8, %[[B1:.*]]: i8, %[[B2:.*]]: i8, %[[B3:.*]]: i8):
  // CHECK: arith.extui %[[B0]] : i8 to i32
  // CHECK: arith.extui %[[B1]] : i8 to i32
  // CHECK: arith.shli
  // CHECK: tt.map_elementwise.return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i8, i8, i8, i8
  %m = tt.elementwise_inline_asm "prmt.b32 $0, $1, 0, 0x0123;" {constraints = "=r,r", packed_element = 4 : i32, pure = true} %v : tensor<64xi8> -> tensor<64xi8>
  // ld through a pointer operand: tt.load of the type's width at the pointer plus the byte
  // offset, zero-extended into the 32-bit result register.
  // CHECK: %[[P8:.*]] = tt.bitcast %ptr : tensor<64x!tt.ptr<i32>> -> tensor<64x!tt.ptr<i8>>
  // CHECK: %[[Q:.*]] = tt.addptr %[[P8]], %{{.*}} : tensor<64x!tt.ptr<i8>>, tensor<64xi32>
  // CHECK: %[[L:.*]] = tt.load %[[Q]] : tensor<64x!tt.ptr<i8>>
  // CHECK: arith.extui %[[L]] : tensor<64xi8> to tensor<64xi32>
  %ld = tt.elementwise_inline_asm "ld.global.nc.b8 $0, [$1+3];" {constraints = "=r,l", packed_element = 1 : i32, pure = true} %ptr : tensor<64x!tt.ptr<i32>> -> tensor<64xi32>
  tt.return
}

// An `n` operand (an immediate on the GPU; Triton passes the Python int as a constant) is
// read as a register of its operand's width, and where the instruction needs an immediate
// (lop3's truth table) its constant is used: 0xC0 selects the minterms a&b&~c and a&b&c.
// CHECK-LABEL: tt.func public @immediate_operand
tt.func public @immediate_operand(%u: tensor<64xi32>, %w: tensor<64xi32>) -> tensor<64xi32> {
  %lut = arith.constant dense<192> : tensor<64xi32>
  // CHECK-NOT: tt.elementwise_inline_asm
  // CHECK: %[[NOTW:.*]] = arith.xori %w, %{{.*}} : tensor<64xi32>
  // CHECK: arith.andi %{{.*}}, %[[NOTW]] : tensor<64xi32>
  // CHECK: %[[LO:.*]] = arith.ori %{{.*}}, %{{.*}} : tensor<64xi32>
  // CHECK: %[[HI:.*]] = arith.andi %{{.*}}, %w : tensor<64xi32>
  // CHECK: %[[R:.*]] = arith.ori %[[LO]], %[[HI]] : tensor<64xi32>
  // CHECK: tt.return %[[R]]
  %r = tt.elementwise_inline_asm "lop3.b32 $0, $1, $1, $2, $3;" {constraints = "=r,r,r,n", packed_element = 1 : i32, pure = true} %u, %w, %lut : tensor<64xi32>, tensor<64xi32>, tensor<64xi32> -> tensor<64xi32>
  tt.return %r : tensor<64xi32>
}
