package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// The protocol's edge cases as data: each file of testdata/conformance is
// one case, a txtar archive holding what a client sends and what the
// server must send back, run against a real Server on a real transport:
//
//   - testdata/conformance/both: over stdio (Server.Serve on pipes) and
//     over streamable HTTP (Server.HTTPHandler behind the hosted mode's
//     handler and a real token issuer, on an httptest server), the latter
//     with sessions and stateless;
//   - testdata/conformance/stdio, testdata/conformance/http: over that
//     transport only.
//
// go test -run TestConformance -update rewrites the < lines from what
// the server sends (conformance_update_test.go); review the diff, and put
// back a pattern where a value depends on the run.
//
// An archive's comment says what the case checks. Its files:
//
//	-- config --     optional: a JSON object of server settings
//	                 (caseConfig: max_concurrent, max_script_bytes,
//	                 queue_wait_ms, stateless), and skip: the
//	                 transports the case does not pass on yet, each with
//	                 the reason
//	-- exchange --   the conversation, one step a line (below)
//
// The lines of the exchange, in order:
//
//	# ...            a comment
//	> TEXT           the client sends TEXT as one message: a line over
//	                 stdio, the body of a POST over HTTP (as the current
//	                 user, alice by default, in the user's current
//	                 session). Sent as it is (it need not be JSON), after
//	                 ${repeat N TEXT} is replaced by TEXT N times.
//	>> TEXT          as > TEXT, without a line end over stdio.
//	end              the input ends here (stdio: it is closed; HTTP:
//	                 every response is read); the < lines after it are
//	                 what the server sends from then on.
//	< JSON           the server sends a message equal to JSON (below).
//	                 Consecutive < lines form a block: the block's
//	                 messages may come in any order, and all of them come
//	                 before the next block's. A blank line ends a block.
//	POST|DELETE|GET [key=value ...] [BODY]
//	                 HTTP only: one request, waited for, with options:
//	                 user=NAME, session=NAME|none|LITERAL (default: the
//	                 user's current session), status=CODE (default 200),
//	                 content=json|sse|empty, bind=NAME (the response must
//	                 carry a session id: it is named NAME and becomes the
//	                 user's current one), nosession (the response must
//	                 carry none), async (not waited for: for a request
//	                 that ends later, such as a call waiting for a slot).
//	                 Its messages (a body of JSON, whatever the status,
//	                 or events) are expected by the < lines that follow,
//	                 like those of a > line.
//	wait-tracked N   HTTP only: wait until the transport tracks N
//	                 tools/call handlers (running or waiting for a slot);
//	                 over stdio the input is read in order, and the line
//	                 is skipped.
//	wait-idle        wait until the server holds no tools/call request
//	                 (every handler has returned, every slot is free):
//	                 after a cancellation, which has no response.
//
// A line starting with a space or a tab continues the line before it (for
// long JSON). Over HTTP, a > line that is a request is sent without
// waiting for its response (its messages arrive as they come), except an
// initialize, which is waited for: its response's session id becomes the
// user's current session. A > line that is no request (a notification, a
// cancellation, a client's response) is waited for, so that it has taken
// effect before the next line is sent, as over stdio. A > line's response
// must have status 200 (messages) or 202 (none). Write a case so that it
// holds on every transport it runs on: wait for an event (a message)
// before sending what depends on it, and have a script report progress
// once at the most (how often notifications go out is the reporter's unit
// tests' business). Every server reports the version "conformance" and
// holds back the progress notifications between a call's first and its
// last for an hour, so that the messages do not depend on the clock.
//
// Expected messages compare as JSON values, not bytes: members in any
// order, numbers by value. In an expected message,
//
//   - the string "$any" matches any value (the member must be present);
//   - the member "$more": true in an object lets the actual object have
//     members the expected one does not name;
//   - a string "$json TEXT" matches a string that holds JSON equal to TEXT
//     (a tool's text content, say).
//
// Besides the blocks, every case checks that a request's progress
// notifications come before its response, and, once the input has ended
// (stdio: the input is closed and Serve has returned; HTTP: every response
// has been read), that no message came beyond those expected: a request
// that must not be answered (a notification, a cancelled call, a client's
// response) is checked by expecting nothing for it.

