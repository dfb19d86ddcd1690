package wasmrewrite

import (
	"bytes"
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/wasm"
)

// wasmModule assembles a module of the given sections (id, contents).
func wasmModule(sections ...[]byte) []byte {
	m := append([]byte(nil), wasmHeader...)
	for _, s := range sections {
		m = append(m, s[0])
		m = append(m, uleb(uint32(len(s)-1))...)
		m = append(m, s[1:]...)
	}
	return m
}

func uleb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// memorySection declares one memory of min pages.
func memorySection(min byte) []byte { return []byte{5, 1, 0, min} }

// dataSection assembles a data section of raw segments.
func dataSection(segments ...[]byte) []byte {
	s := append([]byte{sectionData}, uleb(uint32(len(segments)))...)
	for _, seg := range segments {
		s = append(s, seg...)
	}
	return s
}

// activeSegment is an active segment on memory 0 at offset.
func activeSegment(offset int32, data string) []byte {
	s := append([]byte{0, opI32Const}, appendSLEB128(nil, offset)...)
	s = append(s, opEnd)
	s = append(s, uleb(uint32(len(data)))...)
	return append(s, data...)
}

// TestWithoutActiveDataMatchesTheModule checks, on the real module and on
// small ones, that instantiating the rewritten module and writing the
// segments it returns gives the memory the original module starts with.
func TestWithoutActiveDataMatchesTheModule(t *testing.T) {
	passive := append([]byte{1}, append(uleb(3), "xyz"...)...)
	explicitMemory := append([]byte{2, 0, opI32Const}, appendSLEB128(nil, 300)...)
	explicitMemory = append(explicitMemory, opEnd, 2, 'p', 'q')
	small := wasmModule(
		memorySection(1),
		[]byte{12, 4}, // data count: 4
		dataSection(activeSegment(16, "hello"), passive, activeSegment(65530, "world!"), explicitMemory),
	)
	for name, module := range map[string][]byte{"luau.wasm": wasm.Binary, "small": small} {
		t.Run(name, func(t *testing.T) {
			stripped, segments, err := WithoutActiveData(module)
			if err != nil {
				t.Fatal(err)
			}
			if len(segments) == 0 {
				t.Fatal("no active segments found")
			}
			if len(stripped) >= len(module) {
				t.Fatalf("the rewritten module has %d bytes, the original %d", len(stripped), len(module))
			}
			want := freshMemory(t, module, nil)
			got := freshMemory(t, stripped, nil)
			if bytes.Equal(got, want) {
				t.Fatal("the rewritten module still writes its data segments")
			}
			if !bytes.Equal(freshMemory(t, stripped, segments), want) {
				t.Fatal("the rewritten module with its segments written differs from the original")
			}
			// Idempotent: rewriting again changes nothing and finds the
			// same segments, empty now.
			again, emptied, err := WithoutActiveData(stripped)
			if err != nil || !bytes.Equal(again, stripped) || len(emptied) != len(segments) {
				t.Fatalf("rewriting again: %v, same bytes %v, %d segments", err, bytes.Equal(again, stripped), len(emptied))
			}
		})
	}
}

// freshMemory instantiates module, with its imports satisfied by
// functions that do nothing (instantiating runs none of them), and returns
// its memory with segments written into it.
func freshMemory(t *testing.T, module []byte, segments []DataSegment) []byte {
	t.Helper()
	mod := instantiateWithStubs(t, module)
	return written(t, mod.Memory().Size(), mod.Memory().Read, mod.Memory().Write, segments)
}

// instantiateWithStubs instantiates module, without its start
// functions, in a runtime of its own where every function it imports is
// one that does nothing.
func instantiateWithStubs(t *testing.T, module []byte) api.Module {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	compiled, err := rt.CompileModule(ctx, module)
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]wazero.HostModuleBuilder{}
	for _, fn := range compiled.ImportedFunctions() {
		moduleName, name, _ := fn.Import()
		if hosts[moduleName] == nil {
			hosts[moduleName] = rt.NewHostModuleBuilder(moduleName)
		}
		hosts[moduleName].NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), fn.ParamTypes(), fn.ResultTypes()).
			Export(name)
	}
	for name, h := range hosts {
		if _, err := h.Instantiate(ctx); err != nil {
			t.Fatalf("stubbing %s: %v", name, err)
		}
	}
	mod, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func written(t *testing.T, size uint32, read func(uint32, uint32) ([]byte, bool), write func(uint32, []byte) bool, segments []DataSegment) []byte {
	for _, s := range segments {
		if !write(s.Offset, s.Data) {
			t.Fatalf("writing a segment of %d bytes at %d", len(s.Data), s.Offset)
		}
	}
	mem, _ := read(0, size)
	return bytes.Clone(mem)
}

func TestWithoutActiveDataRefuses(t *testing.T) {
	globalOffset := []byte{0, 0x23, 0, opEnd, 1, 'x'} // global.get 0
	otherMemory := []byte{2, 1, opI32Const, 0, opEnd, 1, 'x'}
	for name, module := range map[string][]byte{
		"no header":          []byte("\x00asm\x02\x00\x00\x00"),
		"empty":              nil,
		"truncated section":  append(wasmModule(memorySection(1)), 11, 9, 1),
		"offset from global": wasmModule(dataSection(globalOffset)),
		"other memory":       wasmModule(dataSection(otherMemory)),
		"unknown kind":       wasmModule(dataSection([]byte{3, 0})),
		"data past the end":  wasmModule(dataSection(activeSegment(0, "ab")[:5])),
		"more segments said": wasmModule([]byte{sectionData, 2, 0, opI32Const, 0, opEnd, 0}),
		"bytes after":        wasmModule(append(dataSection(activeSegment(0, "a")), 0)),
		"two data sections":  wasmModule(dataSection(), dataSection()),
		"offset too long":    wasmModule(dataSection([]byte{0, opI32Const, 0x80, 0x80, 0x80, 0x80, 0x80, 0, opEnd, 0})),
		"no end":             wasmModule(dataSection([]byte{0, opI32Const, 0, opI32Const, 0})),
	} {
		if _, _, err := WithoutActiveData(module); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzWithoutActiveData(f *testing.F) {
	f.Add(wasmModule(memorySection(1), dataSection(activeSegment(16, "hello"), activeSegment(-1, ""))))
	f.Add(wasmModule(dataSection([]byte{1, 2, 'a', 'b'}, []byte{2, 0, opI32Const, 0x7f, opEnd, 0})))
	f.Add(wasmModule([]byte{1, 0}, dataSection()))
	f.Fuzz(func(t *testing.T, module []byte) {
		stripped, segments, err := WithoutActiveData(module)
		if err != nil {
			return
		}
		if len(stripped) > len(module) {
			t.Fatalf("the rewrite grew the module from %d to %d bytes", len(module), len(stripped))
		}
		again, emptied, err := WithoutActiveData(stripped)
		if err != nil {
			t.Fatalf("the rewritten module does not parse: %v", err)
		}
		if !bytes.Equal(again, stripped) || len(emptied) != len(segments) {
			t.Fatal("rewriting twice is not rewriting once")
		}
		for i, s := range emptied {
			if len(s.Data) != 0 || s.Offset != segments[i].Offset {
				t.Fatalf("segment %d: %d bytes at %d after the rewrite, at %d before", i, len(s.Data), s.Offset, segments[i].Offset)
			}
		}
	})
}
