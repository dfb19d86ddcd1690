//go:build linux

package sandboxio

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/effectstest"
	"github.com/toolscript/toolscript/internal/testtree"
)

// seed fills an io directory with what the script below changes.
func seed(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("one\ntwo\n"), 0o640)
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("a\n"), 0o644)
}

// script does what a script would: appends, writes new files (a directory
// made for them), writes one twice, removes a staged file and a real one,
// reads its own writes back, and leaves one handle open for the end.
// greeting is the content of one write: another greeting is another plan.
func script(t *testing.T, s *FS, greeting string) error {
	t.Helper()
	steps := []func() error{
		func() error { return writeErr(s, "keep.txt", "a", "three\n") },
		func() error { return writeErr(s, "out/deep/new.txt", "w", greeting) },
		func() error { return writeErr(s, "out/deep/new.txt", "a", "again\n") },
		func() error { return writeErr(s, "tmp.txt", "w", "x") },
		func() error { return s.Remove("tmp.txt") },
		func() error { return s.Remove("old.txt") },
		func() error {
			if got := read(t, s, "out/deep/new.txt"); got != greeting+"again\n" {
				return fmt.Errorf("new.txt reads %q", got)
			}
			id, err := s.Open("sub/a.txt", "r+") // left open: applied at the end
			if err != nil {
				return err
			}
			return s.Write(id, []byte("A"))
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return nil
}

func writeErr(s *FS, name, mode, data string) error {
	id, err := s.Open(name, mode)
	if err != nil {
		return err
	}
	if data != "" {
		if err := s.Write(id, []byte(data)); err != nil {
			s.Close(id)
			return err
		}
	}
	return s.Close(id)
}

// planOf is the plan a dry run of script gives, through its JSON.
func planOf(t *testing.T, greeting string) *effects.Approved {
	t.Helper()
	dir := t.TempDir()
	seed(t, dir)
	return dryRunPlan(t, dir, func(s *FS) error { return script(t, s, greeting) })
}

// dryRunPlan is the plan a dry run of run in dir gives, through its JSON.
func dryRunPlan(t *testing.T, dir string, run func(s *FS) error) *effects.Approved {
	t.Helper()
	dry := effects.New(effects.DryRun)
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(dry)
	if err := run(s); err != nil {
		t.Fatal(err)
	}
	s.CloseAll()
	s.Touched()
	log, _ := dry.Effects()
	return effectstest.Plan(t, log)
}

// A plan run of a dry run's effects leaves the directory exactly as a real
// run does, reports the files it changed as a real run does, and leaves
// nothing of its own behind.
func TestPlanApplies(t *testing.T) {
	realDir, planDir := t.TempDir(), filepath.Join(t.TempDir(), "io")
	seed(t, realDir)
	seed(t, planDir)

	s := New(realDir, Limits{MaxBytes: 1 << 20})
	if err := script(t, s, "hello\n"); err != nil {
		t.Fatal(err)
	}
	s.CloseAll()
	realTouched, _ := s.Touched()

	plan := planOf(t, "hello\n")
	run := effects.NewPlan(plan)
	s = New(planDir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
	if err := script(t, s, "hello\n"); err != nil {
		t.Fatal(err)
	}
	s.CloseAll()
	planTouched, _ := s.Touched()

	if run.Err() != nil || run.Unused() != nil {
		t.Fatalf("stopped: %v; unused: %v", run.Err(), run.Unused())
	}
	if got, want := testtree.Contents(t, planDir), testtree.Contents(t, realDir); got != want {
		t.Errorf("after the plan run:\n%s\nafter a real run:\n%s", got, want)
	}
	if fmt.Sprint(planTouched) != fmt.Sprint(realTouched) {
		t.Errorf("files touched %v, a real run's %v", planTouched, realTouched)
	}
	log, _ := run.Effects()
	if len(log) != plan.Len() {
		t.Errorf("logged %d effects, the plan has %d", len(log), plan.Len())
	}
	if s.ov.tmp != "" {
		t.Error("the overlay was not dropped")
	}
}

// An effect the plan does not hold reaches nothing: a write of other
// content leaves the real file as it was, and every later effect is
// refused, those of the plan included.
func TestPlanStops(t *testing.T) {
	plan := planOf(t, "hello\n")
	dir := t.TempDir()
	seed(t, dir)
	run := effects.NewPlan(plan)
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
	before := testtree.Contents(t, dir)

	err := script(t, s, "HELLO\n")
	var stop *effects.StopError
	if !errors.As(err, &stop) || stop.Kind != "plan" || !strings.Contains(err.Error(), "step 2: close: 'out/deep/new.txt': the script attempted write out/deep/new.txt (6 bytes, sha256 "+sum("HELLO\n")) ||
		!strings.Contains(err.Error(), "the plan's next entry (4 of 9) is write out/deep/new.txt (6 bytes, sha256 "+sum("hello\n")+"): other content; it was not carried out") {
		t.Fatalf("script: %v", err)
	}
	if err := s.Remove("old.txt"); !errors.As(err, &stop) {
		t.Errorf("a remove after the stop: %v", err)
	}
	s.CloseAll()
	touched, _ := s.Touched()

	// What was applied: keep.txt's append and the two directories; not
	// the new file.
	after := testtree.Contents(t, dir)
	want := strings.NewReplacer(
		"keep.txt -rw-r----- 8 "+fmt.Sprintf("%x", sha256.Sum256([]byte("one\ntwo\n"))),
		"keep.txt -rw-r----- 14 "+fmt.Sprintf("%x", sha256.Sum256([]byte("one\ntwo\nthree\n"))),
	).Replace(before)
	want = strings.Replace(want, "sub drwx", "out drwxr-xr-x 4096\nout/deep drwxr-xr-x 4096\nsub drwx", 1)
	if after != want {
		t.Errorf("after the stop:\n%s\nwant\n%s", after, want)
	}
	if fmt.Sprint(touched) != "[{keep.txt append 14 false}]" {
		t.Errorf("touched: %v", touched)
	}
	if log, _ := run.Effects(); len(log) != 3 {
		t.Errorf("applied %v", log)
	}
	if unused := run.Unused(); len(unused) != 6 {
		t.Errorf("unused %v", unused)
	}
}

// A write the plan holds whose real file cannot be replaced (a directory
// took its place) fails and leaves no temporary file behind.
func TestPlanWriteFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	plan := dryRunPlan(t, dir, func(s *FS) error { write(t, s, "a.txt", "w", "data"); return nil })

	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(effects.NewPlan(plan))
	id, err := s.Open("a.txt", "w")
	if err != nil {
		t.Fatal(err)
	}
	s.Write(id, []byte("data"))
	if err := os.MkdirAll(filepath.Join(dir, "a.txt", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(id); err == nil || !strings.Contains(err.Error(), "close: 'a.txt'") {
		t.Errorf("Close: %v", err)
	}
	s.CloseAll()
	s.Touched()
	if got := testtree.Contents(t, dir); got != ". drwxr-xr-x 4096\na.txt drwxr-xr-x 4096\na.txt/x drwxr-xr-x 4096\n" {
		t.Errorf("left behind:\n%s", got)
	}
}

// A write through a symbolic link (one that stays inside the directory)
// changes the file it links to, in a plan run as in a real run; the link
// stays a link.
func TestPlanWritesThroughALink(t *testing.T) {
	var want string
	for _, mode := range []string{"real", "plan"} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "target.txt"), []byte("before\n"), 0o644)
		if err := os.Symlink("target.txt", filepath.Join(dir, "link.txt")); err != nil {
			t.Fatal(err)
		}
		s := New(dir, Limits{MaxBytes: 1 << 20})
		if mode == "plan" {
			plan := dryRunPlan(t, dir, func(s *FS) error { write(t, s, "link.txt", "w", "after\n"); return nil })
			s = s.WithEffects(effects.NewPlan(plan))
		}
		write(t, s, "link.txt", "w", "after\n")
		s.CloseAll()
		s.Touched()
		got := testtree.Contents(t, dir)
		if mode == "real" {
			want = got
			continue
		}
		if got != want {
			t.Errorf("after the plan run:\n%s\nafter a real run:\n%s", got, want)
		}
	}
	if !strings.Contains(want, "link.txt Lrwxrwxrwx") || !strings.Contains(want, fmt.Sprintf("target.txt -rw-r--r-- 6 %x", sha256.Sum256([]byte("after\n")))) {
		t.Errorf("a real run:\n%s", want)
	}
}