// caseConfig is a case's server settings (-- config --).
type caseConfig struct {
	MaxConcurrent  int   `json:"max_concurrent"`
	MaxScriptBytes int64 `json:"max_script_bytes"`
	QueueWaitMS    int   `json:"queue_wait_ms"`
	// Stateless, when set, runs the case over HTTP in that mode only.
	Stateless *bool `json:"stateless"`
	// Skip skips the case on the transports it names (stdio, http,
	// http-stateless), saying why: a known defect, to be fixed.
	Skip map[string]string `json:"skip"`
}

// conformanceCase is one archive.
type conformanceCase struct {
	name   string
	file   string
	dir    string // both, stdio or http
	config caseConfig
	steps  []caseStep
}

type stepKind int

const (
	stepSend stepKind = iota
	stepExpect
	stepHTTP
	stepWaitTracked
	stepWaitIdle
	stepEnd
)

// caseStep is one step of an exchange.
type caseStep struct {
	kind stepKind
	line int // in the exchange, for messages
	// send: the message; http: the body.
	text string
	// send: no line end after it (stdio).
	noNewline bool
	// expect: the block's messages.
	expect []expected
	// http: the request.
	method  string
	options map[string]string
	// wait-tracked: the count.
	tracked int
}

// expected is one expected message, on lines line to last of its file.
type expected struct {
	line, last int
	text       string
	value      any
}

// received is one message from the server.
type received struct {
	raw   string
	value any
}

