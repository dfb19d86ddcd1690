package typecheck_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/host/runtime/typecheck"
)

// TestChecksRunSideBySide: with room for two, two checks are inside their
// instances at the same time (each waits, in the checker, for the other
// to arrive), and both answer.
func TestChecksRunSideBySide(t *testing.T) {
	c := loadedChecker(t, typecheck.Config{MaxParallelChecks: 2})
	arrived := make(chan struct{}, 2)
	bothIn := make(chan struct{})
	typecheck.SetBeforeCheck(c, func(api.Module) {
		arrived <- struct{}{}
		<-bothIn
	})
	results := make(chan error, 2)
	for range 2 {
		go func() {
			diags, err := c.Check(context.Background(), "local x: number = \"s\"\nreturn x\n")
			if err == nil && (len(diags) != 1 || diags[0].Category != "type_mismatch") {
				err = fmt.Errorf("unexpected diagnostics %+v", diags)
			}
			results <- err
		}()
	}
	for range 2 { // the second check arrives while the first is in
		select {
		case <-arrived:
		case err := <-results:
			t.Fatalf("a check ended before the other arrived: %v", err)
		}
	}
	close(bothIn)
	for range 2 {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}
}

// TestCheckBeyondTheBoundWaitsForItsContext: with room for one, a check
// asked while another runs waits, and gives up when its context ends;
// the running check is not disturbed.
func TestCheckBeyondTheBoundWaitsForItsContext(t *testing.T) {
	c := loadedChecker(t, typecheck.Config{MaxParallelChecks: 1})
	in := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	typecheck.SetBeforeCheck(c, func(api.Module) {
		once.Do(func() {
			close(in)
			<-release
		})
	})
	first := make(chan error, 1)
	go func() {
		_, err := c.Check(context.Background(), "return 1\n")
		first <- err
	}()
	select {
	case <-in:
	case err := <-first:
		t.Fatalf("the first check ended before it was in: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := c.Check(ctx, "return 1\n")
		second <- err
	}()
	cancel()
	var unchecked *typecheck.UncheckedError
	if err := <-second; !errors.As(err, &unchecked) || !strings.Contains(unchecked.Reason, "was stopped") {
		t.Fatalf("want the waiting check stopped, got %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the running check: %v", err)
	}
}

// TestCheckSeesNoPreviousScript: each check runs in a fresh instance made
// from the image of the loaded definitions, so nothing of one script,
// neither its globals and types nor its bytes in memory, is there for the
// next.
func TestCheckSeesNoPreviousScript(t *testing.T) {
	c := loadedChecker(t, typecheck.Config{})
	const marker = "toolscript-marker-5b1e9c"
	declares := "-- " + marker + "\ntype Leaked = { n: number }\nfunction leaked(): number return 1 end\nreturn leaked()\n"
	uses := "local v: Leaked = { n = 1 }\nreturn leaked() + v.n\n"
	var seen [][]byte
	typecheck.SetBeforeCheck(c, func(mod api.Module) {
		mem, _ := mod.Memory().Read(0, mod.Memory().Size())
		seen = append(seen, bytes.Clone(mem))
	})
	for round := range 2 {
		if diags, err := c.Check(context.Background(), declares); err != nil || len(diags) != 0 {
			t.Fatalf("round %d: the declaring script: %+v, %v", round, diags, err)
		}
		diags, err := c.Check(context.Background(), uses)
		if err != nil {
			t.Fatal(err)
		}
		unknown := map[string]bool{}
		for _, d := range diags {
			for _, name := range []string{"Leaked", "leaked"} {
				if strings.Contains(d.Message, name) {
					unknown[name] = true
				}
			}
		}
		if !unknown["Leaked"] || !unknown["leaked"] {
			t.Errorf("round %d: want Leaked and leaked unknown, got %+v", round, diags)
		}
	}
	for i, mem := range seen {
		if bytes.Contains(mem, []byte(marker)) {
			t.Errorf("check %d starts with a previous script's bytes in its memory", i)
		}
	}
}

// TestLoadReplacesTheImage: after Load, checks run against the new
// definitions, not in an instance made ahead from the old ones.
func TestLoadReplacesTheImage(t *testing.T) {
	c := newChecker(t, typecheck.Config{})
	script := "return sdk.github.get_issue({owner = \"o\", number = 1}).title\n"
	tests := []struct {
		name        string
		definitions string
		want        int
	}{
		{"the first definitions", definitions, 0},
		{"definitions without the function", "declare sdk: { github: {} }\n", 1},
		{"the first again", definitions, 0},
	}
	for _, tt := range tests {
		if err := c.Load([]byte(tt.definitions)); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the first check's instance, then one made ahead
			diags, err := c.Check(context.Background(), script)
			if err != nil || len(diags) != tt.want {
				t.Fatalf("%s: want %d diagnostics, got %+v, %v", tt.name, tt.want, diags, err)
			}
		}
	}
}
