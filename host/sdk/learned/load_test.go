package learned_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/sdk/learned"
)

// writeTrace records entries as a trace at path with trace's own writer.
func writeTrace(t *testing.T, path string, entries ...*trace.Entry) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := trace.NewWriter(f, trace.Header{Trace: trace.Version, Toolscript: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		w.Add(e)
	}
	if err := w.Close(); err != nil { // closes f too
		t.Fatal(err)
	}
}

func call(function string, r trace.Response) *trace.Entry {
	return &trace.Entry{Op: trace.OpCall, Function: function, Response: &r}
}

// TestLoad: only successful calls count; structured content is the
// result's type, a text result is a string (and the type of its JSON when
// every text is JSON); broken and hostile traces are skipped with a
// warning, never fatal; the bounds hold.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, filepath.Join(dir, "a.trace.jsonl"),
		call("sdk.py.raw", trace.Response{JSON: []byte(`{"v": [], "n": 1}`)}),
		call("sdk.py.raw", trace.Response{JSON: []byte(`{"v": [[]]}`)}),
		call("sdk.py.raw", trace.Response{Fail: 2, Message: "no"}),
		call("sdk.py.raw", trace.Response{DryRun: true, JSON: []byte(`{"made": "up"}`)}),
		call("sdk.py.raw", trace.Response{Unanswered: true}),
		call("sdk.ev.get_env", trace.Response{Text: []byte(`{"HOME": "/root", "SECRET": "[REDACTED]"}`)}),
		call("sdk.ev.echo", trace.Response{Text: []byte(`Echo: hi`)}),
	)
	// Hostile and broken traces next to it.
	if err := os.WriteFile(filepath.Join(dir, "garbage.jsonl"), []byte("\x00\xffnot a trace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	header := `{"trace":3,"toolscript":"x","script_sha256":"","config_sha256":""}` + "\n"
	long := header + `{"op":"call","function":"sdk.py.raw","response":{"json":"` + strings.Repeat("x", 2<<20) + `"}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "long.jsonl"), []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	cut := header + `{"op":"call","function":"sdk.py.raw","response":{"json":"{\"evil\": 1}"}}` + "\n" + `{"op":"call"`
	if err := os.WriteFile(filepath.Join(dir, "cut.jsonl"), []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not read"), 0o600); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	lim := learned.DefaultLimits()
	lim.LineBytes = 1 << 20
	set := learned.Load(context.Background(), []string{dir, filepath.Join(dir, "missing")}, lim, func(w string) { warnings = append(warnings, w) })

	raw := set["sdk.py.raw"]
	if got := render(raw.Schema); raw.Calls != 2 || got != "{v:[[any]],n?:number}" {
		t.Errorf("sdk.py.raw: %d calls, %s", raw.Calls, got)
	}
	env := set["sdk.ev.get_env"]
	if render(env.Schema) != "string" || render(env.TextJSON) != "{HOME:string,SECRET:string}" {
		t.Errorf("sdk.ev.get_env: %s, text %s", render(env.Schema), render(env.TextJSON))
	}
	if echo := set["sdk.ev.echo"]; render(echo.Schema) != "string" || echo.TextJSON != nil {
		t.Errorf("sdk.ev.echo: %s, text %s", render(echo.Schema), render(echo.TextJSON))
	}
	all := strings.Join(warnings, "\n")
	for _, want := range []string{"garbage.jsonl", "long.jsonl", "cut.jsonl", "missing"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning names %s:\n%s", want, all)
		}
	}
	if strings.Contains(all, "notes.txt") {
		t.Errorf("a file that is not a trace by its name was read:\n%s", all)
	}

	// The bounds: one file, then bytes, then time.
	newest := filepath.Join(dir, "z.jsonl")
	writeTrace(t, newest, call("sdk.py.raw", trace.Response{JSON: []byte(`{"new": true}`)}))
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(newest, later, later); err != nil {
		t.Fatal(err)
	}
	warnings = nil
	one := learned.Load(context.Background(), []string{dir}, learned.Limits{Files: 1, Bytes: 1 << 20, LineBytes: 1 << 20, Time: time.Minute}, func(w string) { warnings = append(warnings, w) })
	if got := render(one["sdk.py.raw"].Schema); got != "{new:boolean}" || len(warnings) != 1 {
		t.Errorf("one file, the newest: %s, warnings %q", got, warnings)
	}
	none := learned.Load(context.Background(), []string{dir}, learned.Limits{Files: 10, Bytes: 10, LineBytes: 1 << 20, Time: time.Minute}, nil)
	if len(none) != 0 {
		t.Errorf("10 bytes read %d functions", len(none))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if late := learned.Load(ctx, []string{dir}, lim, nil); len(late) != 0 {
		t.Errorf("out of time, learned %d functions", len(late))
	}
}
