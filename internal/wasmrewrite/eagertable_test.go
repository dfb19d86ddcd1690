package wasmrewrite

import (
	"bytes"
	"testing"
)

// TestEnsureLazyTable checks each case of EnsureLazyTable: a module that
// carries the exports is returned as it is, one that can be rewritten is,
// and one that cannot is returned as it is.
func TestEnsureLazyTable(t *testing.T) {
	original := tableModule(nil)
	lazy, err := LazyTable(original, testExports)
	if err != nil {
		t.Fatal(err)
	}
	refused := tableModule(map[byte][]byte{sectionElement: {1, 1, 0, 3, 0, 1, 2}}) // a passive segment
	for _, tc := range []struct {
		name     string
		module   []byte
		want     []byte
		wantLazy bool
	}{
		{"rewritten when built", lazy, lazy, true},
		{"rewritten here", original, lazy, true},
		{"left alone", refused, refused, false},
		{"malformed", original[:30], original[:30], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, isLazy := EnsureLazyTable(tc.module, testExports)
			if isLazy != tc.wantLazy || !bytes.Equal(got, tc.want) {
				t.Errorf("got %d bytes, lazy %v; want %d bytes, lazy %v", len(got), isLazy, len(tc.want), tc.wantLazy)
			}
		})
	}
}

// TestHasTableExports checks that both exports, as functions, are needed.
func TestHasTableExports(t *testing.T) {
	lazy, err := LazyTable(tableModule(nil), testExports)
	if err != nil {
		t.Fatal(err)
	}
	export := func(name string, kind byte) []byte {
		return append(append([]byte{1, byte(len(name))}, name...), kind, 0)
	}
	for _, tc := range []struct {
		name   string
		module []byte
		want   bool
	}{
		{"the rewrite", lazy, true},
		{"the original", tableModule(nil), false},
		{"one of the two", tableModule(map[byte][]byte{sectionExport: export(testExports.Fill, 0)}), false},
		{"the names, not as functions", tableModule(map[byte][]byte{sectionExport: append(append(append([]byte{2, byte(len(testExports.Fill))}, testExports.Fill...), 2, 0, byte(len(testExports.Used))), append([]byte(testExports.Used), 3, 0)...)}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := HasTableExports(tc.module, testExports); err != nil || got != tc.want {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if got, err := HasTableExports(lazy, TableExports{Fill: testExports.Fill, Used: testExports.Fill}); got || err != nil {
		t.Errorf("one name twice: got %v, %v", got, err)
	}
	if _, err := HasTableExports(lazy[:len(lazy)-3], testExports); err == nil {
		t.Error("a truncated module: no error")
	}
}

// TestEagerTableRefuses checks that only a module LazyTable rewrote has an
// element section to restore.
func TestEagerTableRefuses(t *testing.T) {
	for name, module := range map[string][]byte{
		"not rewritten": tableModule(nil),
		"not a module":  []byte("\x00asm\x02\x00\x00\x00"),
		"truncated":     tableModule(nil)[:40],
	} {
		if _, err := EagerTable(module); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestLazyTableNeedsTwoNames checks that the added exports get two names.
func TestLazyTableNeedsTwoNames(t *testing.T) {
	for _, names := range []TableExports{{}, {Fill: "f"}, {Fill: "f", Used: "f"}} {
		if _, err := LazyTable(tableModule(nil), names); err == nil {
			t.Errorf("%+v: no error", names)
		}
	}
}

// FuzzEagerTable checks that reading arbitrary bytes for the exports and
// the kept element section never panics, and that restoring keeps every
// section but the custom one LazyTable added.
func FuzzEagerTable(f *testing.F) {
	lazy, err := LazyTable(tableModule(nil), testExports)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(lazy)
	f.Add(tableModule(nil))
	f.Fuzz(func(t *testing.T, module []byte) {
		_, _ = HasTableExports(module, testExports)
		eager, err := EagerTable(module)
		if err != nil {
			return
		}
		if len(eager) > len(module) {
			t.Fatalf("EagerTable grew the module from %d to %d bytes", len(module), len(eager))
		}
		if _, err := EagerTable(eager); err == nil {
			t.Fatal("EagerTable's result still has the kept element section")
		}
	})
}
