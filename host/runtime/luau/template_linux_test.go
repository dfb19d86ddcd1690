package luau

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"slices"
	"testing"
)

// templateRuntime returns a Runtime whose image (and template) is made.
func templateRuntime(t *testing.T) (*Runtime, *image) {
	t.Helper()
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	first := mustInstance(t, rt)
	first.close()
	img := rt.sdk.Load().image
	if img == nil || img.template == nil {
		t.Fatal("no memory template was made")
	}
	return rt, img
}

func memoryOf(t *testing.T, inst *instance) []byte {
	t.Helper()
	mem, ok := inst.mem.Read(0, inst.mem.Size())
	if !ok {
		t.Fatal("reading an instance's memory")
	}
	return mem
}

// TestTemplateWritesStayInTheirInstance writes over every page of one
// instance's memory and checks that another instance, made before and one
// made after, and the template itself still hold the image.
func TestTemplateWritesStayInTheirInstance(t *testing.T) {
	rt, img := templateRuntime(t)
	before := mustInstance(t, rt)
	defer before.close()
	writer := mustInstance(t, rt)
	if !before.fromTemplate || !writer.fromTemplate {
		t.Fatal("instances do not start from the template")
	}
	want := bytes.Clone(memoryOf(t, before))
	mem := memoryOf(t, writer)
	for i := range mem {
		mem[i] = ^mem[i]
	}
	after := mustInstance(t, rt)
	defer after.close()
	for name, inst := range map[string]*instance{"made before": before, "made after": after} {
		if !bytes.Equal(memoryOf(t, inst), want) {
			t.Errorf("an instance %s sees another instance's writes", name)
		}
	}
	file := make([]byte, img.template.Size())
	if _, err := img.template.ReadAt(file, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if !bytes.Equal(file, want[:len(file)]) {
		t.Error("an instance's writes reached the template")
	}
	writer.close()
	if !bytes.Equal(memoryOf(t, before), want) {
		t.Error("closing an instance changed another's memory")
	}
}

// TestTemplateMatchesCopiedImage checks that an instance mapped from the
// template starts with the memory of one restored by copying the image.
func TestTemplateMatchesCopiedImage(t *testing.T) {
	ctx := context.Background()
	rt, img := templateRuntime(t)
	mapped := mustInstance(t, rt)
	defer mapped.close()
	tmpl := img.template
	img.template = nil
	copied, err := rt.newInstance(ctx)
	img.template = tmpl
	if err != nil {
		t.Fatal(err)
	}
	defer copied.close()
	if !mapped.fromTemplate || copied.fromTemplate {
		t.Fatalf("mapped from the template: %v and %v", mapped.fromTemplate, copied.fromTemplate)
	}
	if !bytes.Equal(memoryOf(t, mapped), memoryOf(t, copied)) {
		t.Fatal("the template's memory differs from the image's")
	}
	if mapped.sp.Get() != copied.sp.Get() {
		t.Fatal("the stack pointers differ")
	}
}

// TestExecutionLeavesNothingInTheTemplate runs a script that fills its
// memory with a marker, then looks for the marker in the template and in
// the memory of the next instances.
func TestExecutionLeavesNothingInTheTemplate(t *testing.T) {
	ctx := context.Background()
	rt, img := templateRuntime(t)
	var nonce [8]byte
	rand.Read(nonce[:])
	marker := "marker-" + hex.EncodeToString(nonce[:])
	script := `local parts = {} for i = 1, 20000 do parts[i] = "` + marker + `" .. i end return #table.concat(parts)`
	if res := rt.Execute(ctx, Script{Source: []byte(script)}); res.Error != nil {
		t.Fatal(res.Error)
	}
	file := make([]byte, img.template.Size())
	if _, err := img.template.ReadAt(file, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	// The marker is in the script's source: that much of the next
	// instance's memory may hold the source only if it leaked.
	if bytes.Contains(file, []byte(marker)) {
		t.Fatal("an execution's data reached the template")
	}
	for range 3 {
		inst, err := rt.newInstance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := bytes.Contains(memoryOf(t, inst), []byte(marker))
		inst.close()
		if found {
			t.Fatal("an execution's data is in a later instance's memory")
		}
	}
}

// TestHotPagesAreCopiedAhead checks that the warm-up found the pages an
// execution writes, and that a new instance has its own copies of them
// before it runs anything, the rest of its memory still the template's.
func TestHotPagesAreCopiedAhead(t *testing.T) {
	rt, img := templateRuntime(t)
	hot := img.template.Hot
	var pages uint64
	for _, h := range hot {
		if h.Offset+h.Length > img.template.Size() || h.Length == 0 {
			t.Fatalf("a hot range %+v outside the template of %d bytes", h, img.template.Size())
		}
		pages += h.Length / 4096
	}
	t.Logf("%d hot pages in %d ranges, of %d", pages, len(hot), img.template.Size()/4096)
	if pages == 0 || pages > img.template.Size()/4096/2 {
		t.Fatalf("%d hot pages of %d", pages, img.template.Size()/4096)
	}
	inst := mustInstance(t, rt)
	defer inst.close()
	if got := img.template.WrittenPages(memoryOf(t, inst)); !slices.Equal(got, hot) {
		t.Fatalf("a new instance has its own copies of %v, want %v", got, hot)
	}
}
