//go:build linux

package sandboxio

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/internal/testtree"
)

// linkedTree is an io directory whose allowed names lead into secret/
// through symbolic links: a file linked to a secret file, a directory
// linked to the secret directory, and a secret name linked to a public
// file.
func linkedTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tree(t, dir, map[string]string{
		"secret/keys.txt":   "keys\n",
		"public/x.txt":      "x\n",
		"public/notes.txt":  "->../secret/keys.txt",
		"public/ghost.txt":  "->../secret/made.txt",
		"docs":              "->secret",
		"secret/alias.txt":  "->../public/x.txt",
		"public/deep/chain": "->../../docs",
	})
	return dir
}

// The rules see the file a change lands on, not the link the script
// named: a rule that denies changes under secret/ denies a write, an
// append, an edit, a new file, a directory, a removal and a rename that
// reach secret/ through a link, and the secret directory is left as it
// was. A write through a secret-looking link to a public file changes
// the public file, and is allowed; removing that link removes the link,
// a change under secret/, and is denied.
func TestRulesSeeTheFileALinkChanges(t *testing.T) {
	set := denySecret(t)
	dir := linkedTree(t)
	run := effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "ann"}), &declines{})
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
	deny := func(op, name string) string { return fmt.Sprintf(`%s: '%s': denied by rule "secret"`, op, name) }
	for _, tc := range []struct {
		name string
		step func() error
		want string
	}{
		{"write through a file link", func() error { return writeErr(s, "public/notes.txt", "w", "gone") }, deny("close", "secret/keys.txt")},
		{"append through a file link", func() error { return writeErr(s, "public/notes.txt", "a", "more") }, deny("close", "secret/keys.txt")},
		{"edit through a file link", func() error { _, err := s.Edit("public/notes.txt", "keys", "gone", false); return err }, deny("io.edit", "secret/keys.txt")},
		{"create through a dangling link", func() error { return writeErr(s, "public/ghost.txt", "w", "made") }, deny("close", "secret/made.txt")},
		{"write through a directory link", func() error { return writeErr(s, "docs/new.txt", "w", "new") }, deny("close", "secret/new.txt")},
		{"write through a chain of links", func() error { return writeErr(s, "public/deep/chain/new.txt", "w", "new") }, deny("close", "secret/new.txt")},
		{"directory through a directory link", func() error { return writeErr(s, "docs/sub/new.txt", "w", "new") }, deny("io.open", "docs/sub/new.txt")},
		{"remove through a directory link", func() error { return s.Remove("docs/keys.txt") }, deny("os.remove", "docs/keys.txt")},
		{"rename from a linked directory", func() error { return s.Rename("docs/keys.txt", "public/k.txt") }, deny("os.rename", "docs/keys.txt")},
		{"rename into a linked directory", func() error { return s.Rename("public/x.txt", "docs/x.txt") }, deny("os.rename", "public/x.txt")},
		{"remove a secret-looking link", func() error { return s.Remove("secret/alias.txt") }, deny("os.remove", "secret/alias.txt")},
		{"write through a secret-looking link", func() error { return writeErr(s, "secret/alias.txt", "w", "public\n") }, ""},
	} {
		wantErr(t, tc.name, tc.step(), tc.want)
	}
	s.CloseAll()
	touched, _ := s.Touched()
	if got := fmt.Sprint(touched); got != "[{public/x.txt write 7 false}]" {
		t.Errorf("files touched %s", got)
	}
	if got := testtree.Contents(t, filepath.Join(dir, "secret")); got != testtree.Contents(t, filepath.Join(linkedTree(t), "secret")) {
		t.Errorf("the secret directory changed:\n%s", got)
	}
	log, _ := run.Effects()
	want := "write secret/keys.txt  4 denied; write secret/keys.txt  9 denied; write secret/keys.txt  5 denied; " +
		"write secret/made.txt  4 denied; write secret/new.txt  3 denied; write secret/new.txt  3 denied; mkdir secret/sub  -1 denied; " +
		"remove secret/keys.txt  -1 denied; rename secret/keys.txt public/k.txt -1 denied; rename public/x.txt secret/x.txt -1 denied; " +
		"remove secret/alias.txt  -1 denied; write public/x.txt  7 allowed"
	if got := describe(log); got != want {
		t.Errorf("effects:\n%s\nwant\n%s", got, want)
	}
}

