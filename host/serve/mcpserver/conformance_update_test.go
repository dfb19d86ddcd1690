package mcpserver_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// update rewrites the cases' expected messages: go test -run
// TestConformance -update. Each case is rewritten from what the server
// sends over the first transport it runs on (stdio for testdata/both), and
// then checked over the others as it now reads.
var update = flag.Bool("update", false, "rewrite the < lines of testdata/conformance from what the server sends")

// updater collects the rewrite of one case's < lines. An expected message
// that a message received matches keeps its lines, patterns ($any, $more,
// $json) and all; the lines of one that none matches take, in order, the
// messages that matched nothing, as they were sent; messages beyond those
// go after the block's last line, and expected messages left over go.
// Messages after the last block go at the end of the file.
type updater struct {
	edits  []edit
	extras []string
}

// edit replaces the file's lines first to last (from 1) with lines; with
// last = first-1 it inserts them before line first.
type edit struct {
	first, last int
	lines       []string
}

func (u *updater) block(want []expected, got []received) {
	matched := make([]bool, len(want))
	var unmatched []received
	for _, m := range got {
		i := -1
		for j, e := range want {
			if !matched[j] && matchJSON(e.value, m.value) {
				i = j
				break
			}
		}
		if i < 0 {
			unmatched = append(unmatched, m)
			continue
		}
		matched[i] = true
	}
	for i, e := range want {
		if matched[i] {
			continue
		}
		var lines []string
		if len(unmatched) > 0 {
			// The message with the expected one's id, else the first.
			j := max(0, slices.IndexFunc(unmatched, func(m received) bool { return sameID(e.value, m.value) }))
			lines = []string{"< " + unmatched[j].raw}
			unmatched = slices.Delete(unmatched, j, j+1)
		}
		u.edits = append(u.edits, edit{e.line, e.last, lines})
	}
	if len(unmatched) > 0 {
		after := want[len(want)-1].last + 1
		var lines []string
		for _, m := range unmatched {
			lines = append(lines, "< "+m.raw)
		}
		u.edits = append(u.edits, edit{after, after - 1, lines})
	}
}

// sameID tells whether two messages have the same id.
func sameID(want, got any) bool {
	w, _ := want.(map[string]any)
	g, _ := got.(map[string]any)
	id, ok := w["id"]
	return ok && matchJSON(id, g["id"])
}

// updateWait is how long an update waits for a message that may not come
// (the server no longer sends it).
const updateWait = 5 * time.Second

// settled tells whether the messages got hold, for each expected one, one
// that it matches or that has its id.
func settled(want []expected, got []received) bool {
	if len(got) < len(want) {
		return false
	}
	for _, e := range want {
		if !slices.ContainsFunc(got, func(m received) bool { return matchJSON(e.value, m.value) || sameID(e.value, m.value) }) {
			return false
		}
	}
	return true
}

func (u *updater) extra(m received) { u.extras = append(u.extras, "< "+m.raw) }

// write rewrites the case's file, if anything changed, and reloads it.
func (u *updater) write(t *testing.T, c *conformanceCase) {
	if len(u.edits) == 0 && len(u.extras) == 0 {
		return
	}
	data, err := os.ReadFile(c.file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	lines = append(lines, u.extras...)
	slices.SortFunc(u.edits, func(a, b edit) int { return b.first - a.first })
	for _, e := range u.edits {
		lines = slices.Replace(lines, e.first-1, e.last, e.lines...)
	}
	if err := os.WriteFile(c.file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	updated, err := loadCase(c.file)
	if err != nil {
		t.Fatalf("%s as updated: %v", c.file, err)
	}
	c.config, c.steps = updated.config, updated.steps
	t.Logf("updated %s", c.file)
}

// TestConformanceUpdate checks the rewrite -update makes of a case: a
// message that matches keeps its pattern, one that differs takes the place
// of the expected one with its id, one no longer sent goes, a new one
// follows its block, and one after the last block ends the file.
func TestConformanceUpdate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "case.txtar")
	text := `What the case checks.

-- exchange --
> {"jsonrpc":"2.0","id":1,"method":"ping"}
< {"jsonrpc":"2.0","id":1,"result":"$any"}
# a comment stays
< {"jsonrpc":"2.0","id":2,
    "result":{"old":true}}
< {"jsonrpc":"2.0","id":3,"result":{}}

> {"jsonrpc":"2.0","id":4,"method":"ping"}
< {"jsonrpc":"2.0","id":4,"result":{}}
`
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadCase(file)
	if err != nil {
		t.Fatal(err)
	}
	msg := func(s string) received {
		v, err := decodeJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		return received{raw: s, value: v}
	}
	u := &updater{}
	u.block(c.steps[1].expect, []received{msg(`{"jsonrpc":"2.0","id":5,"result":{}}`), msg(`{"jsonrpc":"2.0","id":2,"result":{"new":true}}`),
		msg(`{"jsonrpc":"2.0","id":1,"result":{"x":1}}`)})
	u.block(c.steps[3].expect, []received{msg(`{"jsonrpc":"2.0","id":4,"result":{}}`)})
	u.extra(msg(`{"jsonrpc":"2.0","method":"late"}`))
	u.write(t, c)
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := `What the case checks.

-- exchange --
> {"jsonrpc":"2.0","id":1,"method":"ping"}
< {"jsonrpc":"2.0","id":1,"result":"$any"}
# a comment stays
< {"jsonrpc":"2.0","id":2,"result":{"new":true}}
< {"jsonrpc":"2.0","id":5,"result":{}}

> {"jsonrpc":"2.0","id":4,"method":"ping"}
< {"jsonrpc":"2.0","id":4,"result":{}}
< {"jsonrpc":"2.0","method":"late"}
`
	if string(got) != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	if len(c.steps) != 4 || len(c.steps[1].expect) != 3 {
		t.Errorf("the case was not reloaded: %d steps", len(c.steps))
	}
}
