package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// TestStartRecording: --record replaces a file already there (it is not
// appended to, nor followed when a link), never a directory; a record
// directory's files never collide.
func TestStartRecording(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.trace")
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep me"), 0o644)
	os.Symlink(target, path)
	rec, err := startRecording(path, false, trace.Header{Toolscript: "t"}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.finish(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("the link's target was written: %q", b)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), `{"trace":3,"toolscript":"t"`) {
		t.Errorf("trace %q", b)
	}
	if _, err := startRecording(dir, false, trace.Header{}, nil, ""); err == nil {
		t.Error("a directory was replaced by a trace")
	}

	now := time.Date(2026, 11, 24, 5, 13, 0, 123456000, time.UTC)
	seen := map[string]bool{}
	for range 100 {
		name := traceName(now)
		if !regexp.MustCompile(`^20261124T051300\.123456Z-[0-9a-f]{16}\.trace\.jsonl$`).MatchString(name) || seen[name] {
			t.Fatalf("name %s (seen: %v)", name, seen[name])
		}
		seen[name] = true
	}
	records := filepath.Join(dir, "records", "deeper")
	rd, err := openRecordDir(records, 1<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rec, err := rd.record("", trace.Header{})
		if err != nil {
			t.Fatal(err)
		}
		rec.finish()
	}
	if entries, _ := os.ReadDir(records); len(entries) != 2 {
		t.Errorf("record dir: %v", entries)
	}
}