// A dry run's effects, and the files it reports touched, name the file a
// write through a link changes; the plan made of them changes that file
// and only it; when the link leads elsewhere by the time the plan is
// applied, the plan run stops before anything changes.
func TestPlanNamesTheFileALinkChanges(t *testing.T) {
	dir := linkedTree(t)
	writeNotes := func(s *FS) error { return writeErr(s, "public/notes.txt", "w", "new keys\n") }
	dry := effects.New(effects.DryRun)
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(dry)
	if err := writeNotes(s); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"secret/keys.txt", "public/notes.txt", "docs/keys.txt"} {
		if got := read(t, s, name); got != "new keys\n" {
			t.Errorf("the dry run reads %s as %q", name, got)
		}
	}
	s.CloseAll()
	touched, _ := s.Touched()
	if got := fmt.Sprint(touched); got != "[{secret/keys.txt write 9 true}]" {
		t.Errorf("files touched in the dry run %s", got)
	}
	log, _ := dry.Effects()
	if got := describe(log); got != "write secret/keys.txt  9 " {
		t.Fatalf("the dry run's effects: %s", got)
	}

	t.Run("applied", func(t *testing.T) {
		plan := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(effects.NewPlan(dryRunPlan(t, dir, writeNotes)))
		if err := writeNotes(plan); err != nil {
			t.Fatal(err)
		}
		plan.CloseAll()
		touched, _ := plan.Touched()
		if got := fmt.Sprint(touched); got != "[{secret/keys.txt write 9 false}]" {
			t.Errorf("files touched in the plan run %s", got)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "secret/keys.txt")); string(got) != "new keys\n" {
			t.Errorf("secret/keys.txt: %q", got)
		}
		if info, err := os.Lstat(filepath.Join(dir, "public/notes.txt")); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link is no longer a link: %v", err)
		}
	})

	t.Run("link swapped", func(t *testing.T) {
		dir := linkedTree(t)
		approved := dryRunPlan(t, dir, writeNotes)
		os.Remove(filepath.Join(dir, "public/notes.txt"))
		if err := os.Symlink("../secret/other.txt", filepath.Join(dir, "public/notes.txt")); err != nil {
			t.Fatal(err)
		}
		before := testtree.Contents(t, dir)
		run := effects.NewPlan(approved)
		plan := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
		if err := writeNotes(plan); err == nil || run.Err() == nil {
			t.Errorf("the plan run went on: %v", err)
		}
		plan.CloseAll()
		plan.Touched()
		if after := testtree.Contents(t, dir); after != before {
			t.Errorf("the plan run changed\n%s\ninto\n%s", before, after)
		}
	})
}

// chain makes n links in dir, name0 -> name1 -> ... -> name(n-1) ->
// target.
func chain(t *testing.T, dir, name string, n int, target string) {
	t.Helper()
	for i := range n {
		next := target
		if i < n-1 {
			next = fmt.Sprintf("%s%d", name, i+1)
		}
		if err := os.Symlink(next, filepath.Join(dir, fmt.Sprintf("%s%d", name, i))); err != nil {
			t.Fatal(err)
		}
	}
}

