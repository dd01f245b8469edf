// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 256 | FileCheck %s

// A tensor constant with distinct elements: a private read-only global in its memory
// representation (booleans as bytes, bf16 as 16-bit patterns), read like a buffer.
// CHECK: @"__tcpu_const_t_0" = private constant [4 x i8] [i8 1, i8 0, i8 0, i8 1], align 64
// CHECK: @"__tcpu_const_t_1" = private constant [2 x i16] [i16 16256, i16 -16384], align 64
// CHECK-LABEL: define external void @"t"
// CHECK: load <4 x i8>, ptr
// CHECK: trunc <4 x i8> {{.*}} to <4 x i1>
"memref.global"() <{sym_name = "__tcpu_const_t_0", type = memref<4xi1>, initial_value = dense<[true, false, false, true]> : tensor<4xi1>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
"memref.global"() <{sym_name = "__tcpu_const_t_1", type = memref<2xbf16>, initial_value = dense<[1.0, -2.0]> : tensor<2xbf16>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
func.func public @t(%o: !tt.ptr<i8>) {
  %g = memref.get_global @__tcpu_const_t_0 : memref<4xi1>
  %h = memref.get_global @__tcpu_const_t_1 : memref<2xbf16>
  %c0 = arith.constant 0 : index
  %v = vector.load %g[%c0] : memref<4xi1>, vector<4xi1>
  %w = arith.extui %v : vector<4xi1> to vector<4xi8>
  "tcpu.vstore"(%o, %w) <{alignment = 4 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (!tt.ptr<i8>, vector<4xi8>) -> ()
  func.return
}
