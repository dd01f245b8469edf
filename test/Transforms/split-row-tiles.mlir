// RUN: triton-cpu-opt %s -p split-row-tiles | FileCheck %s

// Inductor's persistent softmax on an [8, 1024] tile. The row index becomes the loop's
// induction variable (splat to one element), every 8xN tensor becomes 1xN (the splat
// constant keeps its value), the broadcast of the [1, 1024] column index disappears, and
// the program id and the column index, which depend on no row, stay before the loop.
// CHECK-LABEL: tt.func public @softmax
// CHECK: %pid = tt.get_program_id x : i32
// CHECK: %cols = tt.expand_dims %r {axis = 0 : i32} : tensor<1024xi32> -> tensor<1x1024xi32>
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK: %c1024 = arith.constant dense<1024> : tensor<1x1xi32>
// CHECK: %[[X:.*]] = tt.splat %[[ROW]] : i32 -> tensor<1xi32>
// CHECK: %rows = tt.expand_dims %[[X]] {axis = 1 : i32} : tensor<1xi32> -> tensor<1x1xi32>
// CHECK: %off = arith.addi %cols, %{{.*}} : tensor<1x1024xi32>
// CHECK: %v = tt.load %{{.*}} : tensor<1x1024x!tt.ptr<f32>>
// CHECK: "tt.reduce"(%v) <{axis = 1 : i32}>
// CHECK: (tensor<1x1024xf32>) -> tensor<1xf32>
// CHECK: tt.store %{{.*}}, %{{.*}} : tensor<1x1024x!tt.ptr<f32>>
// CHECK: }
// CHECK-NEXT: tt.return
tt.func public @softmax(%in: !tt.ptr<f32>, %out: !tt.ptr<f32>) {
  %c1024 = arith.constant dense<1024> : tensor<8x1xi32>
  %c8 = arith.constant 8 : i32
  %pid = tt.get_program_id x : i32
  %x0 = arith.muli %pid, %c8 : i32
  %xr = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %rows = tt.expand_dims %xr {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %x0s = tt.splat %x0 : i32 -> tensor<8x1xi32>
  %xi = arith.addi %x0s, %rows : tensor<8x1xi32>
  %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32>
  %cols = tt.expand_dims %r {axis = 0 : i32} : tensor<1024xi32> -> tensor<1x1024xi32>
  %rowoff = arith.muli %xi, %c1024 : tensor<8x1xi32>
  %colsb = tt.broadcast %cols : tensor<1x1024xi32> -> tensor<8x1024xi32>
  %rowb = tt.broadcast %rowoff : tensor<8x1xi32> -> tensor<8x1024xi32>
  %off = arith.addi %colsb, %rowb : tensor<8x1024xi32>
  %inp = tt.splat %in : !tt.ptr<f32> -> tensor<8x1024x!tt.ptr<f32>>
  %ptrs = tt.addptr %inp, %off : tensor<8x1024x!tt.ptr<f32>>, tensor<8x1024xi32>
  %v = tt.load %ptrs : tensor<8x1024x!tt.ptr<f32>>
  %m = "tt.reduce"(%v) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %mx = arith.maxnumf %a, %b : f32
    tt.reduce.return %mx : f32
  }) : (tensor<8x1024xf32>) -> tensor<8xf32>
  %m2 = tt.expand_dims %m {axis = 1 : i32} : tensor<8xf32> -> tensor<8x1xf32>
  %mb = tt.broadcast %m2 : tensor<8x1xf32> -> tensor<8x1024xf32>
  %d = arith.subf %v, %mb : tensor<8x1024xf32>
  %e = math.exp %d : tensor<8x1024xf32>
  %outp = tt.splat %out : !tt.ptr<f32> -> tensor<8x1024x!tt.ptr<f32>>
  %optrs = tt.addptr %outp, %off : tensor<8x1024x!tt.ptr<f32>>, tensor<8x1024xi32>
  tt.store %optrs, %e : tensor<8x1024x!tt.ptr<f32>>
  tt.return
}

// Each row's share of the total (a reduce of the [8] row sums along axis 0) needs every
// row at once: the kernel is left as it is.
// CHECK-LABEL: tt.func public @across_rows
// CHECK-NOT: scf.for
// CHECK: tt.load %{{.*}} : tensor<8x256x!tt.ptr<f32>>
tt.func public @across_rows(%in: !tt.ptr<f32>, %out: !tt.ptr<f32>) {
  %c256 = arith.constant dense<256> : tensor<8x1xi32>
  %xr = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
  %rows = tt.expand_dims %xr {axis = 1 : i32} : tensor<8xi32> -> tensor<8x1xi32>
  %r = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
  %cols = tt.expand_dims %r {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
  %rowoff = arith.muli %rows, %c256 : tensor<8x1xi32>
  %colsb = tt.broadcast %cols : tensor<1x256xi32> -> tensor<8x256xi32>
  %rowb = tt.broadcast %rowoff : tensor<8x1xi32> -> tensor<8x256xi32>
  %off = arith.addi %colsb, %rowb : tensor<8x256xi32>
  %inp = tt.splat %in : !tt.ptr<f32> -> tensor<8x256x!tt.ptr<f32>>
  %ptrs = tt.addptr %inp, %off : tensor<8x256x!tt.ptr<f32>>, tensor<8x256xi32>
  %v = tt.load %ptrs : tensor<8x256x!tt.ptr<f32>>
  %s = "tt.reduce"(%v) <{axis = 1 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %sum = arith.addf %a, %b : f32
    tt.reduce.return %sum : f32
  }) : (tensor<8x256xf32>) -> tensor<8xf32>
  %t = "tt.reduce"(%s) <{axis = 0 : i32}> ({
  ^bb0(%a: f32, %b: f32):
    %sum = arith.addf %a, %b : f32
    tt.reduce.return %sum : f32
  }) : (tensor<8xf32>) -> f32
  %tb = tt.splat %t : f32 -> tensor<8xf32>
  %q = arith.divf %s, %tb : tensor<8xf32>
  %q2 = tt.expand_dims %q {axis = 1 : i32} : tensor<8xf32> -> tensor<8x1xf32>
  %outp = tt.splat %out : !tt.ptr<f32> -> tensor<8x1x!tt.ptr<f32>>
  %optrs = tt.addptr %outp, %rows : tensor<8x1x!tt.ptr<f32>>, tensor<8x1xi32>
  tt.store %optrs, %q2 : tensor<8x1x!tt.ptr<f32>>
  tt.return
}
