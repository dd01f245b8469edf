// RUN: triton-cpu-opt %s -p 'scoped-cse' | FileCheck %s

// Repeated side-effect-free ops are merged into the first (the loop's lower bound is the
// index constant 0 above it); a nested block sees the ops before its region, not the
// reverse (the multiplication after the loop stays); loads and allocations stay, and so
// do constants that differ only in the sign of zero.
// CHECK-LABEL: func.func @merged
// CHECK: %[[A:.*]] = memref.alloca
// CHECK-NEXT: %[[B:.*]] = memref.alloca
// CHECK-NEXT: %[[C:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[NZ:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[C]], %[[C]] : f32
// CHECK-NEXT: %[[I:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[L1:.*]] = memref.load %[[A]][%[[I]]]
// CHECK-NEXT: %[[L2:.*]] = memref.load %[[A]][%[[I]]]
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: scf.for %{{.*}} = %[[I]] to %{{.*}} step %[[ONE]]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[S]], %[[L1]] : f32
// CHECK-NEXT: memref.store %[[M]], %[[B]]
// CHECK-NEXT: memref.store %[[M]], %[[B]]
// CHECK-NEXT: }
// CHECK-NEXT: %[[M2:.*]] = arith.mulf %[[S]], %[[L1]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[Z]], %[[NZ]] : f32
// CHECK-NEXT: memref.store %[[L2]], %[[B]]
// CHECK-NEXT: memref.store %[[M2]], %[[B]]
// CHECK-NEXT: memref.store %[[T]], %[[B]]
func.func @merged(%n: index) {
  %a = memref.alloca() : memref<4xf32>
  %b = memref.alloca() : memref<4xf32>
  %c1 = arith.constant 1.0 : f32
  %c2 = arith.constant 1.0 : f32
  %z = arith.constant 0.0 : f32
  %nz = arith.constant -0.0 : f32
  %s1 = arith.addf %c1, %c2 : f32
  %s2 = arith.addf %c2, %c1 : f32
  %i = arith.constant 0 : index
  %l1 = memref.load %a[%i] : memref<4xf32>
  %l2 = memref.load %a[%i] : memref<4xf32>
  %one = arith.constant 1 : index
  %zero = arith.constant 0 : index
  scf.for %k = %zero to %n step %one {
    %m1 = arith.mulf %s1, %l1 : f32
    %m2 = arith.mulf %s2, %l1 : f32
    memref.store %m1, %b[%k] : memref<4xf32>
    memref.store %m2, %b[%k] : memref<4xf32>
  }
  %m3 = arith.mulf %s1, %l1 : f32
  %t = arith.addf %z, %nz : f32
  memref.store %l2, %b[%i] : memref<4xf32>
  memref.store %m3, %b[%i] : memref<4xf32>
  memref.store %t, %b[%i] : memref<4xf32>
  func.return
}
