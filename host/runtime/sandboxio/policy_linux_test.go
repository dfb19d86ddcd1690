package sandboxio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/internal/testfile"
)

// declines answers every question with Decline.
type declines struct{ asked int }

func (d *declines) Ask(effects.Question) (effects.Answer, error) {
	d.asked++
	return effects.Decline, nil
}

// wantErr reports whether err is as wanted: nil for "", else an error
// containing want; it tells the test when it is not.
func wantErr(t *testing.T, name string, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("%s: %v, want %q", name, err, want)
	default:
		return true
	}
	return false
}

// Rules decide a real run's io: a denied write, removal or directory
// leaves the real directory as it was and gives the script an io error
// naming the rule (it goes on); an allowed write lands when its handle
// closes; a declined one does not; every decision is logged.
func TestRulesDecideIO(t *testing.T) {
	set, err := policy.Compile([]policy.Rule{
		{Name: "reports only", When: `effect.kind == "write" && !effect.path.startsWith("reports/")`, Action: "deny"},
		{Name: "keep the archive", When: `effect.kind == "remove" && effect.path.startsWith("archive/")`, Action: "deny"},
		{Name: "no new dirs", When: `effect.kind == "mkdir" && effect.path == "new"`, Action: "deny"},
		{Name: "big reports", When: `effect.kind == "write" && effect.bytes > 10`, Action: "ask"},
	}, effects.ActionAllow)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, p := range []string{"reports", "archive"} {
		if err := os.Mkdir(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "archive/old.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	person := &declines{}
	run := effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "ann"}), person)
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(run)

	for _, tc := range []struct {
		name string
		step func() error
		want string
	}{
		{"write outside reports", func() error { return writeErr(s, "notes.txt", "w", "overwritten") }, `close: 'notes.txt': denied by rule "reports only"`},
		{"remove from the archive", func() error { return s.Remove("archive/old.txt") }, `os.remove: 'archive/old.txt': denied by rule "keep the archive"`},
		{"new directory", func() error { return writeErr(s, "new/reports/x", "w", "x") }, `denied by rule "no new dirs"`},
		{"small report", func() error { return writeErr(s, "reports/a.txt", "w", "short") }, ""},
		{"big report declined", func() error { return writeErr(s, "reports/a.txt", "w", "far too long a report") }, `close: 'reports/a.txt': denied: declined by a person (rule "big reports" asked)`},
	} {
		err := tc.step()
		if wantErr(t, tc.name, err, tc.want) && err != nil && !run.Denied("script:1: "+err.Error()) {
			t.Errorf("%s: the run does not know the denial", tc.name)
		}
	}
	s.CloseAll()
	for name, want := range map[string]string{"notes.txt": "mine", "archive/old.txt": "old", "reports/a.txt": "short"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("the denied directory exists: %v", err)
	}
	if person.asked != 1 {
		t.Errorf("asked %d times", person.asked)
	}
	log, _ := run.Effects()
	var got []string
	for _, e := range log {
		got = append(got, string(e.Op)+" "+e.Path+" "+e.Decision+" "+e.Rule)
	}
	want := []string{
		"write notes.txt denied reports only",
		"remove archive/old.txt denied keep the archive",
		"mkdir new denied no new dirs",
		"write reports/a.txt allowed ",
		"write reports/a.txt declined big reports",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A dry run with rules reports as touched what it staged, as a real run
// with the same rules reports what it changed: a denied write, removal
// or rename is not among the files touched (it was listed as a removal);
// a file made and removed again is a removal, as in a real run.
func TestDryRunTouchedLeavesDenied(t *testing.T) {
	set := denySecret(t)
	for _, mode := range []effects.Mode{effects.Real, effects.DryRun} {
		dir := t.TempDir()
		for _, name := range []string{"secret/keys.txt", "public/x.txt", "public/y.txt"} {
			testfile.Write(t, filepath.Join(dir, name), "old\n")
		}
		s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(effects.New(mode).WithRules(set.For(policy.Who{Sub: "ann"}), &declines{}))
		const denied = "denied by rule"
		for _, step := range []struct {
			name string
			err  error
			want string
		}{
			{"write a secret", writeErr(s, "secret/keys.txt", "w", "gone"), denied},
			{"make a secret", writeErr(s, "secret/new.txt", "w", "new"), denied},
			{"remove a secret", s.Remove("secret/keys.txt"), denied},
			{"rename into secret", s.Rename("public/y.txt", "secret/y.txt"), denied},
			{"write", writeErr(s, "public/b.txt", "w", "b"), ""},
			{"remove", s.Remove("public/x.txt"), ""},
			{"make", writeErr(s, "tmp.txt", "w", "t"), ""},
			{"remove what was made", s.Remove("tmp.txt"), ""},
		} {
			wantErr(t, step.name, step.err, step.want)
		}
		s.CloseAll()
		touched, _ := s.Touched()
		var got []string
		for _, f := range touched {
			got = append(got, fmt.Sprintf("%s %s %d", f.Name, f.Op, f.Bytes))
		}
		if want := "public/b.txt write 1; public/x.txt remove 0; tmp.txt remove 0"; strings.Join(got, "; ") != want {
			t.Errorf("%v: files touched %q, want %q", mode, got, want)
		}
	}
}

// denySecret is the rule set that denies every change under secret/,
// renames into it included.
func denySecret(t *testing.T) *policy.Set {
	t.Helper()
	set, err := policy.Compile([]policy.Rule{
		{Name: "secret", When: `effect.path.startsWith("secret/") || effect.to.startsWith("secret/")`, Action: "deny"},
	}, effects.ActionAllow)
	if err != nil {
		t.Fatal(err)
	}
	return set
}
