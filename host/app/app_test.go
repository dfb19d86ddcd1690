package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testwait"
)

// petsConfig writes a configuration file naming the test API at api and
// loads it.
func petsConfig(t *testing.T, api *testapi.Server, extra string) *config.File {
	t.Helper()
	return configFile(t, extra+"\n[apis.pets]\nspec = "+strconv.Quote(testapi.SpecPath())+"\nbase_url = "+strconv.Quote(api.URL)+"\n")
}

func settings(t *testing.T, file *config.File, mode config.Mode) config.Settings {
	t.Helper()
	s, err := config.Resolve(file, config.Flags{NoIO: true}, os.Getenv, mode)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenSDK: no APIs is no client; a spec that cannot be loaded is a
// UsageError naming the API; a spec that loads gives its functions.
func TestOpenSDK(t *testing.T) {
	api := testapi.New(t)
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	cases := []struct {
		name      string
		file      *config.File
		flags     config.SDKFlags
		wantNil   bool
		wantUsage string
	}{
		{name: "none", file: &config.File{}, wantNil: true},
		{name: "missing spec", file: &config.File{}, flags: config.SDKFlags{APIs: []string{"ghost=" + missing}}, wantUsage: "ghost"},
		{name: "bad auth flag", file: &config.File{}, flags: config.SDKFlags{APIs: []string{"pets=" + testapi.SpecPath()}, Auth: []string{"pets:TOOLSCRIPT_APP_TEST_UNSET"}},
			wantUsage: "TOOLSCRIPT_APP_TEST_UNSET"},
		{name: "pets", file: petsConfig(t, api, "")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client, err := app.OpenSDK(testwait.Context(t), c.file, app.SDKOptions{Flags: c.flags, Stderr: io.Discard})
			if c.wantUsage != "" {
				var u *app.UsageError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), c.wantUsage) {
					t.Fatalf("error %v, want a UsageError naming %q", err, c.wantUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.wantNil {
				if client != nil {
					t.Fatal("a client with no APIs")
				}
				return
			}
			defer client.Close()
			if n := len(client.Catalog().APIs); n != 1 {
				t.Fatalf("%d APIs, want 1", n)
			}
		})
	}
}

// TestRun: a script calls the API through the sdk and its prints reach
// OnLog; its failure is in the result, not the error; an sdk that cannot
// be opened is a UsageError and runs nothing.
func TestRun(t *testing.T) {
	api := testapi.New(t)
	file := petsConfig(t, api, "")
	var logs []string
	res, err := app.Run(testwait.Context(t), app.RunConfig{
		File: file, Settings: settings(t, file, config.Run), SDK: app.SDKOptions{Stderr: io.Discard},
		Source: []byte(`print("hi", ...) return sdk.get_pet({petId = 7}).id`), Args: []string{"there"},
		OnLog: func(line string) { logs = append(logs, line) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || string(res.Value) != "7" {
		t.Fatalf("result %s, error %+v, want 7", res.Value, res.Error)
	}
	if len(logs) != 1 || logs[0] != "hi\tthere" {
		t.Errorf("logs %q, want [\"hi\\tthere\"]", logs)
	}
	if api.Requests.Load() != 1 {
		t.Errorf("the API got %d requests, want 1", api.Requests.Load())
	}

	res, err = app.Run(testwait.Context(t), app.RunConfig{File: &config.File{}, Settings: settings(t, &config.File{}, config.Run), Source: []byte(`error("boom")`)})
	if err != nil || res.Error == nil || !strings.Contains(res.Error.Message, "boom") {
		t.Fatalf("result %+v, error %v, want the script's error in the result", res, err)
	}

	_, err = app.Run(testwait.Context(t), app.RunConfig{File: &config.File{}, Settings: settings(t, &config.File{}, config.Run),
		SDK:    app.SDKOptions{Flags: config.SDKFlags{APIs: []string{"ghost=" + filepath.Join(t.TempDir(), "none.yaml")}}, Stderr: io.Discard},
		Source: []byte(`return 1`)})
	if !app.IsUsage(err) {
		t.Fatalf("error %v, want a UsageError", err)
	}
}

// execute calls execute_script and returns its structured content.
func execute(t *testing.T, c *client.Client, script string) string {
	t.Helper()
	res := testclient.Call(t, c, mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"script": script}})
	return string(testclient.Structured[json.RawMessage](t, res))
}

// TestServeStdio: the stdio server answers over the streams it is given,
// with the sdk wired to every call, says it is ready on Stderr, and
// returns when the client closes its end.
func TestServeStdio(t *testing.T) {
	api := testapi.New(t)
	file := petsConfig(t, api, "")
	c, stderr, stop := startStdio(t, file)
	if got := execute(t, c, `return sdk.get_pet({petId = 7}).id`); !strings.Contains(got, `"result":7`) {
		t.Errorf("structured content %s, want result 7", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if !strings.Contains(stderr.String(), "toolscript serve: ready (io directory: off; 4 scripts at once)") {
		t.Errorf("stderr %q, want the ready line", stderr.String())
	}
}

// startStdio serves file on stdio over pipes with an initialized client;
// stop closes the client's end and returns Serve's error.
func startStdio(t *testing.T, file *config.File) (c *client.Client, stderr *syncbuf.Buffer, stop func() error) {
	t.Helper()
	server, err := config.ResolveServer(file, config.ServerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	stderr = &syncbuf.Buffer{}
	c, stop = serveStdio(t, app.ServeConfig{
		File: file, Server: server, Settings: settings(t, file, config.Stdio),
		SDK: app.SDKOptions{Stderr: io.Discard}, Version: "test", Stderr: stderr,
	})
	return c, stderr, stop
}

// serveStdio runs app.Serve with cfg on stdio over pipes, and returns an
// initialized client of it; stop closes the client's end and returns
// Serve's error (the test's end stops it too).
func serveStdio(t *testing.T, cfg app.ServeConfig) (c *client.Client, stop func() error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cfg.Stdin, cfg.Stdout = inR, outW
	ctx, cancel := context.WithCancel(testwait.Context(t))
	served := make(chan error, 1)
	go func() {
		served <- app.Serve(ctx, cfg)
		outW.Close()
	}()
	stop = sync.OnceValue(func() error {
		inW.Close()
		return <-served
	})
	t.Cleanup(func() { cancel(); stop() })
	c = client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	if _, err := testclient.Start(t, c, mcp.LATEST_PROTOCOL_VERSION); err != nil {
		t.Fatal(err)
	}
	return c, stop
}

// TestServeHosted: the hosted server on a listener serves execute_script
// with the sdk, counts the upstream call in its metrics, logs JSON lines,
// and returns nil once ctx ends.
func TestServeHosted(t *testing.T) {
	api := testapi.New(t)
	file := petsConfig(t, api, "")
	h := serveHosted(t, file)
	base, c := h.base, h.client
	if got := execute(t, c, `return sdk.get_pet({petId = 7}).id`); !strings.Contains(got, `"result":7`) {
		t.Errorf("structured content %s, want result 7", got)
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `toolscript_upstream_calls_total{source="pets",status="2xx"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("metrics lack %s:\n%s", want, body)
	}
	stderr := h.stop()
	if !strings.Contains(stderr, `"msg":"ready"`) || !strings.Contains(stderr, `"version":"test"`) {
		t.Errorf("stderr %q, want the JSON ready line", stderr)
	}
}

// hostedServer is Serve in the hosted mode on a loopback listener, with an
// initialized client.
type hostedServer struct {
	base   string // http://host:port
	client *client.Client
	// stop ends Serve, checks it returned nil, and returns what it wrote
	// on standard error.
	stop func() string
}

func serveHosted(t *testing.T, file *config.File) *hostedServer {
	t.Helper()
	base, stderr, stop := startHosted(t, file)
	c := hostedClient(t, base, "")
	return &hostedServer{base: base, client: c, stop: func() string {
		if err := stop(); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		return stderr.String()
	}}
}

// hostedClient is an initialized client of the hosted server at base,
// sending token as its bearer token (none when empty); the test's end
// closes it.
func hostedClient(t *testing.T, base, token string) *client.Client {
	t.Helper()
	c, err := testclient.HTTP(t, base+"/mcp", token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startHosted serves file in the hosted mode on a loopback listener, with
// no client; stop ends it and returns Serve's error (the test's end stops
// it too).
func startHosted(t *testing.T, file *config.File) (base string, stderr *syncbuf.Buffer, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server, err := config.ResolveServer(file, config.ServerFlags{HTTP: ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	stderr = &syncbuf.Buffer{}
	stop = serveListening(t, app.ServeConfig{
		File: file, Server: server, Settings: settings(t, file, config.Hosted),
		SDK: app.SDKOptions{Stderr: io.Discard}, Version: "test", Stderr: stderr, Listener: ln,
	})
	return "http://" + ln.Addr().String(), stderr, stop
}

// serveListening runs app.Serve with cfg (its Listener set); stop ends it
// and returns Serve's error (the test's end stops it too).
func serveListening(t *testing.T, cfg app.ServeConfig) (stop func() error) {
	ctx, cancel := context.WithCancel(testwait.Context(t))
	served := make(chan error, 1)
	go func() { served <- app.Serve(ctx, cfg) }()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-served
	})
	t.Cleanup(func() { stop() })
	return stop
}

// TestServeUsage: settings the hosted mode refuses and an sdk that cannot
// be opened are UsageErrors, before anything is served.
func TestServeUsage(t *testing.T) {
	cases := []struct {
		name   string
		http   string
		hosted config.HostedFlags
		sdk    config.SDKFlags
		record string
		want   string
	}{
		{name: "tls cert without key", http: "127.0.0.1:0", hosted: config.HostedFlags{TLSCert: "cert.pem"}, want: "tls"},
		{name: "public without auth", http: "0.0.0.0:0", want: "auth"},
		{name: "missing spec", sdk: config.SDKFlags{APIs: []string{"ghost=" + filepath.Join(t.TempDir(), "none.yaml")}}, want: "ghost"},
		{name: "unusable record dir", record: filepath.Join(notADir(t), "traces"), want: "effects.record_dir"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := &config.File{Effects: config.Effects{RecordDir: c.record}}
			server, err := config.ResolveServer(file, config.ServerFlags{HTTP: c.http})
			if err != nil {
				t.Fatal(err)
			}
			err = app.Serve(testwait.Context(t), app.ServeConfig{
				File: file, Server: server, Settings: settings(t, file, server.Mode()), Hosted: c.hosted,
				SDK: app.SDKOptions{Flags: c.sdk, Stderr: io.Discard}, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
			})
			if !app.IsUsage(err) || !strings.Contains(strings.ToLower(err.Error()), c.want) {
				t.Fatalf("error %v, want a UsageError about %q", err, c.want)
			}
		})
	}
}

// notADir is a file, where a directory is wanted.
func notADir(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLint: sdk calls are checked against the API's functions: a call to
// one it has is clean, a call to one it lacks is an error.
func TestLint(t *testing.T) {
	api := testapi.New(t)
	file := petsConfig(t, api, "")
	cases := []struct {
		name   string
		source string
		errors int
	}{
		{"known function", `return sdk.get_pet({petId = 7}).id`, 0},
		{"unknown function", `return sdk.no_such_function({})`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			report, err := app.Lint(testwait.Context(t), app.LintConfig{File: file, SDK: app.SDKOptions{Stderr: io.Discard},
				Sources: []lint.Source{{Name: "script.luau", Text: []byte(c.source)}}})
			if err != nil {
				t.Fatal(err)
			}
			if errs, _ := report.Count(); errs != c.errors {
				t.Errorf("%d errors, want %d: %+v", errs, c.errors, report)
			}
		})
	}
}

// TestDocs: the docs of the configured API; none configured is a
// UsageError.
func TestDocs(t *testing.T) {
	api := testapi.New(t)
	d, err := app.Docs(testwait.Context(t), petsConfig(t, api, ""), app.SDKOptions{Stderr: io.Discard}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if apis := d.ListAPIs(); len(apis) != 1 || apis[0].Name != "pets" {
		t.Errorf("APIs %+v, want pets", apis)
	}
	if _, err := app.Docs(testwait.Context(t), &config.File{}, app.SDKOptions{}, io.Discard); !app.IsUsage(err) || !errors.Is(err, app.ErrNoAPIs) {
		t.Errorf("error %v, want ErrNoAPIs as a UsageError", err)
	}
}
