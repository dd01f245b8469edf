// RUN: triton-cpu-opt %s -p 'convert-triton-to-tcpu{vector-bits=256},insert-bounds-checks' | FileCheck %s

// Each access to user memory gets a tcpu.bounds_check whose result becomes the access's
// mask: a contiguous load checks 8 lanes from one address against argument 0, a store
// through argument 1 keeps its own mask as the check's input.
// CHECK-LABEL: func.func public @copy
// CHECK: %[[OK:.*]] = "tcpu.bounds_check"(%{{.*}}) <{kind = "load", args = array<i32: 0>, lanes = 8 : i32, elem_bytes = 4 : i32, file = "copy.py", line = 7 : i32
// CHECK: "tcpu.vload"(%{{.*}}, %[[OK]])
// CHECK: %[[SOK:.*]] = "tcpu.bounds_check"(%{{.*}}, %{{.*}}) <{kind = "store", args = array<i32: 1>, lanes = 8 : i32, elem_bytes = 4 : i32, file = "copy.py", line = 8 : i32
// CHECK: "tcpu.vstore"(%{{.*}}, %{{.*}}, %[[SOK]])
tt.func public @copy(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
  %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %xs = tt.splat %x : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
  %xp = tt.addptr %xs, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
  %v = tt.load %xp : tensor<8x!tt.ptr<f32>> loc(#l7)
  %ns = tt.splat %n : i32 -> tensor<8xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<8xi32>
  %ys = tt.splat %y : !tt.ptr<f32> -> tensor<8x!tt.ptr<f32>>
  %yp = tt.addptr %ys, %r : tensor<8x!tt.ptr<f32>>, tensor<8xi32>
  tt.store %yp, %v, %m : tensor<8x!tt.ptr<f32>> loc(#l8)
  tt.return
}

// A pointer selected from two arguments may be in either; one made from an integer is
// not checked at all (its storage is unknown to the launch).
// CHECK-LABEL: func.func public @either
// CHECK: "tcpu.bounds_check"{{.*}}kind = "atomic", args = array<i32: 0, 1>
// CHECK: "tcpu.atomic_rmw"
// CHECK-NOT: tcpu.bounds_check
// CHECK: "tcpu.load"
// CHECK: func.return
tt.func public @either(%a: !tt.ptr<i32>, %b: !tt.ptr<i32>, %c: i1, %raw: i64) {
  %p = arith.select %c, %a, %b : !tt.ptr<i32>
  %one = arith.constant 1 : i32
  %t = arith.constant true
  %old = tt.atomic_rmw add, relaxed, gpu, %p, %one, %t : (!tt.ptr<i32>, i32, i1) -> i32
  %q = tt.int_to_ptr %raw : i64 -> !tt.ptr<i32>
  %v = tt.load %q : !tt.ptr<i32>
  tt.store %a, %v : !tt.ptr<i32>
  tt.return
}
#l7 = loc("copy.py":7:8)
#l8 = loc("copy.py":8:4)