// Resolution is bounded and stays inside: a chain of up to MaxLinkHops
// links is followed and the write named by the file it reaches; a longer
// chain, a loop, a link to / or to an absolute path (even one inside the
// directory), a link up and out, and targets that walk down and up past
// the bound are refused, naming the link, before anything is made; a
// dangling link inside makes the file where it leads.
func TestLinkResolutionBounds(t *testing.T) {
	dir, out := t.TempDir(), outside(t)
	tree(t, dir, map[string]string{
		"target.txt":  "target\n",
		"sub/":        "",
		"loop":        "->loop",
		"ping":        "->pong",
		"pong":        "->ping",
		"slash":       "->/",
		"absin":       "->" + filepath.Join(dir, "target.txt"),
		"up":          "->..",
		"outfile":     "->../" + filepath.Base(out) + "/secret.txt",
		"here":        "->.",
		"downup":      "->sub/../sub/../target.txt",
		"through":     "->nothing/../target.txt",
		"dots":        "->" + strings.Repeat("./", 2000) + "target.txt",
		"seesaw":      "->" + strings.Repeat("sub/../", 500) + "target.txt",
		"dangling":    "->sub/made.txt",
		"sub/deepdir": "->../here/here/here/sub",
	})
	chain(t, dir, "ok", MaxLinkHops, "target.txt")
	chain(t, dir, "long", 1000, "target.txt")
	before := testtree.Contents(t, out)
	const loop = "too many levels of symbolic links (more than 40: a loop, or a chain too long)"
	for _, c := range []struct{ path, want, file string }{
		{"ok0", "", "target.txt"},
		{"long0", loop + " (through the symbolic link 'long40')", ""},
		{"loop", loop + " (through the symbolic link 'loop')", ""},
		{"ping", loop, ""},
		{"slash/etc/passwd", "path escapes the io directory (through the symbolic link 'slash')", ""},
		{"absin", "path escapes the io directory (through the symbolic link 'absin')", ""},
		{"up/x", "path escapes the io directory (through the symbolic link 'up')", ""},
		{"outfile", "path escapes the io directory (through the symbolic link 'outfile')", ""},
		{"here/here/new.txt", "", "new.txt"},
		{"here", "is a directory", ""},
		{"downup", "", "target.txt"},
		{"through", "no such file or directory", ""},
		{"dots", "", "target.txt"},
		{"seesaw", "the path, its symbolic links followed, is too long to resolve", ""},
		{"dangling", "", "sub/made.txt"},
		{"sub/deepdir/x.txt", "", "sub/x.txt"},
	} {
		s := New(dir, Limits{MaxBytes: 1 << 20})
		id, err := s.Open(c.path, "a")
		if err == nil {
			err = s.Write(id, []byte("+"))
		}
		s.CloseAll()
		touched, _ := s.Touched()
		switch {
		case !wantErr(t, c.path, err, c.want):
		case c.want != "" && len(touched) != 0:
			t.Errorf("%s: refused, and touched %v", c.path, touched)
		case c.want == "" && (len(touched) != 1 || touched[0].Name != c.file):
			t.Errorf("%s: touched %v, want %s", c.path, touched, c.file)
		}
	}
	if after := testtree.Contents(t, out); after != before {
		t.Errorf("the outside changed:\n%s", after)
	}
}

// A link swapped into a path after it was resolved (by something beside
// the script: it makes no links) fails the change: nothing is made or
// changed where the link leads, in a real run (the open) as in a run
// with rules (the write, at its handle's close, after the rules allowed
// it by its real name).
func TestLinkSwappedAfterResolving(t *testing.T) {
	swap := func(t *testing.T, dir, name, target string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Rename(p, p+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, path, swapped, target string }{
		{"directory", "docs/new.txt", "docs", "secret"},
		{"file", "docs/keys.txt", "docs/keys.txt", "../secret/keys.txt"},
	} {
		t.Run(c.name+" real", func(t *testing.T) {
			dir := t.TempDir()
			tree(t, dir, map[string]string{"secret/keys.txt": "keys\n", "docs/keys.txt": "docs\n"})
			before := testtree.Contents(t, filepath.Join(dir, "secret"))
			s := New(dir, Limits{MaxBytes: 1 << 20})
			s.afterResolve = func(name string) {
				if name == c.path {
					swap(t, dir, c.swapped, c.target)
				}
			}
			err := writeErr(s, c.path, "w", "changed\n")
			if err == nil || !strings.Contains(err.Error(), "a symbolic link appeared in the path after it was resolved") {
				t.Errorf("the write: %v", err)
			}
			s.CloseAll()
			s.Touched()
			if after := testtree.Contents(t, filepath.Join(dir, "secret")); after != before {
				t.Errorf("the secret directory changed:\n%s", after)
			}
		})
		t.Run(c.name+" rules", func(t *testing.T) {
			set, err := policy.Compile([]policy.Rule{
				{Name: "secret", When: `effect.path.startsWith("secret/")`, Action: "deny"},
			}, effects.ActionAllow)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			tree(t, dir, map[string]string{"secret/keys.txt": "keys\n", "docs/keys.txt": "docs\n"})
			before := testtree.Contents(t, filepath.Join(dir, "secret"))
			run := effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "ann"}), &declines{})
			s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
			id, err := s.Open(c.path, "w")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(id, []byte("changed\n")); err != nil {
				t.Fatal(err)
			}
			swap(t, dir, c.swapped, c.target)
			if err := s.Close(id); err == nil || !strings.Contains(err.Error(), "a symbolic link appeared in the path after it was resolved") {
				t.Errorf("the write: %v", err)
			}
			s.CloseAll()
			s.Touched()
			if after := testtree.Contents(t, filepath.Join(dir, "secret")); after != before {
				t.Errorf("the secret directory changed:\n%s", after)
			}
			log, _ := run.Effects()
			if got := describe(log); got != "write "+c.path+"  8 allowed" {
				t.Errorf("effects %s", got)
			}
		})
	}
}