func TestConformance(t *testing.T) {
	var cases []*conformanceCase
	for _, dir := range []string{"both", "stdio", "http"} {
		files, err := filepath.Glob(filepath.Join("testdata", "conformance", dir, "*.txtar"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			c, err := loadCase(file)
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			c.dir = dir
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no case in testdata/conformance")
	}
	rt := testruntime.New(t, luau.Config{PoolSize: 2})
	issuer := authtest.NewIssuer(t, authtest.Options{})
	authn, err := auth.New(context.Background(), auth.Config{
		Issuer: issuer.URL, Audience: issuer.Audience, HTTPClient: issuer.Client(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(authn.Close)
	env := &caseEnv{rt: rt, issuer: issuer, auth: authn, tokens: map[string]string{}}

	// mcp-go keeps its stdio session in a package variable: the cases run
	// one at a time.
	for _, c := range cases {
		for _, over := range c.transports() {
			t.Run(c.dir+"/"+c.name+"/"+over, func(t *testing.T) {
				runCase(t, env, c, over)
			})
		}
	}
}

// transports are the transports a case runs over.
func (c *conformanceCase) transports() []string {
	var http []string
	switch {
	case c.config.Stateless == nil:
		http = []string{"http", "http-stateless"}
	case *c.config.Stateless:
		http = []string{"http-stateless"}
	default:
		http = []string{"http"}
	}
	switch c.dir {
	case "stdio":
		return []string{"stdio"}
	case "http":
		return http
	}
	return append([]string{"stdio"}, http...)
}

// loadCase reads one archive.
func loadCase(file string) (*conformanceCase, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	a := txtar.Parse(data)
	c := &conformanceCase{name: strings.TrimSuffix(filepath.Base(file), ".txtar"), file: file}
	if len(bytes.TrimSpace(a.Comment)) == 0 {
		return nil, errors.New("no comment: say what the case checks")
	}
	seen := map[string]bool{}
	for _, f := range a.Files {
		if seen[f.Name] {
			return nil, fmt.Errorf("two files named %q", f.Name)
		}
		seen[f.Name] = true
		switch f.Name {
		case "config":
			dec := json.NewDecoder(bytes.NewReader(f.Data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c.config); err != nil {
				return nil, fmt.Errorf("config: %w", err)
			}
		case "exchange":
			// Lines are numbered in the file, not in the section.
			first := 1 + bytes.Count(data[:bytes.Index(data, []byte("\n-- exchange --\n"))+1], []byte("\n")) + 1
			if c.steps, err = parseExchange(string(f.Data), first); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown file %q (want config, exchange)", f.Name)
		}
	}
	if len(c.steps) == 0 {
		return nil, errors.New("no exchange")
	}
	for over := range c.config.Skip {
		if !slices.Contains([]string{"stdio", "http", "http-stateless"}, over) {
			return nil, fmt.Errorf("config: skip names %q, no transport", over)
		}
	}
	return c, nil
}

var repeatMacro = regexp.MustCompile(`\$\{repeat (\d+) ([^}]*)\}`)

// expand replaces the macros of a line to send.
func expand(s string) string {
	return repeatMacro.ReplaceAllStringFunc(s, func(m string) string {
		sub := repeatMacro.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[1])
		return strings.Repeat(sub[2], n)
	})
}

// parseExchange reads the steps of an exchange whose first line is line
// first of its file.
func parseExchange(text string, first int) ([]caseStep, error) {
	// Join the continuation lines first, keeping each line's number.
	type srcLine struct {
		n, last int
		text    string
	}
	var lines []srcLine
	for i, l := range strings.Split(text, "\n") {
		if (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) && len(lines) > 0 && strings.TrimSpace(l) != "" {
			lines[len(lines)-1].text += strings.TrimSpace(l)
			lines[len(lines)-1].last = first + i
			continue
		}
		lines = append(lines, srcLine{first + i, first + i, l})
	}
	var steps []caseStep
	block := -1 // the index of the open expect step
	for _, l := range lines {
		s := l.text
		switch {
		case strings.TrimSpace(s) == "":
			block = -1
		case strings.HasPrefix(s, "#"):
		case strings.HasPrefix(s, ">> "):
			block = -1
			steps = append(steps, caseStep{kind: stepSend, line: l.n, text: expand(strings.TrimPrefix(s, ">> ")), noNewline: true})
		case s == ">" || strings.HasPrefix(s, "> "):
			block = -1
			steps = append(steps, caseStep{kind: stepSend, line: l.n, text: expand(strings.TrimPrefix(strings.TrimPrefix(s, ">"), " "))})
		case s == "end":
			block = -1
			steps = append(steps, caseStep{kind: stepEnd, line: l.n})
		case strings.HasPrefix(s, "< "):
			v, err := decodeJSON(strings.TrimPrefix(s, "< "))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", l.n, err)
			}
			if block < 0 {
				steps = append(steps, caseStep{kind: stepExpect, line: l.n})
				block = len(steps) - 1
			}
			steps[block].expect = append(steps[block].expect, expected{line: l.n, last: l.last, text: strings.TrimPrefix(s, "< "), value: v})
		case s == "wait-idle":
			block = -1
			steps = append(steps, caseStep{kind: stepWaitIdle, line: l.n})
		case strings.HasPrefix(s, "wait-tracked "):
			block = -1
			n, err := strconv.Atoi(strings.TrimPrefix(s, "wait-tracked "))
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", l.n, err)
			}
			steps = append(steps, caseStep{kind: stepWaitTracked, line: l.n, tracked: n})
		case strings.HasPrefix(s, "POST") || strings.HasPrefix(s, "DELETE") || strings.HasPrefix(s, "GET"):
			block = -1
			st, err := parseHTTPStep(s)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", l.n, err)
			}
			st.line = l.n
			steps = append(steps, st)
		default:
			return nil, fmt.Errorf("line %d: %q is no step", l.n, s)
		}
	}
	return steps, nil
}

// parseHTTPStep reads `METHOD [key=value ...] [BODY]`.
func parseHTTPStep(s string) (caseStep, error) {
	st := caseStep{kind: stepHTTP, options: map[string]string{}}
	st.method, s, _ = strings.Cut(s, " ")
	for s = strings.TrimSpace(s); s != "" && !strings.HasPrefix(s, "{") && !strings.HasPrefix(s, "["); s = strings.TrimSpace(s) {
		var word string
		word, s, _ = strings.Cut(s, " ")
		key, value, _ := strings.Cut(word, "=")
		switch key {
		case "user", "session", "status", "content", "bind", "nosession", "async":
		default:
			return st, fmt.Errorf("unknown option %q", key)
		}
		st.options[key] = value
	}
	st.text = expand(s)
	return st, nil
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// matchJSON tells whether got is the value want describes (see above).
func matchJSON(want, got any) bool {
	switch w := want.(type) {
	case string:
		if w == "$any" {
			return true
		}
		g, ok := got.(string)
		if text, isJSON := strings.CutPrefix(w, "$json "); isJSON && ok {
			wv, err1 := decodeJSON(text)
			gv, err2 := decodeJSON(g)
			return err1 == nil && err2 == nil && matchJSON(wv, gv)
		}
		return ok && g == w
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return false
		}
		wf, _, err1 := big.ParseFloat(string(w), 10, 200, big.ToNearestEven)
		gf, _, err2 := big.ParseFloat(string(g), 10, 200, big.ToNearestEven)
		return err1 == nil && err2 == nil && wf.Cmp(gf) == 0
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		more := w["$more"] == true
		for k, wv := range w {
			if k == "$more" {
				continue
			}
			gv, ok := g[k]
			if !ok || !matchJSON(wv, gv) {
				return false
			}
		}
		if !more {
			for k := range g {
				if _, ok := w[k]; !ok {
					return false
				}
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !matchJSON(w[i], g[i]) {
				return false
			}
		}
		return true
	default: // bool, nil
		return want == got
	}
}

// caseEnv is what every case shares.
type caseEnv struct {
	rt     *luau.Runtime
	issuer *authtest.Issuer
	auth   *auth.Authenticator

	mu     sync.Mutex
	tokens map[string]string // by user
}

func (e *caseEnv) token(t *testing.T, user string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if tok, ok := e.tokens[user]; ok {
		return tok
	}
	tok := e.issuer.Token(t, "ES256", user)
	e.tokens[user] = tok
	return tok
}

// newServer returns the Server of a case.
func (e *caseEnv) newServer(t *testing.T, cfg caseConfig, log io.Writer) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Config{
		Runtime:        e.rt,
		Limits:         luau.Limits{Timeout: 30 * time.Second},
		MaxConcurrent:  cfg.MaxConcurrent,
		MaxScriptBytes: cfg.MaxScriptBytes,
		QueueWait:      time.Duration(cfg.QueueWaitMS) * time.Millisecond,
		// The first notification goes at once, the last at the end: the
		// notifications a script's progress() calls make do not depend on
		// the clock.
		ProgressInterval: time.Hour,
		Version:          "conformance",
		ErrorLog:         log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// caseConn is a case's connection to its server.
type caseConn interface {
	// send sends one message, with a line end over stdio unless
	// noNewline.
	send(t *testing.T, text string, noNewline bool)
	// do makes one HTTP request (an HTTP step).
	do(t *testing.T, st caseStep)
	// waitTracked waits until the server tracks n tools/call handlers.
	waitTracked(t *testing.T, n int)
	// server is the server the connection reaches.
	server() *mcpserver.Server
	// end ends the input and returns once the server has sent all it
	// will; the messages channel is then closed.
	end(t *testing.T)
	messages() <-chan received
}

// watchdog bounds every wait of a case: a server that does not answer
// fails the case instead of hanging it. It is no timing target.
const watchdog = time.Minute

func runCase(t *testing.T, env *caseEnv, c *conformanceCase, over string) {
	if why, ok := c.config.Skip[over]; ok {
		t.Skip(why)
	}
	log := &syncbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	var conn caseConn
	if over == "stdio" {
		conn = startStdioConn(t, env, c.config, log)
	} else {
		conn = startHTTPConn(t, env, c.config, over == "http-stateless", log)
	}
	var upd *updater
	if *update && over == c.transports()[0] {
		upd = &updater{}
	}
	order := &progressOrder{}
	var history []string // what the server sent, for failures
	check := func(m received) {
		history = append(history, m.raw)
		if err := order.received(m.value); err != nil {
			t.Errorf("%v: %s", err, m.raw)
		}
	}
	msgs := conn.messages()
	for _, st := range c.steps {
		switch st.kind {
		case stepSend:
			order.sent(st.text)
			conn.send(t, st.text, st.noNewline)
		case stepHTTP:
			if over == "stdio" {
				t.Fatalf("line %d: an HTTP request in a case that runs over stdio", st.line)
			}
			order.sent(st.text)
			conn.do(t, st)
		case stepWaitTracked:
			conn.waitTracked(t, st.tracked)
		case stepWaitIdle:
			waitCalls(t, conn.server(), "no call", func(n int) bool { return n == 0 })
		case stepEnd:
			conn.end(t)
		case stepExpect:
			got := receive(t, msgs, st, check, &history, upd != nil)
			if upd != nil {
				upd.block(st.expect, got)
			}
		}
	}
	conn.end(t)
	for m := range msgs {
		check(m)
		if upd != nil {
			upd.extra(m)
			continue
		}
		t.Errorf("after the last expected message the server sent %s", m.raw)
	}
	if upd != nil {
		upd.write(t, c)
	}
}

// receive reads the messages of a block of expected ones, in any order,
// each matched against the expected ones still left; it fails the case at
// the first message that matches none, or when one does not come. When
// updating, it instead returns what came: at least as many messages as
// expected, until each expected one is matched or has a message with its
// id, or until nothing more comes for updateWait.
func receive(t *testing.T, msgs <-chan received, st caseStep, check func(received), history *[]string, updating bool) []received {
	left := slices.Clone(st.expect)
	var got []received
	for !updating && len(left) > 0 || updating && !settled(st.expect, got) {
		wait := watchdog
		if updating {
			wait = updateWait
		}
		var m received
		var ok bool
		select {
		case m, ok = <-msgs:
		case <-time.After(wait):
			if updating {
				return got
			}
			t.Fatalf("line %d: no message for %s; still expected:\n%s\nreceived so far:\n%s",
				st.line, watchdog, describe(left), strings.Join(*history, "\n"))
		}
		if !ok {
			if updating {
				return got
			}
			t.Fatalf("line %d: the server sent nothing more; still expected:\n%s\nreceived so far:\n%s",
				st.line, describe(left), strings.Join(*history, "\n"))
		}
		check(m)
		got = append(got, m)
		i := slices.IndexFunc(left, func(e expected) bool { return matchJSON(e.value, m.value) })
		switch {
		case i >= 0:
			left = slices.Delete(left, i, i+1)
		case !updating:
			t.Fatalf("line %d: the server sent\n  %s\nwhich matches none of the messages expected now:\n%s",
				st.line, m.raw, describe(left))
		}
	}
	return got
}

func describe(left []expected) string {
	var b strings.Builder
	for _, e := range left {
		fmt.Fprintf(&b, "  (line %d) %s\n", e.line, e.text)
	}
	return b.String()
}

// progressOrder checks that no progress notification comes after the
// response of the request whose token it carries.
type progressOrder struct {
	owner    map[string]string // progress token → request id (JSON)
	answered map[string]bool   // request ids (JSON) answered
}

func (o *progressOrder) sent(text string) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(text), &m) != nil || m.ID == nil || m.Params.Meta.ProgressToken == nil {
		return
	}
	if o.owner == nil {
		o.owner, o.answered = map[string]string{}, map[string]bool{}
	}
	id := canonical(m.ID)
	o.owner[canonical(m.Params.Meta.ProgressToken)] = id
	delete(o.answered, id)
}

func (o *progressOrder) received(v any) error {
	m, _ := v.(map[string]any)
	if m == nil || m["jsonrpc"] != "2.0" {
		return errors.New("not a JSON-RPC 2.0 object")
	}
	if m["method"] == "notifications/progress" {
		params, _ := m["params"].(map[string]any)
		token, _ := json.Marshal(params["progressToken"])
		if id, ok := o.owner[canonical(token)]; ok && o.answered[id] {
			return fmt.Errorf("a progress notification after the response to request %s", id)
		}
		return nil
	}
	if id, ok := m["id"]; ok && m["method"] == nil && o.answered != nil {
		b, _ := json.Marshal(id)
		o.answered[canonical(b)] = true
	}
	return nil
}

// canonical writes a JSON value the one way (numbers by value).
func canonical(raw []byte) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// parseMessage reads a message the server sent.
func parseMessage(t *testing.T, raw []byte) received {
	v, err := decodeJSON(string(raw))
	if err != nil {
		t.Errorf("the server sent something that is not JSON: %q", raw)
	}
	return received{raw: string(raw), value: v}
}

// stdioConn is Server.Serve on pipes.
type stdioConn struct {
	srv    *mcpserver.Server
	ended  bool
	in     *io.PipeWriter
	out    chan received
	served chan error
	stop   context.CancelFunc
}

func startStdioConn(t *testing.T, env *caseEnv, cfg caseConfig, log io.Writer) *stdioConn {
	srv := env.newServer(t, cfg, log)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, stop := context.WithCancel(context.Background())
	c := &stdioConn{srv: srv, in: inW, out: make(chan received, 1000), served: make(chan error, 1), stop: stop}
	go func() {
		err := srv.Serve(ctx, inR, outW)
		outW.Close()
		c.served <- err
	}()
	go func() {
		defer close(c.out)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			c.out <- parseMessage(t, slices.Clone(sc.Bytes()))
		}
	}()
	t.Cleanup(func() {
		stop()
		inW.Close()
		outR.Close()
	})
	return c
}

func (c *stdioConn) send(t *testing.T, text string, noNewline bool) {
	t.Helper()
	if !noNewline {
		text += "\n"
	}
	if _, err := io.WriteString(c.in, text); err != nil {
		t.Fatalf("writing to the server: %v", err)
	}
}

func (c *stdioConn) do(t *testing.T, _ caseStep) { t.Fatal("an HTTP request over stdio") }

func (c *stdioConn) waitTracked(*testing.T, int) {}

func (c *stdioConn) end(t *testing.T) {
	t.Helper()
	if c.ended {
		return
	}
	c.ended = true
	c.in.Close()
	select {
	case err := <-c.served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(watchdog):
		c.stop()
		t.Fatalf("Serve did not return within %s of the end of its input", watchdog)
	}
}

func (c *stdioConn) messages() <-chan received { return c.out }

// httpConn is the streamable HTTP transport as the hosted mode serves it.
type httpConn struct {
	env       *caseEnv
	srv       *mcpserver.Server
	url       string
	stateless bool
	out       chan received
	pending   sync.WaitGroup
	ended     bool

	mu       sync.Mutex
	current  map[string]string // user → session id
	named    map[string]string // name → session id
	failures []string
}

func startHTTPConn(t *testing.T, env *caseEnv, cfg caseConfig, stateless bool, log io.Writer) *httpConn {
	srv := env.newServer(t, cfg, log)
	tr, err := srv.HTTPHandler(mcpserver.HTTPConfig{Stateless: stateless, Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := hosted.New(hosted.Config{MCP: tr, Auth: env.auth, MaxBodyBytes: srv.MaxRequestBytes()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	return &httpConn{env: env, srv: srv, url: ts.URL + hosted.PathMCP, stateless: stateless,
		out: make(chan received, 1000), current: map[string]string{}, named: map[string]string{}}
}

// request makes one request and returns its response, headers read.
func (c *httpConn) request(t *testing.T, method, user, session, body string) (*http.Response, error) {
	req, err := http.NewRequest(method, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+c.env.token(t, user))
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	return http.DefaultClient.Do(req)
}

// session returns the session a request of user names: opt is a name
// bound earlier, none, a literal id, or "" for the user's current one.
func (c *httpConn) session(user, opt string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case opt == "":
		return c.current[user]
	case opt == "none":
		return ""
	case c.named[opt] != "":
		return c.named[opt]
	}
	return opt
}

func (c *httpConn) bind(user, name, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.current[user] = id
	if name != "" {
		c.named[name] = id
	}
}

func (c *httpConn) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

// read sends the messages of a response body to the case: its JSON, or
// its events.
func (c *httpConn) read(t *testing.T, resp *http.Response) {
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			c.fail("reading a response: %v", err)
		}
		if len(bytes.TrimSpace(body)) > 0 {
			c.out <- parseMessage(t, bytes.TrimSpace(body))
		}
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			c.out <- parseMessage(t, slices.Clone(data))
		}
	}
}

// waitFor tells whether a > line is waited for over HTTP: an initialize,
// or a message that is no request.
func waitFor(text string) bool {
	var m struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal([]byte(text), &m) != nil {
		return false
	}
	return m.Method == "initialize" || m.Method == "" || m.ID == nil
}

func (c *httpConn) send(t *testing.T, text string, _ bool) {
	const user = "alice"
	session := c.session(user, "")
	if waitFor(text) {
		c.post(t, user, session, text)
		return
	}
	c.pending.Go(func() { c.post(t, user, session, text) })
}

// post sends a > line and reads its response.
func (c *httpConn) post(t *testing.T, user, session, text string) {
	resp, err := c.request(t, http.MethodPost, user, session, text)
	if err != nil {
		c.fail("POST %.80s: %v", text, err)
		return
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.bind(user, "", id)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		c.read(t, resp)
	case http.StatusAccepted:
		if body, _ := io.ReadAll(resp.Body); len(body) > 0 {
			c.fail("POST %.80s: 202 with a body %q", text, body)
		}
	default:
		body, _ := io.ReadAll(resp.Body)
		c.fail("POST %.80s: status %d (%s), want 200 or 202", text, resp.StatusCode, bytes.TrimSpace(body))
	}
}

func (c *httpConn) do(t *testing.T, st caseStep) {
	t.Helper()
	if _, ok := st.options["async"]; ok {
		// The case's steps are shared by its runs: a copy of the options.
		st.options = maps.Clone(st.options)
		delete(st.options, "async")
		c.pending.Go(func() {
			if err := c.exchange(t, st); err != nil {
				c.fail("line %d: %v", st.line, err)
			}
		})
		return
	}
	if err := c.exchange(t, st); err != nil {
		t.Fatalf("line %d: %v", st.line, err)
	}
}

// exchange makes the request of an HTTP step and checks its response. It
// may run on its own goroutine: it returns what fails.
func (c *httpConn) exchange(t *testing.T, st caseStep) error {
	user := st.options["user"]
	if user == "" {
		user = "alice"
	}
	resp, err := c.request(t, st.method, user, c.session(user, st.options["session"]), st.text)
	if err != nil {
		return fmt.Errorf("%s: %w", st.method, err)
	}
	defer resp.Body.Close()
	want := http.StatusOK
	if s := st.options["status"]; s != "" {
		want, _ = strconv.Atoi(s)
	}
	if resp.StatusCode != want {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: status %d (%s), want %d", st.method, resp.StatusCode, bytes.TrimSpace(body), want)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	_, nosession := st.options["nosession"]
	switch name, bind := st.options["bind"]; {
	case bind && id == "":
		return errors.New("no Mcp-Session-Id in the response")
	case nosession && id != "":
		return fmt.Errorf("the response has a session id (%s)", id)
	case id != "":
		c.bind(user, name, id)
	}
	if want := st.options["content"]; want != "" {
		contentType := resp.Header.Get("Content-Type")
		got := "empty"
		switch {
		case strings.HasPrefix(contentType, "text/event-stream"):
			got = "sse"
		case strings.HasPrefix(contentType, "application/json"):
			got = "json"
		case contentType != "":
			got = contentType
		}
		if got != want {
			return fmt.Errorf("content %s, want %s", got, want)
		}
		if got == "empty" {
			if body, _ := io.ReadAll(resp.Body); len(body) > 0 {
				return fmt.Errorf("a body (%q) without a content type", body)
			}
		}
	}
	if want == http.StatusAccepted {
		if body, _ := io.ReadAll(resp.Body); len(body) > 0 {
			return fmt.Errorf("202 with a body: %q", body)
		}
	}
	if want == http.StatusOK || strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		c.read(t, resp)
	}
	return nil
}

func (c *httpConn) waitTracked(t *testing.T, n int) {
	t.Helper()
	waitCalls(t, c.srv, fmt.Sprintf("%d calls", n), func(tracked int) bool { return tracked >= n })
}

func (c *httpConn) server() *mcpserver.Server { return c.srv }

func (c *stdioConn) server() *mcpserver.Server { return c.srv }

// waitCalls waits until the number of tools/call requests srv holds (its
// table: waiting for a slot or running) satisfies done, for at most
// watchdog, woken by each change of its table. A request leaves the table
// after its handler has returned, so "no call" also means every slot is
// free again.
func waitCalls(t *testing.T, srv *mcpserver.Server, what string, done func(tracked int) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchdog)
	defer cancel()
	if err := srv.WaitTrackedCalls(ctx, done); err != nil {
		t.Fatalf("the server never held %s: %v", what, err)
	}
}

