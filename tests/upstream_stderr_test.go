//go:build unix

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/sdk/upstream"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

func TestHostedStderrIsJSONLines(t *testing.T) {
	// Hosted mode's standard error is JSON lines only: an upstream's
	// banners, a line of 100 KB and a 20 MB flood of its standard error,
	// a spec's warning and an unusable io directory's, each come out as a
	// record (the upstream's
	// lines naming it), the long line cut, the flood dropped past the
	// rate and counted.
	dir := t.TempDir()
	spec := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(spec, []byte("openapi: 3.0.0\ninfo: {title: Empty, version: '1'}\nservers: [{url: 'http://127.0.0.1:9'}]\npaths: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	banners := `echo "banner one" >&2; echo "banner two" >&2
head -c 100000 /dev/zero | tr '\0' 'x' >&2; echo >&2
yes flood | head -c 20000000 >&2
exec "$@"`
	server := append([]string{"sh", "-c", banners, "sh"}, testupstreams.Python(t)...)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	start := time.Now()
	notDir := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, dir, "--io-dir="+notDir, "--api=empty="+spec, "--mcp=py="+testupstreams.Shell(server))
	p.stderr.wait(t, "banner two", p.exited)
	p.stderr.wait(t, fmt.Sprintf("dropping lines of its standard error: more than %d bytes a second (how many follows)", upstream.StderrRate), p.exited)
	// The count of dropped lines is said when the next line passes, or
	// when the server stops: stop serve and read everything.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	elapsed := time.Since(start)

	out := p.stderr.String()
	if bound := upstream.StderrBurst + int(upstream.StderrRate*elapsed.Seconds()) + 1<<20; len(out) > bound {
		t.Errorf("%d bytes of standard error in %s, more than %d", len(out), elapsed, bound)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %.200q", line)
		}
		msg, _ := rec["msg"].(string)
		if rec["time"] == nil || rec["level"] == nil || msg == "" {
			t.Errorf("a record without time, level or msg: %.200s", line)
		}
		py := rec["upstream"] == "py"
		switch {
		case py && rec["stream"] == "stderr" && (msg == "banner one" || msg == "banner two" || msg == "pyserver: ready"):
			seen[msg] = true
		case py && rec["stream"] == "stderr" && strings.HasPrefix(msg, "xxxx"):
			if !strings.HasSuffix(msg, "... (83616 more bytes of this line dropped)") {
				t.Errorf("the long line: ...%s", msg[len(msg)-60:])
			}
			seen["long"] = true
		case py && rec["stream"] == "stderr" && msg == "flood":
		case py && rec["level"] == "WARN" && strings.HasPrefix(msg, "dropped ") && strings.Contains(msg, " lines ("):
			seen["dropped"] = true
		case rec["api"] == "empty" && rec["level"] == "WARN" && msg == "the spec defines no operations":
			seen["spec warning"] = true
		case rec["level"] == "WARN" && strings.Contains(msg, "not-a-dir") && strings.Contains(msg, "is not a directory"):
			seen["io warning"] = true
		}
	}
	for _, want := range []string{"banner one", "banner two", "long", "dropped", "spec warning", "io warning"} {
		if !seen[want] {
			t.Errorf("no record of %s", want)
		}
	}
	if t.Failed() {
		t.Logf("standard error (%d bytes), its start:\n%.3000s", len(out), out)
	}
}

func TestHostedStartFailureIsJSON(t *testing.T) {
	// The error that stops serve --http at start-up is a JSON record too,
	// with the usual exit status.
	_, stderr, status := toolscript(t, t.TempDir(), "", "serve", "--http", "127.0.0.1:0", "--no-io", "--api=ghost=/nonexistent/ghost.yaml")
	if status != 2 {
		t.Errorf("status %d", status)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if msg, _ := rec["msg"].(string); rec["level"] == "ERROR" && strings.Contains(msg, "api ghost") {
			found = true
		}
	}
	if !found {
		t.Errorf("no ERROR record naming the API: %s", stderr)
	}
}