// A resumed execution reports a file its prefix wrote through a link by
// the file's own name, as the prefix's records named it.
func TestContinueFromNamesTheFileALinkChanged(t *testing.T) {
	dir := linkedTree(t)
	s := New(dir, Limits{MaxBytes: 1 << 20})
	s.ContinueFrom([]trace.IO{{Op: trace.IOOpen, Path: "public/notes.txt", Mode: "a", Result: 1}})
	s.CloseAll()
	if touched, _ := s.Touched(); fmt.Sprint(touched) != "[{secret/keys.txt append 5 false}]" {
		t.Errorf("touched %v", touched)
	}
}

// A dry run shows the script its staged changes through a link as a
// real run would show them: a file made through a directory link is
// listed, described and read through the link.
func TestDryRunViewThroughALink(t *testing.T) {
	dir := linkedTree(t)
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(effects.New(effects.DryRun))
	defer s.Touched()
	defer s.CloseAll()
	write(t, s, "secret/new.txt", "w", "new\n")
	write(t, s, "docs/keys.txt", "a", "more\n")
	if got, err := s.List(context.Background(), "docs"); err != nil || fmt.Sprint(got) != "[alias.txt keys.txt new.txt]" {
		t.Errorf("List(docs) = %v, %v", got, err)
	}
	for name, size := range map[string]int64{"docs/new.txt": 4, "docs/keys.txt": 10, "public/deep/chain/keys.txt": 10} {
		if info, err := s.Stat(name); err != nil || info.Size != size {
			t.Errorf("Stat(%s) = %+v, %v; want %d bytes", name, info, err, size)
		}
	}
	if got := read(t, s, "docs/new.txt"); got != "new\n" {
		t.Errorf("docs/new.txt reads %q", got)
	}
}

// FuzzRealName resolves fuzzed paths through a link with a fuzzed target
// beside links that loop, chain and lead out: a real name, when there is
// one, is clean, inside, no deeper than a path may be, and has no link
// among its components.
func FuzzRealName(f *testing.F) {
	for _, seed := range [][2]string{
		{"sub", "l/x"}, {"..", "l/x"}, {"/", "l"}, {"l", "l"}, {"a/../../x", "l"}, {"sub/../a.txt", "l"},
		{"./././a.txt", "l"}, {"loop/x", "l/y"}, {"up", "l/up/x"}, {"sub/deep", "l/z"}, {"missing/../a.txt", "l"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, target, p string) {
		dir := t.TempDir()
		tree(t, dir, map[string]string{"a.txt": "a", "sub/": "", "loop": "->loop", "up": "->..", "chain": "->sub"})
		if err := os.Symlink(target, filepath.Join(dir, "l")); err != nil {
			return
		}
		name, err := Clean(p)
		if err != nil {
			return
		}
		s := New(dir, Limits{MaxBytes: 1 << 20})
		defer s.Touched()
		if err := s.openRoot(false); err != nil {
			t.Fatal(err)
		}
		for _, final := range []bool{true, false} {
			real, err := s.realName(name, final)
			if err != nil {
				continue
			}
			if real != path.Clean(real) || strings.HasPrefix(real, "/") || real == ".." || strings.HasPrefix(real, "../") || strings.Count(real, "/") >= MaxPathDepth {
				t.Fatalf("realName(%q) through l -> %q = %q", name, target, real)
			}
			parts := strings.Split(real, "/")
			for i := range parts {
				if i == len(parts)-1 && !final {
					break
				}
				if info, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(path.Join(parts[:i+1]...)))); err == nil && info.Mode()&os.ModeSymlink != 0 {
					t.Fatalf("realName(%q) through l -> %q = %q, a link at %q", name, target, real, path.Join(parts[:i+1]...))
				}
			}
		}
	})
}
