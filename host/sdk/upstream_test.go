package sdk

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/catalog"
	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/host/upstream"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

func TestUpstreamRefresh(t *testing.T) {
	// An upstream's tools change (notifications/tools/list_changed):
	// OnToolsChanged fires, Refresh gives a client whose manifest and
	// catalog have the new tool, and the old client is untouched.
	argv := testupstreams.Python(t)
	changed := make(chan string, 4)
	a := newTestAPI(t)
	c, err := Open(context.Background(), Config{
		APIs:           []APIConfig{{Name: "pets", Spec: testapi.SpecPath(), BaseURL: a.srv.URL}},
		Upstreams:      []upstream.Config{{Name: "py", Command: argv[0], Args: argv[1:]}},
		Stderr:         io.Discard,
		OnToolsChanged: func(s string) { changed <- s },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := call(t, c.Session(nil), "say_hello", `[{"name":"x"}]`); r.Fail != luau.SDKOK || string(r.Text) != "Hello, x!" {
		t.Fatalf("%+v", r)
	}
	if r := call(t, c.Session(nil), "add_tool", `[]`); r.Fail != luau.SDKOK {
		t.Fatalf("%+v", r)
	}
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no OnToolsChanged")
	}
	n, err := c.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if r := call(t, n.Session(nil), "added", `[{"x":1}]`); r.Fail != luau.SDKOK {
		t.Fatalf("%+v", r)
	}
	if api := c.Catalog().API("py"); api.Function("added") != nil {
		t.Error("the old client's catalog changed")
	}
	if f := n.Catalog().API("pets").Function("list_pets"); f == nil || !f.Flat {
		t.Errorf("the refreshed catalog lost the OpenAPI functions: %+v", f)
	}
	if n.Catalog().API("py").Kind != catalog.MCP {
		t.Error("kind")
	}
}
