package luau

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/memimage"
	"github.com/toolscript/toolscript/internal/wasmrewrite"
	"github.com/toolscript/toolscript/wasm"
)

// mustInstance is a new instance of rt; the caller closes it.
func mustInstance(t *testing.T, rt *Runtime) *instance {
	t.Helper()
	inst, err := rt.newInstance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestTableHotFilledAhead checks that the runtime learns which entries of
// the table an execution fills, that each new instance has them filled
// before it waits in the pool, and that an execution then fills the
// others it needs on its own.
func TestTableHotFilledAhead(t *testing.T) {
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	if !rt.lazyTable {
		t.Fatal("the Luau module's table is filled when an instance is made")
	}
	first := mustInstance(t, rt)
	first.close()
	hot := rt.sdk.Load().image.tableHot
	if len(hot) < 5 || len(hot) > 100 {
		t.Fatalf("an execution of %q fills %d entries of the table: %v", warmUpScript, len(hot), hot)
	}
	inst := mustInstance(t, rt)
	if got := inst.tableUsed(ctx); !slices.Equal(got, hot) {
		t.Errorf("a new instance has entries %v filled, want %v", got, hot)
	}
	inst.close()

	res := rt.Execute(ctx, Script{Source: []byte(`return string.format("%d", #table.concat({"a", "b"})) .. tostring(math.floor(2.5))`)})
	if res.Error != nil || string(res.Value) != `"22"` {
		t.Fatalf("execution: %s, %+v", res.Value, res.Error)
	}
}

// TestModuleLoadedAsBuilt checks that the embedded module, whose table
// luau-build/build.sh made fill on demand, is compiled as it was built:
// not rewritten again, only its data segments lifted out where instances
// start from a template.
func TestModuleLoadedAsBuilt(t *testing.T) {
	var r Runtime
	module, err := r.loadModule(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := wasm.Binary
	if memimage.Supported {
		if want, _, err = wasmrewrite.WithoutActiveData(wasm.Binary); err != nil {
			t.Fatal(err)
		}
	}
	if !r.lazyTable || !bytes.Equal(module, want) {
		t.Errorf("the embedded module is loaded with lazyTable %v, %d bytes; want it as built, %d bytes", r.lazyTable, len(module), len(want))
	}
}

// TestModuleWithoutTableExports checks that a module which does not fill
// its table on demand, and cannot be made to (here the embedded module
// with its table filled at instantiation and the two exports renamed), is
// used as it is: scripts run, and nothing asks the table what it filled.
func TestModuleWithoutTableExports(t *testing.T) {
	eager, err := wasmrewrite.EagerTable(wasm.Binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{tableExports.Fill, tableExports.Used} {
		renamed := "xx" + name[2:]
		if n := bytes.Count(eager, []byte(name)); n != 1 {
			t.Fatalf("the module holds %q %d times", name, n)
		}
		eager = bytes.ReplaceAll(eager, []byte(name), []byte(renamed))
	}
	ctx := context.Background()
	rt, err := New(ctx, Config{Module: eager, CacheDir: "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	if rt.lazyTable {
		t.Error("a module without the table's exports is taken to fill its table on demand")
	}
	for range 2 { // the first instance, and one from the image
		res := rt.Execute(ctx, Script{Source: []byte(`return string.format("%d", #table.concat({"a", "b"}))`)})
		if res.Error != nil || string(res.Value) != `"2"` {
			t.Fatalf("execution: %s, %+v", res.Value, res.Error)
		}
	}
}

// TestStoppedTableFillLeavesMemoryAlone checks that an instance made with
// a context already done, by a Runtime that stops the module on it, fails
// with ctx's error: the call that fills the table closes the module and
// unmaps its memory, and nothing may write there after it (the host
// crashed with a SIGSEGV when fillTable put the input buffer back).
func TestStoppedTableFillLeavesMemoryAlone(t *testing.T) {
	ctx := context.Background()
	rt, err := New(ctx, Config{StopOnContextDone: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	mustInstance(t, rt).close() // makes the image, whose hot entries a new instance fills
	if len(rt.sdk.Load().image.tableHot) == 0 {
		t.Fatal("the image has no table entries to fill")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	for range 3 {
		inst, err := rt.newInstance(done)
		if err == nil {
			inst.close()
			t.Fatal("an instance was made with a context already done")
		}
		if !strings.Contains(err.Error(), "filling the function table") {
			t.Fatalf("err = %v, want the table fill's", err)
		}
	}
	mustInstance(t, rt).close()
}
