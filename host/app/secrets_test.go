package app_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testecho"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// secretField is a configuration field that reads a value from the
// environment (or a credential derived from one): the value must show in
// no sink.
type secretField struct {
	field string // where the configuration takes it
	env   string // the variable ("" for a derived credential)
	value string
}

// TestSecretsReachNoSink walks every configuration field that can hold a
// ${VAR} (command, args, cwd, url, headers, env, base_url, auth) and the
// other credentials (auth_env, a URL's user and password), serves them
// hosted with real MCP servers (server-everything, pyserver.py over stdio
// and HTTP, a server that cannot start, one that is not there) and a real
// echo API, and proves that no sink shows any of the values: a script's
// result and errors (a tool that prints its server's environment, one
// that echoes its server's argv, an API and an MCP server that echo the
// credentials sent), the docs tools and resources, /readyz, /healthz and
// /metrics, a dry run's effect list and a plan run, the traces of
// record_dir, and standard error (the logs, the access log, the servers'
// lines). No variable the configuration reads reaches another server's
// environment either.
func TestSecretsReachNoSink(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	python := testupstreams.Python(t)
	everything := testupstreams.Everything(t)
	remoteURL, _ := testupstreams.PythonHTTP(t, 0, false)
	echo := testecho.New(t)
	echoURL, err := url.Parse(echo.URL)
	if err != nil {
		t.Fatal(err)
	}
	fields := []secretField{
		{"mcp_servers.broken.command", "TSLEAK_COMMAND", python[0]},
		{"mcp_servers.broken.args", "TSLEAK_FAIL_TOKEN", "failtoken-3j8w5k"},
		{"mcp_servers.broken.cwd", "TSLEAK_CWD", t.TempDir()},
		{"mcp_servers.py.args", "TSLEAK_ARG_TOKEN", "ghp_argtoken5h2k9x"},
		{"mcp_servers.py.env", "TSLEAK_ENV_TOKEN", "envtoken-77q1zr"},
		{"mcp_servers.down.url", "TSLEAK_URL_TOKEN", "urltoken-0p4m2s"},
		{"mcp_servers.down.headers", "TSLEAK_HEADER_TOKEN", "hdrtoken-9c2v6n"},
		{"mcp_servers.remote.url (password)", "TSLEAK_URL_PASSWORD", "urlpass-6t1r8e"},
		{"mcp_servers.remote.headers", "TSLEAK_REMOTE_TOKEN", "remotetoken-5y7u"},
		{"apis.echo.base_url (password)", "TSLEAK_BASIC_PASSWORD", "basicpass-2e6d4f"},
		{"apis.echo2.base_url", "TSLEAK_BASE_HOST", echoURL.Host},
		{"apis.echo2.auth", "TSLEAK_APIKEY", "apikey-8n3b1c"},
		{"apis.echo3.auth_env", "TSLEAK_AUTH_ENV", "authenv-4x9q2w"},
		{"effects.state_key_env", "TSLEAK_STATE_KEY", "5a1e4c9d0b3f7a2e6c8d1f4b9e0a3c7d5f2b8e1a4c6d9f0b3e7a2c5d8f1b4e6a"},
		{"effects.previous_state_keys", "TSLEAK_PREVIOUS_STATE_KEY", "7c2e9a4f1b8d3e6a0c5f2b9d4e7a1c8f3b6e0d5a2c9f4b7e1a8d3c6f0b5e2a9d"},
	}
	for _, f := range fields {
		t.Setenv(f.env, f.value)
	}
	// The trace exporter's headers: its receiver's credential.
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=otelkey-3k9v2m,x-other=otel%20key%2F7")
	fields = append(fields,
		secretField{"OTEL_EXPORTER_OTLP_HEADERS", "", "otelkey-3k9v2m"},
		secretField{"OTEL_EXPORTER_OTLP_HEADERS (decoded)", "", "otel key/7"},
		secretField{"mcp_servers.remote.url (as basic auth)", "", base64.StdEncoding.EncodeToString([]byte("u:urlpass-6t1r8e"))},
		secretField{"apis.echo.base_url (as basic auth)", "", base64.StdEncoding.EncodeToString([]byte("svc:basicpass-2e6d4f"))},
	)
	recordDir := t.TempDir()
	text := fmt.Sprintf(`
[effects]
record_dir = %q
state_key_env = "TSLEAK_STATE_KEY"
previous_state_keys = ["${TSLEAK_PREVIOUS_STATE_KEY}"]

[apis.echo]
spec = %q
base_url = "http://svc:${TSLEAK_BASIC_PASSWORD}@%s"
unsafe = ["anything"]

[apis.echo2]
spec = %q
base_url = "http://${TSLEAK_BASE_HOST}"
auth = { type = "api_key", name = "X-Key", in = "header", value = "${TSLEAK_APIKEY}" }
unsafe = ["anything"]

[apis.echo3]
spec = %q
base_url = %q
auth_env = "TSLEAK_AUTH_ENV"

[mcp_servers.ev]
command = %q
args = [%q, "stdio"]

[mcp_servers.py]
command = %q
args = [%q, "--token", "${TSLEAK_ARG_TOKEN}"]
env = { PY_TOKEN = "${TSLEAK_ENV_TOKEN}" }

[mcp_servers.broken]
command = "${TSLEAK_COMMAND}"
args = ["-c", "import sys; sys.exit(3)", "--token", "${TSLEAK_FAIL_TOKEN}"]
cwd = "${TSLEAK_CWD}"

[mcp_servers.down]
url = "http://127.0.0.1:%d/mcp?token=${TSLEAK_URL_TOKEN}"
headers = { Authorization = "Bearer ${TSLEAK_HEADER_TOKEN}" }

[mcp_servers.remote]
url = %q
headers = { X-Remote-Token = "${TSLEAK_REMOTE_TOKEN}" }
`, recordDir, testecho.SpecPath(), echoURL.Host, testecho.SpecPath(), testecho.SpecPath(), echo.URL,
		everything[0], everything[1], python[0], python[1], testupstreams.FreePort(t),
		strings.Replace(remoteURL, "http://", "http://u:${TSLEAK_URL_PASSWORD}@", 1))
	file := configFile(t, text)
	h := serveHosted(t, file)
	base, c := h.base, h.client

	sinks := map[string]string{}
	call := func(sink, tool string, args map[string]any) string {
		res, err := c.CallTool(testwait.Context(t), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
		if err != nil {
			sinks[sink] = err.Error()
			return err.Error()
		}
		b, _ := json.Marshal(res)
		sinks[sink] = string(b)
		return string(b)
	}
	// The script: a tool printing its server's environment (on another
	// server than the one ${VAR} configured), one echoing its argv, and an
	// API and an MCP server echoing the credentials they were sent.
	got := call("script result", mcpserver.ToolName, map[string]any{"script": `
		return {
			env = sdk.ev.get_env(),
			argv = sdk.py.argv(),
			remote = sdk.remote.echo_headers(),
			echo = sdk.echo.anything({}),
			echo2 = sdk.echo2.anything({}),
			echo3 = sdk.echo3.anything({}),
		}`})
	if !strings.Contains(got, "--token [REDACTED]") || !strings.Contains(strings.ToLower(got), "authorization") {
		t.Errorf("the script did not get the echoes redacted: %s", got)
	}
	if strings.Contains(got, "TSLEAK_") || strings.Contains(got, "OTEL_EXPORTER_OTLP_HEADERS") {
		t.Errorf("a server's environment holds a variable the configuration read: %s", got)
	}
	call("script error (a server that cannot start)", mcpserver.ToolName, map[string]any{"script": `return sdk.broken.anything()`})
	call("script error (a server that is not there)", mcpserver.ToolName, map[string]any{"script": `return sdk.down.anything()`})
	call("script error (pcall)", mcpserver.ToolName, map[string]any{"script": `
		local ok, err = pcall(function() return sdk.echo.status({code = 401}) end)
		error(tostring(err))`})
	dry := call("dry run", mcpserver.ToolName, map[string]any{"script": `
		sdk.echo.anything({pad = "a"})
		sdk.echo2.anything({pad = "b"})
		return "done"`, "dry_run": true})
	var dryRes struct {
		StructuredContent struct {
			Effects []json.RawMessage `json:"effects"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(dry), &dryRes); err != nil || len(dryRes.StructuredContent.Effects) != 2 {
		t.Errorf("the dry run's effects: %v %s", err, dry)
	} else {
		call("plan run", mcpserver.ToolName, map[string]any{"script": `
			sdk.echo.anything({pad = "a"})
			sdk.echo2.anything({pad = "b"})
			return "done"`, "plan": dryRes.StructuredContent.Effects})
	}
	call("list_apis", mcpserver.ToolListAPIs, map[string]any{})
	for _, api := range []string{"broken", "down", "echo", "echo2", "py", "remote"} {
		call("list_functions "+api, mcpserver.ToolListFunctions, map[string]any{"api": api})
	}
	call("get_function_docs", mcpserver.ToolGetFunctionDocs, map[string]any{"name": "sdk.echo2.anything"})
	call("search_docs", mcpserver.ToolSearchDocs, map[string]any{"query": "token echo"})
	if res, err := c.ListResources(testwait.Context(t), mcp.ListResourcesRequest{}); err == nil {
		b, _ := json.Marshal(res)
		sinks["resources/list"] = string(b)
		for _, r := range res.Resources {
			read, err := c.ReadResource(testwait.Context(t), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: r.URI}})
			if err == nil {
				b, _ := json.Marshal(read)
				sinks["resources/read "+r.URI] = string(b)
			}
		}
	} else {
		t.Errorf("resources/list: %v", err)
	}
	for _, p := range []string{"/readyz", "/healthz", "/metrics"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sinks[p] = strconv.Itoa(resp.StatusCode) + " " + string(body)
	}
	if !strings.HasPrefix(sinks["/readyz"], "503 ") {
		t.Errorf("/readyz with servers down: %s", sinks["/readyz"])
	}

	stderr := h.stop()
	sinks["standard error (logs, access log, servers' lines)"] = stderr
	// Hosted traces are kept in a directory per user.
	traces := 0
	err = filepath.WalkDir(recordDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		traces++
		sinks["trace "+filepath.Base(p)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if traces == 0 {
		t.Error("no execution was recorded")
	}
	if !strings.Contains(sinks["standard error (logs, access log, servers' lines)"], "argv: ") {
		t.Errorf("the argv the server printed did not reach standard error:\n%s", stderr)
	}

	for _, f := range fields {
		for sink, text := range sinks {
			if strings.Contains(strings.ToLower(text), strings.ToLower(f.value)) {
				t.Errorf("%s (%s): its value shows in %s:\n%s", f.field, f.env, sink, excerpt(text, f.value))
			}
		}
	}
}

// excerpt is the part of text around the first value.
func excerpt(text, value string) string {
	i := strings.Index(strings.ToLower(text), strings.ToLower(value))
	return text[max(0, i-200):min(len(text), i+len(value)+100)]
}

// TestRunRedactsItsResult: what `run` shows of a script (its value, logs,
// error, the names of the files it touched and its warnings) passes the
// configuration's redactor, as serve's messages do. A script never holds
// a secret, but an API may echo one back, and the script may then put it
// anywhere.
func TestRunRedactsItsResult(t *testing.T) {
	const token = "run-token-4k2j9x"
	t.Setenv("TSLEAK_RUN_TOKEN", token)
	api := testapi.New(t)
	file := petsConfig(t, api, "")
	file.APIs["pets"] = func(a config.API) config.API { a.AuthEnv = "TSLEAK_RUN_TOKEN"; return a }(file.APIs["pets"])
	withIO, err := config.Resolve(file, config.Flags{IODir: t.TempDir()}, os.Getenv, config.Run)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		source   string
		settings config.Settings
		dryRun   bool
	}{
		{`return {v = "` + token + `"}`, settings(t, file, config.Run), false},
		{`print("` + token + `") return 1`, settings(t, file, config.Run), false},
		{`error("` + token + `")`, settings(t, file, config.Run), false},
		{`io.open("` + token + `.txt", "w"):write("x"):close() return 1`, withIO, false},
		{`io.open("` + token + `.txt", "w"):write("x"):close() return 1`, withIO, true},
	} {
		res, err := app.Run(testwait.Context(t), app.RunConfig{
			File: file, Settings: c.settings, SDK: app.SDKOptions{Stderr: io.Discard}, Source: []byte(c.source), DryRun: c.dryRun})
		if err != nil {
			t.Fatal(err)
		}
		if b := res.JSON(); strings.Contains(string(b), token) || !strings.Contains(string(b), "[REDACTED]") {
			t.Errorf("%s: %s", c.source, b)
		}
		if c.dryRun && (len(res.Effects) != 1 || res.Effects[0].Path != "[REDACTED].txt" || len(res.FilesTouched) != 1 || !res.FilesTouched[0].DryRun) {
			t.Errorf("the redacted dry run lost its effect or its files: %s", res.JSON())
		}
	}
}
