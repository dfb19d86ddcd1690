package sdk

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/upstream"
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
	c, err := open(context.Background(), Config{
		APIs: []APIConfig{{Name: "pets", Spec: testapi.SpecPath(), BaseURL: a.srv.URL}},
	}, testSources{
		upstreams:      []upstream.Config{{Name: "py", Command: argv[0], Args: argv[1:]}},
		stderr:         io.Discard,
		onToolsChanged: func(s string) { changed <- s },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := call(t, c.Session(nil), "say_hello", `[{"name":"x"}]`); r.Fail != sdkcall.OK || string(r.Text) != "Hello, x!" {
		t.Fatalf("%+v", r)
	}
	// A tool's arguments are JSON text: a byte that is not UTF-8, which
	// the shim passes on as it is, reaches the server as U+FFFD.
	if r := call(t, c.Session(nil), "say_hello", `[{"name":`+shimString("a\xffb")+`}]`); r.Fail != sdkcall.OK || string(r.Text) != "Hello, a\uFFFDb!" {
		t.Fatalf("binary argument: %+v", r)
	}
	// refreshedAfter calls tool of from, which changes the server's tools,
	// waits for OnToolsChanged and returns the refreshed client.
	refreshedAfter := func(from *Client, tool string) *Client {
		t.Helper()
		if r := call(t, from.Session(nil), tool, `[]`); r.Fail != sdkcall.OK {
			t.Fatalf("%s: %+v", tool, r)
		}
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatalf("no OnToolsChanged after %s", tool)
		}
		refreshed, err := from.Refresh()
		if err != nil {
			t.Fatal(err)
		}
		return refreshed
	}
	n := refreshedAfter(c, "add_tool")
	if r := call(t, n.Session(nil), "added", `[{"x":1}]`); r.Fail != sdkcall.OK {
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

	// Ids keep their meaning across refreshes: a script whose sdk table
	// was made before calls what it named, or learns that it is gone.
	ids := func(c *Client) map[string]uint32 {
		out := map[string]uint32{}
		for _, api := range c.Manifest().APIs {
			for _, f := range api.Functions {
				out[api.Name+"."+f.Name] = f.ID
			}
		}
		return out
	}
	oldIDs, newIDs := ids(c), ids(n)
	for name, id := range oldIDs {
		if newIDs[name] != id {
			t.Errorf("%s: id %d before the refresh, %d after", name, id, newIDs[name])
		}
	}
	if id := newIDs["py.added"]; int(id) < len(oldIDs) {
		t.Errorf("the new tool reuses id %d", id)
	}
	hello := oldIDs["py.say_hello"]
	if r := n.Session(nil).Call(context.Background(), hello, json.RawMessage(`[{"name":"y"}]`)); string(r.Text) != "Hello, y!" {
		t.Fatalf("an old id through the new client: %+v", r)
	}
	m := refreshedAfter(n, "remove_tool")
	r := m.Session(nil).Call(context.Background(), hello, json.RawMessage(`[{"name":"y"}]`))
	if r.Fail != sdkcall.Argument || !strings.Contains(r.Message, "no longer available") {
		t.Errorf("a removed tool's id: %+v", r)
	}
	if r := m.Session(nil).Call(context.Background(), newIDs["py.added"], json.RawMessage(`[{"x":2}]`)); !strings.Contains(string(r.JSON), "added 2") {
		t.Errorf("the added tool after a second refresh: %+v", r)
	}
}

// TestToolSafetyNames: a server lists wipe-all, then wipe_all, whose sdk
// functions are wipe_all and wipe_all_2. A safe or unsafe name either
// could mean ("wipe_all": the second's tool name, the first's sdk name)
// stops Open with an error naming both; a name only one has classifies
// that one alone.
func TestToolSafetyNames(t *testing.T) {
	argv := testupstreams.Python(t)
	server := upstream.Config{Name: "py", Command: argv[0], Args: argv[1:], Env: map[string]string{"PYSERVER_TWINS": "1"}}
	for _, tc := range []struct {
		name         string
		safe, unsafe []string
		err          string
		safeFuncs    string // of wipe_all and wipe_all_2, the safe ones
	}{
		{name: "safe, either", safe: []string{"wipe_all"},
			err: `[mcp_servers.py] safe and unsafe: "wipe_all" in safe could mean the tool wipe-all (sdk.py.wipe_all) or the tool wipe_all (sdk.py.wipe_all_2): name the one you mean by a name only it has ("wipe-all" or "wipe_all_2")`},
		{name: "unsafe, either", unsafe: []string{"wipe_all"},
			err: `[mcp_servers.py] safe and unsafe: "wipe_all" in unsafe could mean the tool wipe-all (sdk.py.wipe_all) or the tool wipe_all (sdk.py.wipe_all_2)`},
		{name: "by the hyphen's tool name", safe: []string{"wipe-all"}, safeFuncs: "wipe_all"},
		{name: "by the sdk name only one has", safe: []string{"wipe_all_2"}, safeFuncs: "wipe_all_2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := open(context.Background(), Config{
				ToolSafety: map[string]Safety{"py": {Safe: tc.safe, Unsafe: tc.unsafe}},
			}, testSources{upstreams: []upstream.Config{server}, stderr: io.Discard})
			if tc.err != "" {
				if err == nil {
					c.Close()
				}
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var safe []string
			for _, name := range []string{"wipe_all", "wipe_all_2"} {
				if effects.OfFunction(c.Catalog().API("py").Function(name)) == effects.Safe {
					safe = append(safe, name)
				}
			}
			if strings.Join(safe, " ") != tc.safeFuncs {
				t.Errorf("safe: %q, want %q", safe, tc.safeFuncs)
			}
		})
	}
}
