// RUN: triton-cpu-opt %s --emit-llvm --no-opt --vector-bits 512 | FileCheck %s

// AMX tile ops become LLVM's AMX intrinsics on the registers they name: ldtilecfg of a
// private constant (palette 1; tiles 0..7 of 64 bytes per row, then 16 rows each),
// tilezero, tileloadd64 / tilestored64 at the element's address with the memref's row pitch in
// bytes (32 f32: 128; 32 i16: 64; 64 i16: 128), tdpbf16ps(acc, a, b) or tdpbssd (int8), tilerelease. A module that
// configures tiles exports a marker the driver checks before running it.
// CHECK-LABEL: define external void @"k"
// CHECK: call void @"llvm.x86.ldtilecfg"({{.*}} @".tcpu.tile_config")
// CHECK: call void @"llvm.x86.tilezero"(i8 1)
// CHECK: call void @"llvm.x86.tileloadd64"(i8 0, ptr %{{.*}}, i64 128)
// CHECK: call void @"llvm.x86.tileloadd64"(i8 4, ptr %{{.*}}, i64 64)
// CHECK: call void @"llvm.x86.tileloadd64"(i8 6, ptr %{{.*}}, i64 128)
// CHECK: call void @"llvm.x86.tdpbf16ps"(i8 0, i8 4, i8 6)
// CHECK: call void @"llvm.x86.tdpbssd"(i8 1, i8 4, i8 6)
// CHECK: call void @"llvm.x86.tilestored64"(i8 0, ptr %{{.*}}, i64 128)
// CHECK: call void @"llvm.x86.tilerelease"()
// CHECK: @".tcpu.tile_config" = private constant [64 x i8] c"\01\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00@\00@\00@\00@\00@\00@\00@\00@\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\10\10\10\10\10\10\10\10\00\00\00\00\00\00\00\00", align 64
// CHECK: @"triton_cpu_uses_amx_tiles" = constant i8 1
func.func public @k(%i: index) {
  %c0 = arith.constant 0 : index
  %c = memref.alloca() {alignment = 64 : i64} : memref<16x32xf32>
  %a = memref.alloca() {alignment = 64 : i64} : memref<16x32xi16>
  %b = memref.alloca() {alignment = 64 : i64} : memref<16x64xi16>
  "tcpu.tile_config"() : () -> ()
  "tcpu.tile_zero"() <{tile = 1 : i32}> : () -> ()
  "tcpu.tile_load"(%c, %c0, %i) <{tile = 0 : i32}> : (memref<16x32xf32>, index, index) -> ()
  "tcpu.tile_load"(%a, %c0, %c0) <{tile = 4 : i32}> : (memref<16x32xi16>, index, index) -> ()
  "tcpu.tile_load"(%b, %c0, %c0) <{tile = 6 : i32}> : (memref<16x64xi16>, index, index) -> ()
  "tcpu.tile_dot"() <{kind = "bf16", acc = 0 : i32, a = 4 : i32, b = 6 : i32}> : () -> ()
  "tcpu.tile_dot"() <{kind = "ss", acc = 1 : i32, a = 4 : i32, b = 6 : i32}> : () -> ()
  "tcpu.tile_store"(%c, %c0, %i) <{tile = 0 : i32}> : (memref<16x32xf32>, index, index) -> ()
  "tcpu.tile_release"() : () -> ()
  func.return
}
