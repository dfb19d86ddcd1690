package wasmrewrite

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/wasm"
)

// tableModule is a small module with a function table of four entries:
// entry 0 empty, entries 1 to 3 functions returning 10, 20 and 30. Its
// export call(i) calls entry i with call_indirect. parts replaces sections
// by id, or adds them.
func tableModule(parts map[byte][]byte) []byte {
	sections := map[byte][]byte{
		sectionType:     {2, 0x60, 0, 1, valI32, 0x60, 1, valI32, 1, valI32},
		sectionFunction: {4, 0, 0, 0, 1},
		sectionTable:    {1, refTypeFuncref, 1, 4, 4},
		sectionMemory:   {1, 0, 1}, // one memory of one page
		sectionExport:   append(append([]byte{2, 4}, "call"...), 0, 3, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0),
		sectionElement:  {1, 0, opI32Const, 1, opEnd, 3, 0, 1, 2},
		sectionCode: {4,
			4, 0, opI32Const, 10, opEnd,
			4, 0, opI32Const, 20, opEnd,
			4, 0, opI32Const, 30, opEnd,
			7, 0, opLocalGet, 0, opCallInd, 0, 0, opEnd},
	}
	for id, s := range parts {
		sections[id] = s
	}
	var order []byte
	for id := range sections {
		order = append(order, id)
	}
	slices.Sort(order)
	var list [][]byte
	for _, id := range order {
		if sections[id] != nil {
			list = append(list, append([]byte{id}, sections[id]...))
		}
	}
	return wasmModule(list...)
}

func instantiateBytes(t *testing.T, module []byte) api.Module {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	mod, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

// TestLazyTableCallsGoWhereTheyWent checks on a small module that every
// index calls what it called before, or traps where it trapped, and that
// ts_table_used and ts_table_fill see and fill the entries.
func TestLazyTableCallsGoWhereTheyWent(t *testing.T) {
	ctx := context.Background()
	original := tableModule(nil)
	lazy, err := LazyTable(original, testExports)
	if err != nil {
		t.Fatal(err)
	}
	before, after := instantiateBytes(t, original), instantiateBytes(t, lazy)
	used := func() []uint32 {
		t.Helper()
		res, err := after.ExportedFunction(testExports.Used).Call(ctx, 0, 16)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := after.Memory().Read(0, uint32(res[0])*4)
		var out []uint32
		for i := 0; i < len(raw); i += 4 {
			out = append(out, binary.LittleEndian.Uint32(raw[i:]))
		}
		return out
	}
	if got := used(); len(got) != 0 {
		t.Fatalf("a new instance has entries %v filled, want none", got)
	}
	for _, i := range []uint64{2, 1, 3, 2, 0, 4, 1 << 31, 0xffffffff} {
		want, wantErr := before.ExportedFunction("call").Call(ctx, i)
		got, gotErr := after.ExportedFunction("call").Call(ctx, i)
		if (wantErr != nil) != (gotErr != nil) || (wantErr == nil && got[0] != want[0]) {
			t.Errorf("call(%d) = %v, %v; before the rewrite %v, %v", i, got, gotErr, want, wantErr)
		}
	}
	if got := used(); !slices.Equal(got, []uint32{1, 2, 3}) {
		t.Errorf("filled entries after the calls: %v, want [1 2 3]", got)
	}

	fresh := instantiateBytes(t, lazy)
	after = fresh
	fresh.Memory().Write(64, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, 3), 1))
	if _, err := fresh.ExportedFunction(testExports.Fill).Call(ctx, 64, 2); err != nil {
		t.Fatal(err)
	}
	if got := used(); !slices.Equal(got, []uint32{1, 3}) {
		t.Errorf("filled entries after ts_table_fill(3, 1): %v, want [1 3]", got)
	}
	if res, err := fresh.ExportedFunction(testExports.Used).Call(ctx, 0, 1); err != nil {
		t.Fatal(err)
	} else if res[0] != 1 {
		t.Errorf("ts_table_used with room for 1 wrote %d", res[0])
	}

	// EagerTable: the segment fills the table at instantiation again, and
	// the guarded calls still go where they went.
	eager, err := EagerTable(lazy)
	if err != nil {
		t.Fatal(err)
	}
	after = instantiateBytes(t, eager)
	if got := used(); !slices.Equal(got, []uint32{1, 2, 3}) {
		t.Errorf("EagerTable: a new instance has entries %v filled, want [1 2 3]", got)
	}
	for _, i := range []uint64{2, 1, 3, 0, 4, 0xffffffff} {
		want, wantErr := before.ExportedFunction("call").Call(ctx, i)
		got, gotErr := after.ExportedFunction("call").Call(ctx, i)
		if (wantErr != nil) != (gotErr != nil) || (wantErr == nil && got[0] != want[0]) {
			t.Errorf("EagerTable: call(%d) = %v, %v; before the rewrite %v, %v", i, got, gotErr, want, wantErr)
		}
	}
}

