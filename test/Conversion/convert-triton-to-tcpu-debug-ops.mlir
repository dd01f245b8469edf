// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// Prints become one runtime call per element, asserts one check per vector of lanes.
// CHECK-LABEL: func.func public @effects
// CHECK: "tcpu.print"
// CHECK-SAME: prefix = " x: "
// CHECK: "tcpu.assert"
// CHECK-SAME: message = "x must be small"
tt.func public @effects(%p: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %ps = tt.splat %p : !tt.ptr<i32> -> tensor<8x!tt.ptr<i32>>
  %pp = tt.addptr %ps, %r : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
  %m = arith.constant dense<true> : tensor<8xi1>
  %old = tt.atomic_rmw add, acq_rel, gpu, %pp, %r, %m : (tensor<8x!tt.ptr<i32>>, tensor<8xi32>, tensor<8xi1>) -> tensor<8xi32>
  tt.print " x: " {hex = false, isSigned = array<i32: 1>} : %old : tensor<8xi32>
  %c = arith.constant dense<100> : tensor<8xi32>
  %ok = arith.cmpi slt, %old, %c : tensor<8xi32>
  tt.assert %ok, "x must be small" : tensor<8xi1>
  tt.return
}
