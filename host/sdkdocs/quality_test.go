package sdkdocs

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/catalog"
	"github.com/toolscript/toolscript/host/openapi"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/upstream"
	"github.com/toolscript/toolscript/internal/testspecs"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// The floors of the search's hit rates over testdata/queries.tsv: a query
// is a hit at k when one of its functions is among the first k results.
// Set a little under what the ranking measures, so that a change that
// makes the search worse fails.
const (
	floorTop3  = 0.78
	floorTop10 = 0.91
)

var realSDK struct {
	once sync.Once
	docs *Docs
	err  error
}

// realDocs are the docs of GitHub's API and the reference MCP servers
// server-memory, server-filesystem and server-everything, started for real.
func realDocs(t *testing.T) *Docs {
	t.Helper()
	spec := testspecs.GitHub(t)
	everything := testupstreams.Everything(t)
	dir := t.TempDir()
	fs := testupstreams.Filesystem(t, dir)
	memory, env := testupstreams.Memory(t, filepath.Join(dir, "memory.jsonl"))
	ctx := context.Background()
	gh, err := openapi.Load(ctx, openapi.Source{Name: "gh", Spec: spec}, openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := upstream.Start(ctx, []upstream.Config{
		{Name: "memory", Command: memory[0], Args: memory[1:], Env: env},
		{Name: "fs", Command: fs[0], Args: fs[1:]},
		{Name: "everything", Command: everything[0], Args: everything[1:]},
	}, upstream.Options{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	cat := &catalog.Catalog{APIs: append([]*catalog.API{gh}, set.APIs()...)}
	c, err := sdk.New(cat, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return New(c.Catalog())
}

type query struct {
	text string
	want []string
}

func readQueries(t *testing.T) []query {
	f, err := os.Open("testdata/queries.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []query
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("queries.tsv: no tab in %q", line)
		}
		out = append(out, query{text, strings.Split(want, ",")})
	}
	return out
}

// TestSearchQuality measures search_docs on requests phrased as a model
// phrases them, against real specs and real servers' tools, and asserts
// its top-3 and top-10 hit rates.
func TestSearchQuality(t *testing.T) {
	d := realDocs(t)
	queries := readQueries(t)
	if len(queries) < 40 {
		t.Fatalf("only %d queries", len(queries))
	}
	known := map[string]bool{}
	for _, h := range d.index.docs {
		if h.builtin != nil {
			known[h.builtin.Name()] = true
		} else {
			known[callName(h.api, h.fn)] = true
		}
	}
	top3, top10 := 0, 0
	for _, q := range queries {
		for _, w := range q.want {
			if !known[w] {
				t.Fatalf("query %q expects %s, which is not in the sdk", q.text, w)
			}
		}
		hits := d.Search(q.text, 10)
		rank := -1
		for i, h := range hits {
			if slices.Contains(q.want, h.Name) {
				rank = i
				break
			}
		}
		switch {
		case rank >= 0 && rank < 3:
			top3++
			top10++
		case rank >= 0:
			top10++
		}
		if rank < 0 || rank >= 3 {
			var got []string
			for _, h := range hits[:min(5, len(hits))] {
				got = append(got, h.Name)
			}
			t.Logf("rank %d for %q (want %v): %v", rank+1, q.text, q.want, got)
		}
	}
	// The example: a memory is server-memory's to keep.
	var first []string
	for _, h := range d.Search("remember a fact about a person", 3) {
		first = append(first, h.Name)
	}
	if !slices.Contains(first, "sdk.memory.create_entities") || !slices.Contains(first, "sdk.memory.add_observations") {
		t.Errorf("remember a fact about a person: %v", first)
	}
	r3, r10 := float64(top3)/float64(len(queries)), float64(top10)/float64(len(queries))
	t.Logf("%d queries: top-3 %.1f%% (%d), top-10 %.1f%% (%d)", len(queries), 100*r3, top3, 100*r10, top10)
	if r3 < floorTop3 || r10 < floorTop10 {
		t.Errorf("hit rates fell below the floors (top-3 %.2f, top-10 %.2f)", floorTop3, floorTop10)
	}
}
