//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testwait"
)

// The host's memory while scripts fetch large responses: peak resident
// set sizes of real processes (`toolscript run`, `toolscript serve
// --http`), measured by the kernel (the maximum RSS of a child that has
// exited, VmHWM of one still running). A peak RSS is a quantity, not a
// timing: the workload is fixed, and the calls of one script (and the
// scripts of the server) are made to overlap by the API itself, which
// holds every request until all have arrived.

// The memory targets.
const (
	maxRunRSS    = 200 << 20 // `run` of parallelScript
	maxHostedRSS = 500 << 20 // serve --http, four executions of it at once
)

// bigItems is the number of items of a big response, and bigBody makes
// its body (once): about 10 MB of JSON, {"items":[{"id":0,"text":"..."},...]}.
const bigItems = 9700

var bigBody = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	text := strings.Repeat("abcdefghij", 100)
	b.WriteString(`{"items":[`)
	for i := range bigItems {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"text":"%s"}`, i, text)
	}
	b.WriteString("]}")
	return b.Bytes()
})

const bigSpec = `openapi: 3.0.3
info: { title: big, version: "1" }
paths:
  /items:
    get:
      operationId: get_items
      parameters:
        - { name: n, in: query, required: true, schema: { type: integer } }
        - { name: e, in: query, schema: { type: integer } }
      responses:
        "200": { description: about 10 MB of items, content: { application/json: { schema: { type: object } } } }
`

// parallelScript fetches eight big responses in parallel and counts their
// items; execution e's requests carry e=<e>.
func parallelScript(e int) string {
	return fmt.Sprintf(`local fns = {}
for i = 1, 8 do
  fns[i] = function() return #sdk.get_items({n = i, e = %d}).items end
end
local total = 0
for _, n in parallel(fns) do total += n end
return total`, e)
}

// bigAPI serves bigBody at /items, holding each request until `want`
// requests (of distinct executions, when perExecution) have arrived, so
// that that many are in flight together.
type bigAPI struct {
	srv *httptest.Server

	mu      sync.Mutex
	arrived map[string]bool
	all     chan struct{}
	want    int
}

func newBigAPI(t *testing.T, want int, perExecution bool) *bigAPI {
	a := &bigAPI{arrived: map[string]bool{}, all: make(chan struct{}), want: want}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.RawQuery
		if perExecution {
			key = r.URL.Query().Get("e")
		}
		a.mu.Lock()
		if !a.arrived[key] {
			a.arrived[key] = true
			if len(a.arrived) == a.want {
				close(a.all)
			}
		}
		a.mu.Unlock()
		select {
		case <-a.all:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		body := bigBody()
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// bigConfig writes the spec and a toolscript.toml naming the API (and
// extra lines) into dir.
func bigConfig(t *testing.T, dir, url, extra string) {
	t.Helper()
	spec := filepath.Join(dir, "big.yaml")
	testfile.Write(t, spec, bigSpec)
	config := extra + "\n[apis.big]\nspec = " + testconfig.Quote(spec) + "\nbase_url = " + testconfig.Quote(url) + "\n"
	testconfig.Write(t, dir, config)
}

// runPeakRSS runs `toolscript run --no-io SCRIPT` in dir and returns its
// standard output, standard error and peak RSS in bytes.
func runPeakRSS(t *testing.T, dir, script string) (string, string, int64) {
	t.Helper()
	path := filepath.Join(dir, "script.luau")
	testfile.Write(t, path, script)
	cmd := exec.Command(binary, "run", "--no-io", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLSCRIPT_IO_DIR=", "XDG_CACHE_HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("running toolscript: %v", err)
		}
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no resource usage for the process")
	}
	return strings.TrimSpace(out.String()), errOut.String(), ru.Maxrss << 10 // kB on Linux
}

// vmHWM is the peak RSS of a running process, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestMemoryRunParallelBigResponses: `run` of a script that fetches eight
// ~10 MB responses at once, under the default limits, succeeds with a
// peak RSS of at most 200 MB.
func TestMemoryRunParallelBigResponses(t *testing.T) {
	api := newBigAPI(t, 8, false)
	dir := t.TempDir()
	bigConfig(t, dir, api.srv.URL, "")
	stdout, stderr, rss := runPeakRSS(t, dir, parallelScript(0))
	t.Logf("peak RSS of run: %.1f MB", float64(rss)/(1<<20))
	if want := strconv.Itoa(8 * bigItems); stdout != want {
		t.Fatalf("output %q, want %s; stderr:\n%s", stdout, want, stderr)
	}
	if rss > maxRunRSS {
		t.Errorf("peak RSS %.1f MB, more than %d MB", float64(rss)/(1<<20), maxRunRSS>>20)
	}
}

// TestMemoryHostedParallelBigResponses: four executions of that script
// at once on `serve --http` (the default max_concurrent) keep the
// server's peak RSS within 500 MB.
func TestMemoryHostedParallelBigResponses(t *testing.T) {
	const executions = 4
	api := newBigAPI(t, executions, true)
	dir := t.TempDir()
	bigConfig(t, dir, api.srv.URL, "")
	iss, args := issuerArgs(t)
	p := startServe(t, dir, args...)
	before := vmHWM(t, p.cmd.Process.Pid)

	clients := make([]*client.Client, executions)
	for i := range clients {
		clients[i] = connectHTTP(t, p.url, iss.Token(t, "RS256", fmt.Sprintf("user%d", i)))
	}
	ctx := testwait.Context(t)
	var wg sync.WaitGroup
	results := make([]execResult, executions)
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = callScript(t, ctx, c, map[string]any{"script": parallelScript(i)})
		}()
	}
	wg.Wait()
	rss := vmHWM(t, p.cmd.Process.Pid)
	t.Logf("peak RSS of serve: %.1f MB (%.1f MB before the executions)", float64(rss)/(1<<20), float64(before)/(1<<20))
	for i, res := range results {
		if res.Error != nil || string(res.Result) != strconv.Itoa(8*bigItems) {
			t.Errorf("execution %d: result %s, error %+v", i, res.Result, res.Error)
		}
	}
	if rss > maxHostedRSS {
		t.Errorf("peak RSS %.1f MB, more than %d MB", float64(rss)/(1<<20), maxHostedRSS>>20)
	}
}
