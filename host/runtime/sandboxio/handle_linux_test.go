//go:build linux

package sandboxio

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
)

// files is the content of every regular file under dir, by path.
func files(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel+"="+string(data))
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, " ")
}

// A handle writes its file wherever a rename takes it, and into nothing
// once the name it opened is removed or replaced: so does the effect its
// close takes. A write's effect describes the bytes that land, under the
// name they land at, in a dry run, a plan run and a real run with rules
// alike: renaming a file onto another file's open handle, or removing
// and reopening a name, never lands content the rules or the plan did
// not see (here a rule denies writes of more than 4 bytes).
func TestHandleFollowsItsFile(t *testing.T) {
	open := func(s *FS, name string) int32 {
		id, err := s.Open(name, "w")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	write := func(s *FS, id int32, data string) {
		if err := s.Write(id, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name      string
		steps     func(s *FS)
		real      string // the directory after a real run
		withRules string // after a real run with the rule
	}{
		{"written, renamed, then closed", func(s *FS) {
			f := open(s, "a.txt")
			write(s, f, "x")
			s.Rename("a.txt", "b.txt")
			s.Close(f)
		}, "b.txt=x", "b.txt=x"},
		{"renamed onto an open handle's file", func(s *FS) {
			f := open(s, "a.txt")
			write(s, f, "PAYLOAD")
			g := open(s, "b.txt")
			write(s, g, "ok")
			s.Rename("a.txt", "b.txt")
			s.Close(g) // its file is gone: b.txt is a.txt's
			s.Close(f)
		}, "b.txt=PAYLOAD", ""},
		{"removed and made again", func(s *FS) {
			f := open(s, "a.txt")
			write(s, f, "ok")
			s.Remove("a.txt")
			g := open(s, "a.txt")
			write(s, g, "PAYLOAD")
			s.Close(f) // its file is gone
			s.Close(g)
		}, "a.txt=PAYLOAD", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			realDir := t.TempDir()
			s := New(realDir, Limits{MaxBytes: 1 << 20})
			c.steps(s)
			s.CloseAll()
			s.Touched()
			if got := files(t, realDir); got != c.real {
				t.Fatalf("a real run left %q; want %q", got, c.real)
			}

			set, err := policy.Compile([]policy.Rule{
				{Name: "short", When: `effect.kind == "write" && effect.bytes > 4`, Action: "deny"},
			}, effects.ActionAllow)
			if err != nil {
				t.Fatal(err)
			}
			rulesDir := t.TempDir()
			run := effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "ann"}), &declines{})
			s = New(rulesDir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
			c.steps(s)
			s.CloseAll()
			s.Touched()
			log, _ := run.Effects()
			if got := files(t, rulesDir); got != c.withRules {
				t.Errorf("a run with the rule left %q; want %q; effects %s", got, c.withRules, describe(log))
			}

			planDir := t.TempDir()
			plan := dryRunPlan(t, planDir, func(s *FS) error { c.steps(s); return nil })
			prun := effects.NewPlan(plan)
			s = New(planDir, Limits{MaxBytes: 1 << 20}).WithEffects(prun)
			c.steps(s)
			s.CloseAll()
			s.Touched()
			if got := files(t, planDir); got != c.real || prun.Err() != nil {
				t.Errorf("the plan run left %q (%v); want %q as a real run", got, prun.Err(), c.real)
			}
		})
	}
}

func describe(log []effects.Effect) string {
	var out []string
	for _, e := range log {
		n := int64(-1)
		if e.Bytes != nil {
			n = *e.Bytes
		}
		out = append(out, fmt.Sprintf("%s %s %s %d %s", e.Op, e.Path, e.To, n, e.Decision))
	}
	return strings.Join(out, "; ")
}

// A file updated in place (append, "r+") or renamed in a run that stages
// (a dry run, a plan run, a real run with rules) is first copied into the
// overlay, outside the write budget, and the copy is not stopped by the
// deadline: the copies of one execution are bounded (MaxStagedCopyBytes),
// and past the bound the update fails with kind limit before anything
// is copied.
func TestStagedCopiesBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxStagedCopyBytes + 1); err != nil { // a hole: no disk
		t.Fatal(err)
	}
	f.Close()
	os.WriteFile(filepath.Join(dir, "small.txt"), []byte("x"), 0o644)
	for _, c := range []struct {
		name string
		step func(s *FS) error
	}{
		{"append", func(s *FS) error { _, err := s.Open("big.log", "a"); return err }},
		{"update", func(s *FS) error { _, err := s.Open("big.log", "r+"); return err }},
		{"rename", func(s *FS) error { return s.Rename("big.log", "old.log") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(effects.New(effects.DryRun))
			defer s.Touched()
			if _, err := s.Open("small.txt", "a"); err != nil {
				t.Fatal(err)
			}
			err := c.step(s)
			if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "copied into the overlay") {
				t.Fatalf("%s of a file over the bound: %v", c.name, err)
			}
			if s.ov.tmp != "" {
				if entries, _ := os.ReadDir(s.ov.tmp); len(entries) != 0 {
					t.Errorf("copied into the overlay: %v", entries)
				}
			}
		})
	}
}
