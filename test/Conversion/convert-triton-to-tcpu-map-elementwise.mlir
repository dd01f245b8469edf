// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256}' | FileCheck %s

// The scalar region (branches included) is outlined into a private function, with the
// constant hoisted out of it cloned back in; the op is a loop calling it per element.
// CHECK: func.func private @sign__map_elementwise_1(%{{.*}}: i32, %{{.*}}: i32) -> i32
// CHECK: arith.constant -1 : i32
// CHECK: cf.cond_br
// CHECK-LABEL: func.func public @sign
// CHECK: scf.for
// CHECK: func.call @sign__map_elementwise_1
// CHECK: memref.store
tt.func public @sign(%x: !tt.ptr<i32> {tt.divisibility = 16 : i32}) {
  %m1 = arith.constant -1 : i32
  %c1 = arith.constant 1 : i32
  %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
  %xs = tt.splat %x : !tt.ptr<i32> -> tensor<16x!tt.ptr<i32>>
  %xp = tt.addptr %xs, %r : tensor<16x!tt.ptr<i32>>, tensor<16xi32>
  %v = tt.load %xp : tensor<16x!tt.ptr<i32>>
  %s = "tt.map_elementwise"(%v, %r) <{pack = 1 : i32}> ({
  ^bb0(%a: i32, %b: i32):
    %lt = arith.cmpi slt, %a, %b : i32
    cf.cond_br %lt, ^bb1(%m1 : i32), ^bb1(%c1 : i32)
  ^bb1(%res: i32):
    tt.map_elementwise.return %res : i32
  }) : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi32>
  tt.store %xp, %s : tensor<16x!tt.ptr<i32>>
  tt.return
}
