// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// tl.debug_barrier is dropped (one program runs on one thread); a scalar tl.assume
// stays for the code generator.
// CHECK-LABEL: func.func public @hints
// CHECK-NOT: ttg.barrier
// CHECK: llvm.intr.assume %{{.*}} : i1
// CHECK: "tcpu.vstore"
// CHECK-NOT: ttg.barrier
tt.func public @hints(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %c0 = arith.constant 0 : i32
  %pos = arith.cmpi sgt, %n, %c0 : i32
  llvm.intr.assume %pos : i1
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
  %v = tt.load %xp : tensor<16x!tt.ptr<f32>>
  ttg.barrier all
  tt.store %xp, %v : tensor<16x!tt.ptr<f32>>
  ttg.barrier local | global_read
  tt.return
}
