//go:build unix

package upstream

import (
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// settled reports whether srv has no attempt in flight and no connection:
// its last start failed, and the next background one waits for its
// backoff.
func settled(srv *server) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.conn == nil && srv.bgAttempt == nil && srv.callerAttempt == nil && srv.retry != nil
}

// crashed starts the controlled Python server "py", its background
// restarts an hour apart, lets next prepare what its next start meets
// (Control.Break, Control.Hold), and crashes it.
func crashed(t *testing.T, next func(*testupstreams.Control, testing.TB)) (*testupstreams.Control, *Set, *server) {
	t.Helper()
	ctl := testupstreams.Controlled(t, testupstreams.Python(t))
	set := start(t, Options{Stderr: &syncbuf.Buffer{}, BackoffUnit: time.Hour}, stdio("py", ctl.Command))
	next(ctl, t)
	if r := call(testwait.Context(t), t, set, "py", "crash", `[]`); r.Fail != sdkcall.Upstream {
		t.Fatalf("crash: %+v", r)
	}
	return ctl, set, set.byName["py"]
}

func TestCallTriesDownServerAtOnce(t *testing.T) {
	// A server that keeps failing gets background attempts an hour apart;
	// each call meanwhile tries it at once (one start each, counted by
	// the process that runs), and the first call after it is fixed works.
	ctl, set, srv := crashed(t, (*testupstreams.Control).Break)
	// The death restarts it in the background at once, which fails; the
	// next background attempt is an hour away.
	testwait.Until(t, "a failed background restart", func() bool { return ctl.Starts() == 2 && settled(srv) })

	r := call(testwait.Context(t), t, set, "py", "say-hello", `[{"name":"a"}]`)
	if r.Fail != sdkcall.Upstream || !strings.Contains(r.Message, "exit status 1") || ctl.Starts() != 3 {
		t.Fatalf("a call while it is broken: starts %d, %+v", ctl.Starts(), r)
	}
	ctl.Fix(t)
	r = call(testwait.Context(t), t, set, "py", "say-hello", `[{"name":"b"}]`)
	if r.Fail != sdkcall.OK || string(r.Text) != "Hello, b!" || ctl.Starts() != 4 {
		t.Fatalf("the first call once fixed: starts %d, %+v", ctl.Starts(), r)
	}
}

func TestFirstWorkingAttemptWins(t *testing.T) {
	// A background restart hangs (held before the server runs); a call
	// meanwhile starts its own attempt, which works and wins: the call
	// is answered while the hung attempt is still held, and that attempt
	// is then cancelled.
	ctl, set, srv := crashed(t, (*testupstreams.Control).Hold)
	testwait.Until(t, "a background restart held at the gate", func() bool { return ctl.Starts() == 2 })
	ctl.Unhold(t)
	r := call(testwait.Context(t), t, set, "py", "say-hello", `[{"name":"c"}]`)
	if r.Fail != sdkcall.OK || string(r.Text) != "Hello, c!" || ctl.Starts() != 3 {
		t.Fatalf("a call while a restart hangs: starts %d, %+v", ctl.Starts(), r)
	}
	testwait.Until(t, "the held attempt cancelled", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.bgAttempt == nil
	})
}

func TestLaunchStartsInBackground(t *testing.T) {
	// Launch returns while a server is held before it runs: its API says
	// it is starting and has no functions; Wait waits for it; once it is
	// released its tools arrive, with OnToolsChanged.
	ctl := testupstreams.Controlled(t, testupstreams.Python(t))
	ctl.Hold(t)
	changed := make(chan string, 4)
	set, err := Launch([]Config{stdio("py", ctl.Command)}, Options{Stderr: &syncbuf.Buffer{}, OnToolsChanged: func(s string) { changed <- s }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	api := set.APIs()[0]
	if api.State != StateStarting || len(api.Functions) != 0 || api.Kind != catalog.MCP || !strings.Contains(api.Description, "is starting") {
		t.Fatalf("while held: %+v", api)
	}
	waited := make(chan error, 1)
	go func() { waited <- set.Wait(testwait.Context(t), "py") }()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned while the server is held: %v", err)
	default:
	}
	ctl.Release(t)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if s := <-changed; s != "py" {
		t.Fatalf("changed %s", s)
	}
	if api := set.APIs()[0]; api.State != "" || api.Function("say_hello") == nil {
		t.Fatalf("once started: %+v", api)
	}
	if ctl.Starts() != 1 {
		t.Fatalf("%d starts", ctl.Starts())
	}
}

func TestLaunchBrokenServer(t *testing.T) {
	// A server that cannot start is down, says why in its API, and is
	// tried at once by Wait: failing while it is broken, working once it
	// is fixed.
	ctl := testupstreams.Controlled(t, testupstreams.Python(t))
	ctl.Break(t)
	changed := make(chan string, 4)
	set, err := Launch([]Config{stdio("py", ctl.Command)}, Options{Stderr: &syncbuf.Buffer{}, BackoffUnit: time.Hour,
		OnToolsChanged: func(s string) { changed <- s }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	<-changed
	if api := set.APIs()[0]; api.State != StateDown || !strings.Contains(api.Description, "exit status 1") {
		t.Fatalf("broken: %+v", api)
	}
	if err := set.Wait(testwait.Context(t), "py"); err == nil || ctl.Starts() != 2 {
		t.Fatalf("Wait while broken: %v, %d starts", err, ctl.Starts())
	}
	ctl.Fix(t)
	if err := set.Wait(testwait.Context(t), "py"); err != nil || ctl.Starts() != 3 {
		t.Fatalf("Wait once fixed: %v, %d starts", err, ctl.Starts())
	}
	if api := set.APIs()[0]; api.State != "" || api.Function("say_hello") == nil {
		t.Fatalf("once fixed: %+v", api)
	}
}
