package sandboxio_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/sandboxio"
)

// TestKeepResultStaysInside: a results directory that is a link out of
// the io directory is refused, and nothing is written where it points.
func TestKeepResultStaysInside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, sandboxio.ResultsDir)); err != nil {
		t.Fatal(err)
	}
	_, err := sandboxio.KeepResult(dir, []byte(`{"result":1}`), sandboxio.ResultBounds{Files: 4, Bytes: 1 << 20, For: time.Hour}, time.Now())
	if err == nil {
		t.Fatal("a result was written through a link out of the io directory")
	}
	if strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), outside) {
		t.Errorf("the error names a host path: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside: %v", entries)
	}
}

// TestKeepResultBounds: results past their time, and beyond the bounds
// of files and bytes, oldest first, are removed as a new one is written;
// files not named as results are left alone.
func TestKeepResultBounds(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		bounds sandboxio.ResultBounds
		// ages of the results there before, oldest first
		ages []time.Duration
		// which of them are left
		left []bool
	}{
		{"within the bounds", sandboxio.ResultBounds{Files: 4, Bytes: 1 << 20, For: time.Hour}, []time.Duration{3, 2, 1}, []bool{true, true, true}},
		{"too many", sandboxio.ResultBounds{Files: 2, Bytes: 1 << 20, For: time.Hour}, []time.Duration{3, 2, 1}, []bool{false, false, true}},
		{"too many bytes", sandboxio.ResultBounds{Files: 9, Bytes: 30, For: time.Hour}, []time.Duration{3, 2, 1}, []bool{false, true, true}},
		{"too old", sandboxio.ResultBounds{Files: 9, Bytes: 1 << 20, For: 90 * time.Second}, []time.Duration{120, 100, 60}, []bool{false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			results := filepath.Join(dir, sandboxio.ResultsDir)
			if err := os.MkdirAll(results, 0o755); err != nil {
				t.Fatal(err)
			}
			var names []string
			for i, age := range tt.ages {
				name := filepath.Join(results, strings.Repeat(string(rune('a'+i)), 32)+".json")
				names = append(names, name)
				if err := os.WriteFile(name, []byte("0123456789"), 0o644); err != nil {
					t.Fatal(err)
				}
				when := now.Add(-age * time.Second)
				if err := os.Chtimes(name, when, when); err != nil {
					t.Fatal(err)
				}
			}
			mine := filepath.Join(results, "notes.json")
			if err := os.WriteFile(mine, []byte(strings.Repeat("m", 100)), 0o644); err != nil {
				t.Fatal(err)
			}
			name, err := sandboxio.KeepResult(dir, []byte("0123456789"), tt.bounds, now)
			if err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != "0123456789" {
				t.Errorf("the new result %s: %q %v", name, data, err)
			}
			for i, name := range names {
				if _, err := os.Stat(name); (err == nil) != tt.left[i] {
					t.Errorf("result %d (age %ds) left: %v, want %v", i, tt.ages[i], err == nil, tt.left[i])
				}
			}
			if _, err := os.Stat(mine); err != nil {
				t.Errorf("a file not named as a result was removed: %v", err)
			}
		})
	}
}

// TestKeepResultCrowded: a results directory crowded with files of the
// script's own, more than are read to find the results, keeps no more
// results than its bounds: a result is written only when every result
// there was seen (else the caller keeps it as a resource). Results beyond
// the entries read were never removed.
func TestKeepResultCrowded(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, sandboxio.ResultsDir)
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 8192 {
		f, err := os.Create(filepath.Join(results, fmt.Sprintf("junk%05d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	bounds := sandboxio.ResultBounds{Files: 4, Bytes: 1 << 20, For: time.Hour}
	refused := 0
	for range 40 {
		if _, err := sandboxio.KeepResult(dir, []byte(`{"result":1}`), bounds, time.Now()); err != nil {
			refused++
			if !strings.Contains(err.Error(), "more than 4096 entries") || strings.Contains(err.Error(), dir) {
				t.Fatalf("KeepResult: %v", err)
			}
		}
	}
	entries, _ := os.ReadDir(results)
	kept := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			kept++
		}
	}
	if kept > bounds.Files {
		t.Errorf("%d results kept in a crowded directory; the bound is %d (%d refused)", kept, bounds.Files, refused)
	}
}
