package app_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestReplayBounds: a replay holds its trace to its own limits as it
// reads it. A replayed response's headers count against
// max_response_bytes as a real response's do (kind limit); a line longer
// than any this configuration can record (its max_response_bytes, its
// heap) is refused with kind replay, without reading the rest of it.
func TestReplayBounds(t *testing.T) {
	api := testapi.New(t)
	file := petsConfig(t, api, "[sdk]\nmax_response_bytes = 4096\n[limits]\nmemory_limit_mb = 2\n")
	dir := t.TempDir()
	path := filepath.Join(dir, "run.trace")
	source := []byte(`return sdk.get_pet({petId = 7}).id`)
	run := func(record, replay string) *resultOf {
		t.Helper()
		res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run),
			SDK: app.SDKOptions{Stderr: io.Discard}, Source: source, Record: record, Replay: replay})
		if err != nil {
			t.Fatal(err)
		}
		out := &resultOf{value: string(res.Value)}
		if res.Error != nil {
			out.kind, out.message = string(res.Error.Kind), res.Error.Message
		}
		return out
	}
	if got := run(path, ""); got.kind != "" || got.value != "7" {
		t.Fatalf("recording: %+v", got)
	}
	if got := run("", path); got.kind != "" || got.value != "7" {
		t.Fatalf("replay: %+v", got)
	}
	recorded, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The call's response, with a header of its own.
	edit := func(change func(response map[string]any)) string {
		lines := strings.SplitAfter(string(recorded), "\n")
		for i, line := range lines {
			var e map[string]any
			if json.Unmarshal([]byte(line), &e) != nil || e["op"] != "call" {
				continue
			}
			change(e["response"].(map[string]any))
			b, _ := json.Marshal(e)
			lines[i] = string(b) + "\n"
		}
		p := filepath.Join(dir, "edited.trace")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	headers := edit(func(r map[string]any) {
		r["headers"] = map[string]any{"x-padding": strings.Repeat("p", 4096)}
	})
	if got := run("", headers); got.kind != "limit" || !strings.Contains(got.message, "max_response_bytes") {
		t.Errorf("headers past max_response_bytes: %+v, want kind limit", got)
	}
	long := edit(func(r map[string]any) {
		r["text"] = strings.Repeat("x", 12<<20) // more than 2 MiB of heap, as base64, and room for the rest
	})
	if got := run("", long); got.kind != "replay" || !strings.Contains(got.message, "line is longer than") {
		t.Errorf("a line past the bound: %+v, want kind replay", got)
	}
}

type resultOf struct{ value, kind, message string }