func (c *httpConn) end(t *testing.T) {
	t.Helper()
	if c.ended {
		return
	}
	c.ended = true
	done := make(chan struct{})
	go func() {
		c.pending.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(watchdog):
		t.Fatalf("the responses did not end within %s", watchdog)
	}
	close(c.out)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.failures {
		t.Error(f)
	}
	c.failures = nil
}

func (c *httpConn) messages() <-chan received { return c.out }

// TestConformanceMatching checks the driver's comparisons, so that a case
// can fail: each pair is an expected message and one that must (or must
// not) match it.
func TestConformanceMatching(t *testing.T) {
	for _, c := range []struct {
		want, got string
		match     bool
	}{
		{`{"id":1,"result":{}}`, `{"result":{},"id":1.0}`, true},
		{`{"id":1,"result":{}}`, `{"id":2,"result":{}}`, false},
		{`{"id":1,"result":{}}`, `{"id":"1","result":{}}`, false},
		{`{"id":1,"result":{}}`, `{"id":1,"result":{},"extra":true}`, false},
		{`{"id":1,"result":{},"$more":true}`, `{"id":1,"result":{},"extra":true}`, true},
		{`{"id":1,"result":{"$more":true},"$more":true}`, `{"id":1}`, false},
		{`{"a":"$any"}`, `{"a":[1,{"b":null}]}`, true},
		{`{"a":"$any"}`, `{}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":[1,2]}`, `{"a":[1,2,3]}`, false},
		{`{"a":null}`, `{"a":false}`, false},
		{`{"a":1e400}`, `{"a":1e400}`, true},
		{`{"a":1e400}`, `{"a":1e401}`, false},
		{`{"t":"$json {\"x\":[1,2]}"}`, `{"t":"{ \"x\": [1, 2.0] }"}`, true},
		{`{"t":"$json {\"x\":[1,2]}"}`, `{"t":"{\"x\":[1,3]}"}`, false},
		{`{"t":"$json {\"x\":1}"}`, `{"t":"not json"}`, false},
	} {
		want, err := decodeJSON(c.want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeJSON(c.got)
		if err != nil {
			t.Fatal(err)
		}
		if matchJSON(want, got) != c.match {
			t.Errorf("%s against %s: match %v, want %v", c.want, c.got, !c.match, c.match)
		}
	}

	// A progress notification after its request's response is an error.
	var o progressOrder
	o.sent(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"}}}`)
	for i, m := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
		`{"jsonrpc":"2.0","id":1.0,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2}}`,
	} {
		v, _ := decodeJSON(m)
		if err := o.received(v); (err != nil) != (i == 2) {
			t.Errorf("message %d: %v", i, err)
		}
	}
}
