package luau

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Typed host functions. Each exportXxx registers a Go function with the
// wasm signature its parameter and result types spell out, and adapts
// wazero's stack of uint64 words to typed arguments once, here: host
// functions never read the stack themselves. The letters name the wasm
// types, result first: V none, I i32, J i64, F f64. The adapters are
// named func types implementing api.GoModuleFunction, so calling through
// them allocates nothing.

type i32 interface{ ~int32 | ~uint32 }

type i64 interface{ ~int64 | ~uint64 }

var (
	tI32 = api.ValueTypeI32
	tI64 = api.ValueTypeI64
	tF64 = api.ValueTypeF64
)

func export(b wazero.HostModuleBuilder, name string, fn api.GoModuleFunction, params, results []api.ValueType) {
	b.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(name)
}

type funcVV func(context.Context, api.Module)

func (fn funcVV) Call(ctx context.Context, mod api.Module, _ []uint64) { fn(ctx, mod) }

func exportVV(b wazero.HostModuleBuilder, name string, fn funcVV) {
	export(b, name, fn, nil, nil)
}

type funcVII[T0, T1 i32] func(context.Context, api.Module, T0, T1)

func (fn funcVII[T0, T1]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[1] // one bounds check
	fn(ctx, mod, T0(stack[0]), T1(stack[1]))
}

func exportVII[T0, T1 i32](b wazero.HostModuleBuilder, name string, fn funcVII[T0, T1]) {
	export(b, name, fn, []api.ValueType{tI32, tI32}, nil)
}

type funcVIII[T0, T1, T2 i32] func(context.Context, api.Module, T0, T1, T2)

func (fn funcVIII[T0, T1, T2]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[2]
	fn(ctx, mod, T0(stack[0]), T1(stack[1]), T2(stack[2]))
}

func exportVIII[T0, T1, T2 i32](b wazero.HostModuleBuilder, name string, fn funcVIII[T0, T1, T2]) {
	export(b, name, fn, []api.ValueType{tI32, tI32, tI32}, nil)
}

type funcVIIII[T0, T1, T2, T3 i32] func(context.Context, api.Module, T0, T1, T2, T3)

func (fn funcVIIII[T0, T1, T2, T3]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[3]
	fn(ctx, mod, T0(stack[0]), T1(stack[1]), T2(stack[2]), T3(stack[3]))
}

func exportVIIII[T0, T1, T2, T3 i32](b wazero.HostModuleBuilder, name string, fn funcVIIII[T0, T1, T2, T3]) {
	export(b, name, fn, []api.ValueType{tI32, tI32, tI32, tI32}, nil)
}

type funcVFFII[T2, T3 i32] func(context.Context, api.Module, float64, float64, T2, T3)

func (fn funcVFFII[T2, T3]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[3]
	fn(ctx, mod, api.DecodeF64(stack[0]), api.DecodeF64(stack[1]), T2(stack[2]), T3(stack[3]))
}

func exportVFFII[T2, T3 i32](b wazero.HostModuleBuilder, name string, fn funcVFFII[T2, T3]) {
	export(b, name, fn, []api.ValueType{tF64, tF64, tI32, tI32}, nil)
}

type funcII[TR, T0 i32] func(context.Context, api.Module, T0) TR

func (fn funcII[TR, T0]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	stack[0] = uint64(uint32(fn(ctx, mod, T0(stack[0]))))
}

func exportII[TR, T0 i32](b wazero.HostModuleBuilder, name string, fn funcII[TR, T0]) {
	export(b, name, fn, []api.ValueType{tI32}, []api.ValueType{tI32})
}

type funcIII[TR, T0, T1 i32] func(context.Context, api.Module, T0, T1) TR

func (fn funcIII[TR, T0, T1]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[1]
	stack[0] = uint64(uint32(fn(ctx, mod, T0(stack[0]), T1(stack[1]))))
}

func exportIII[TR, T0, T1 i32](b wazero.HostModuleBuilder, name string, fn funcIII[TR, T0, T1]) {
	export(b, name, fn, []api.ValueType{tI32, tI32}, []api.ValueType{tI32})
}

type funcIIII[TR, T0, T1, T2 i32] func(context.Context, api.Module, T0, T1, T2) TR

func (fn funcIIII[TR, T0, T1, T2]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[2]
	stack[0] = uint64(uint32(fn(ctx, mod, T0(stack[0]), T1(stack[1]), T2(stack[2]))))
}

func exportIIII[TR, T0, T1, T2 i32](b wazero.HostModuleBuilder, name string, fn funcIIII[TR, T0, T1, T2]) {
	export(b, name, fn, []api.ValueType{tI32, tI32, tI32}, []api.ValueType{tI32})
}

type funcIIIII[TR, T0, T1, T2, T3 i32] func(context.Context, api.Module, T0, T1, T2, T3) TR

func (fn funcIIIII[TR, T0, T1, T2, T3]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[3]
	stack[0] = uint64(uint32(fn(ctx, mod, T0(stack[0]), T1(stack[1]), T2(stack[2]), T3(stack[3]))))
}

func exportIIIII[TR, T0, T1, T2, T3 i32](b wazero.HostModuleBuilder, name string, fn funcIIIII[TR, T0, T1, T2, T3]) {
	export(b, name, fn, []api.ValueType{tI32, tI32, tI32, tI32}, []api.ValueType{tI32})
}

type funcJIIJ[TR i64, T0, T1 i32, T2 i64] func(context.Context, api.Module, T0, T1, T2) TR

func (fn funcJIIJ[TR, T0, T1, T2]) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[2]
	stack[0] = uint64(fn(ctx, mod, T0(stack[0]), T1(stack[1]), T2(stack[2])))
}

func exportJIIJ[TR i64, T0, T1 i32, T2 i64](b wazero.HostModuleBuilder, name string, fn funcJIIJ[TR, T0, T1, T2]) {
	export(b, name, fn, []api.ValueType{tI32, tI32, tI64}, []api.ValueType{tI64})
}

// funcI6 and funcI7 take six and seven i32 words (io_grep's and io_edit's
// pointers and lengths) and return one.
type funcI6 func(context.Context, api.Module, uint32, uint32, uint32, uint32, uint32, uint32) int32

func (fn funcI6) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[5]
	stack[0] = uint64(uint32(fn(ctx, mod, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4]), uint32(stack[5]))))
}

func exportI6(b wazero.HostModuleBuilder, name string, fn funcI6) {
	export(b, name, fn, []api.ValueType{tI32, tI32, tI32, tI32, tI32, tI32}, []api.ValueType{tI32})
}

type funcI7 func(context.Context, api.Module, uint32, uint32, uint32, uint32, uint32, uint32, uint32) int32

func (fn funcI7) Call(ctx context.Context, mod api.Module, stack []uint64) {
	_ = stack[6]
	stack[0] = uint64(uint32(fn(ctx, mod, uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4]), uint32(stack[5]), uint32(stack[6]))))
}

func exportI7(b wazero.HostModuleBuilder, name string, fn funcI7) {
	export(b, name, fn, []api.ValueType{tI32, tI32, tI32, tI32, tI32, tI32, tI32}, []api.ValueType{tI32})
}