// TestLazyTableLeavesAlone checks that a module whose table something
// else can reach, or whose code the reader does not know, is refused
// rather than rewritten, and that a malformed one is an error.
func TestLazyTableLeavesAlone(t *testing.T) {
	body := func(code ...byte) []byte {
		return append([]byte{4,
			4, 0, opI32Const, 10, opEnd,
			4, 0, opI32Const, 20, opEnd,
			4, 0, opI32Const, 30, opEnd,
			byte(len(code) + 1), 0}, code...)
	}
	for _, tc := range []struct {
		name  string
		parts map[byte][]byte
	}{
		{"the table exported", map[byte][]byte{sectionExport: append(append([]byte{1, 4}, "call"...), 1, 0)}},
		{"the table imported", map[byte][]byte{sectionImport: append(append(append([]byte{1, 1}, 'm', 1), 't'), 1, refTypeFuncref, 0, 4), sectionTable: nil}},
		{"two tables", map[byte][]byte{sectionTable: {2, refTypeFuncref, 0, 4, refTypeFuncref, 0, 1}}},
		{"a passive segment", map[byte][]byte{sectionElement: {1, 1, 0, 3, 0, 1, 2}}},
		{"an expression segment", map[byte][]byte{sectionElement: {1, 4, opI32Const, 1, opEnd, 1, opRefFunc, 0, opEnd}}},
		{"a segment at a global's offset", map[byte][]byte{sectionElement: {1, 0, 0x23, 0, opEnd, 1, 0}}},
		{"no segment", map[byte][]byte{sectionElement: nil}},
		{"no memory", map[byte][]byte{sectionMemory: nil, sectionExport: append(append([]byte{1, 4}, "call"...), 0, 3)}},
		{"no export section", map[byte][]byte{sectionExport: nil}},
		{"table.get", map[byte][]byte{sectionCode: body(opLocalGet, 0, opTableGet, 0, opDrop, opI32Const, 0, opEnd)}},
		{"ref.func", map[byte][]byte{sectionCode: body(opRefFunc, 0, opDrop, opI32Const, 0, opEnd)}},
		{"table.size", map[byte][]byte{sectionCode: body(0xfc, 16, 0, opEnd)}},
		{"call_indirect on table 1", map[byte][]byte{sectionCode: body(opLocalGet, 0, opCallInd, 0, 1, opEnd)}},
		{"a SIMD instruction", map[byte][]byte{sectionCode: body(0xfd, 12, opEnd)}},
		{"a tail call", map[byte][]byte{sectionCode: body(opLocalGet, 0, 0x13, 0, 0, opEnd)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LazyTable(tableModule(tc.parts), testExports); !errors.Is(err, ErrUnsupportedTable) {
				t.Errorf("got %v, want ErrUnsupportedTable", err)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		module []byte
	}{
		{"not a module", []byte("\x00asm\x02\x00\x00\x00")},
		{"a truncated body", tableModule(map[byte][]byte{sectionCode: {1, 5, 0, opI32Const}})},
		{"a truncated section", tableModule(nil)[:40]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LazyTable(tc.module, testExports); err == nil || errors.Is(err, ErrUnsupportedTable) {
				t.Errorf("got %v, want an error about the module", err)
			}
		})
	}
}

// testExports are the names the tests give the added exports.
var testExports = TableExports{Fill: "fill_table", Used: "table_used"}

// luauExports are the names luau-build/build.sh gives them.
var luauExports = TableExports{Fill: wasm.TableFillExport, Used: wasm.TableUsedExport}

// TestLazyTableOnLuau checks the committed module, which
// luau-build/build.sh rewrote: it carries the added exports, it compiles,
// every call_indirect is guarded, the element section is one declarative
// segment naming the functions of the original segments (which EagerTable
// restores), and a second rewrite is refused.
func TestLazyTableOnLuau(t *testing.T) {
	lazy := wasm.Binary
	if ok, err := HasTableExports(lazy, luauExports); err != nil || !ok {
		t.Fatalf("wasm/luau.wasm does not export %s and %s (%v): run luau-build/build.sh", luauExports.Fill, luauExports.Used, err)
	}
	if _, err := LazyTable(lazy, luauExports); !errors.Is(err, ErrUnsupportedTable) {
		t.Errorf("rewriting the rewritten module: got %v, want ErrUnsupportedTable", err)
	}
	eager, err := EagerTable(lazy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for _, module := range [][]byte{lazy, eager} {
		if _, err := rt.CompileModule(ctx, module); err != nil {
			t.Fatalf("the module does not compile: %v", err)
		}
	}
	original, rewritten := readSections(t, eager), readSections(t, lazy)
	fill := rewritten.importedFuncs + rewritten.funcs - addedFunctions + addedFill
	indirect, guarded := callIndirects(t, rewritten.sections[rewritten.codeIndex].content, fill)
	if indirect < 100 || guarded != indirect {
		t.Errorf("the module has %d call_indirect, %d of them guarded", indirect, guarded)
	}
	var elements []byte
	for _, s := range rewritten.sections {
		if s.id == sectionElement {
			elements = s.content
		}
	}
	if !bytes.Equal(elements, original.declarativeElementsOf(t)) {
		t.Error("the element section is not one declarative segment of the table's functions")
	}
}

// readSections reads module's sections, and what LazyTable reads of
// them but the element section.
func readSections(t *testing.T, module []byte) *lazyModule {
	t.Helper()
	m := &lazyModule{codeIndex: -1, names: testExports}
	if err := eachSection(module, func(id byte, content []byte) error {
		m.sections = append(m.sections, rawSection{id: id, content: content})
		if id != sectionElement && id != sectionCustom {
			return m.read(id, content)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// declarativeElementsOf reads m's element section and returns the
// declarative segment LazyTable makes of it.
func (m *lazyModule) declarativeElementsOf(t *testing.T) []byte {
	t.Helper()
	for _, s := range m.sections {
		if s.id == sectionElement {
			r := wasmReader{b: s.content}
			if err := m.readElements(&r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(m.entries) < 100 {
		t.Fatalf("the module's table has %d entries", len(m.entries))
	}
	m.indices = slices.Sorted(maps.Keys(m.entries))
	return m.declarativeElements()
}

// callIndirects counts the call_indirect instructions of a code section,
// and those right after the guard rewriteBody puts before them (when fill
// is not 0): local.tee s, table.get 0, ref.is_null, if, local.get s,
// call fill, end, local.get s.
func callIndirects(t *testing.T, code []byte, fill uint32) (all, guarded int) {
	t.Helper()
	type instruction struct {
		op        byte
		immediate uint32
	}
	guard := []byte{opLocalTee, opTableGet, opRefIsNull, opIf, opLocalGet, opCall, opEnd, opLocalGet}
	r := wasmReader{b: code}
	n, _ := r.u32()
	for range n {
		body, err := r.bytes()
		if err != nil {
			t.Fatal(err)
		}
		b := wasmReader{b: body}
		groups, _ := b.u32()
		for range groups {
			b.u32()
			b.byte()
		}
		var seen []instruction
		for b.pos < len(body) {
			op, _ := b.byte()
			immediate, _ := (&wasmReader{b: body, pos: b.pos}).u32()
			if op == opCallInd {
				all++
				if k := len(seen) - len(guard); fill != 0 && k >= 0 {
					ok := seen[k+5].immediate == fill && seen[k].immediate == seen[k+4].immediate && seen[k+4].immediate == seen[k+7].immediate
					for j, g := range guard {
						ok = ok && seen[k+j].op == g
					}
					if ok {
						guarded++
					}
				}
			}
			switch op { // the instructions of the guard and the added functions
			case opTableGet, opTableSet, opRefFunc:
				b.skipLEB()
			case opRefIsNull:
			default:
				if err := b.skipImmediates(op); err != nil {
					t.Fatal(err)
				}
			}
			seen = append(seen, instruction{op, immediate})
		}
	}
	return all, guarded
}

// FuzzLazyTable checks that the rewrite never panics, and that a
// module wazero compiles stays one it compiles.
func FuzzLazyTable(f *testing.F) {
	f.Add(tableModule(nil))
	f.Add(tableModule(map[byte][]byte{sectionElement: {2, 0, opI32Const, 1, opEnd, 1, 0, 2, 0, opI32Const, 3, opEnd, 0, 1, 2}}))
	f.Add(tableModule(map[byte][]byte{sectionElement: {1, 2, 0, opI32Const, 0, opEnd, 0, 2, 2, 1}}))
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	f.Fuzz(func(t *testing.T, module []byte) {
		out, err := LazyTable(module, testExports)
		if err != nil {
			return
		}
		if _, err := rt.CompileModule(ctx, module); err != nil {
			return
		}
		if _, err := rt.CompileModule(ctx, out); err != nil {
			t.Fatalf("the module compiles, its rewrite does not: %v", err)
		}
		if ok, err := HasTableExports(out, testExports); !ok || err != nil {
			t.Fatalf("the rewrite does not carry its exports: %v, %v", ok, err)
		}
		if again, lazy := EnsureLazyTable(out, testExports); !lazy || !bytes.Equal(again, out) {
			t.Fatal("EnsureLazyTable rewrote a rewritten module")
		}
		eager, err := EagerTable(out)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.CompileModule(ctx, eager); err != nil {
			t.Fatalf("the module compiles, EagerTable of its rewrite does not: %v", err)
		}
	})
}

// FuzzCallIndirectSites checks the inline reading of instructions against
// reading every one through skipImmediates: the same sites, or an error
// from both.
func FuzzCallIndirectSites(f *testing.F) {
	f.Add([]byte{opLocalGet, 0, opCallInd, 0, 0, opI32Load, 2, 8, opEnd})
	f.Add([]byte{opI32Load, 0x40, 0, 0, opEnd})
	f.Add([]byte{0x42, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, opEnd})
	f.Add([]byte{opI32Const, 0x80})
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, fastErr := callIndirectSites(body, 0)
		var slow []int
		var slowErr error
		r := wasmReader{b: body}
		for r.pos < len(body) && slowErr == nil {
			op, _ := r.byte()
			if op == opCallInd {
				slow = append(slow, r.pos-1)
			}
			slowErr = r.skipImmediates(op)
		}
		if (fastErr != nil) != (slowErr != nil) || (fastErr == nil && !slices.Equal(fast, slow)) {
			t.Fatalf("inline: %v, %v; one by one: %v, %v", fast, fastErr, slow, slowErr)
		}
	})
}
