package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/internal/testfile"
)

func TestMCPServersConfig(t *testing.T) {
	path := testfile.Temp(t, "toolscript.toml", `
[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "${DATA}/in"]
env = { HOME = "/tmp", KEY = "${SECRET}" }
cwd = "work"
timeout = "5s"
stderr = "logs/files.log"

[mcp_servers.quiet]
command = "quiet-server"
stderr = "discard"

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${REMOTE_TOKEN}" }
`)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATA": "/data", "SECRET": "s3", "REMOTE_TOKEN": "tok"}
	cfg, err := ResolveSDK(f, SDKFlags{MCP: []string{`shell=my-server --name "a b" it\'s`, "web=http://127.0.0.1:9/mcp"}}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServerSettings{
		{Name: "files", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/data/in"},
			Env: map[string]string{"HOME": "/tmp", "KEY": "s3"}, Dir: filepath.Join(filepath.Dir(path), "work"), Timeout: 5 * time.Second,
			Secrets: redact.Secrets("/data", "s3"), Stderr: filepath.Join(filepath.Dir(path), "logs", "files.log")},
		{Name: "quiet", Command: "quiet-server", Stderr: StderrDiscard},
		{Name: "remote", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer tok"},
			Secrets: redact.Secrets("tok", "Bearer tok")},
		{Name: "shell", Command: "my-server", Args: []string{"--name", "a b", "it's"}},
		{Name: "web", URL: "http://127.0.0.1:9/mcp"},
	}
	if !reflect.DeepEqual(cfg.Upstreams, want) {
		t.Errorf("upstreams\n%+v\nwant\n%+v", cfg.Upstreams, want)
	}
	// A missing variable is an error naming the key and the variable, and
	// never a value.
	delete(env, "REMOTE_TOKEN")
	if _, err := ResolveSDK(f, SDKFlags{}, func(k string) string { return env[k] }); err == nil ||
		err.Error() != "mcp_servers.remote.headers.Authorization: the environment variable REMOTE_TOKEN is not set or empty" {
		t.Errorf("err %v", err)
	}
}

func TestMCPServersConfigErrors(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"[mcp_servers.x]\n", "mcp_servers.x: give command (a stdio server) or url"},
		{"[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h\"\n", "give command or url, not both"},
		{"[mcp_servers.x]\nurl = \"ftp://h\"\n", "mcp_servers.x.url: \"ftp://h\" is not an http(s) URL"},
		{"[mcp_servers.x]\nurl = \"http://h\"\nstderr = \"discard\"\n", "mcp_servers.x: stderr goes with command, not with url"},
		{"[mcp_servers.x]\nurl = \"http://h\"\nargs = [\"a\"]\n", "args, env and cwd go with command"},
		{"[mcp_servers.x]\ncommand = \"a\"\nheaders = { A = \"b\" }\n", "headers go with url"},
		{"[mcp_servers.x]\ncommand = \"a\"\ntimeout = \"soon\"\n", "mcp_servers.x.timeout"},
		{"[mcp_servers.\"a-b\"]\ncommand = \"a\"\n", "is not a Luau identifier"},
		{"[mcp_servers.x]\ncommand = \"a\"\nbogus = 1\n", "unknown key"},
		{"[mcp_servers.x]\ncommand = \"a\"\n[apis.x]\nspec = \"s.yaml\"\n", "[apis.x] has the same name"},
	} {
		_, err := Load(testfile.Temp(t, "toolscript.toml", tc.config))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.config, err, tc.want)
		}
	}
}

func TestParseMCPFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want MCPServerSettings
		err  string
	}{
		{in: "ev=npx -y @modelcontextprotocol/server-everything", want: MCPServerSettings{Name: "ev", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}}},
		{in: `py=python "my server.py" --flag='x y'`, want: MCPServerSettings{Name: "py", Command: "python", Args: []string{"my server.py", "--flag=x y"}}},
		{in: "r=https://mcp.example/mcp?a=b c", want: MCPServerSettings{Name: "r", URL: "https://mcp.example/mcp?a=b c"}},
		{in: "noequals", err: "want NAME=COMMAND ARGS... or NAME=URL"},
		{in: "x=", err: "want NAME=COMMAND"},
		{in: "a-b=cmd", err: "is not a Luau identifier"},
		{in: `x=cmd "unclosed`, err: "--mcp x=cmd \"unclosed"},
	} {
		got, err := ParseMCPFlag(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseMCPFlag(f *testing.F) {
	for _, s := range []string{"ev=npx -y x", `p=a "b c"`, "r=http://h", "x=", "=", `x=a\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseMCPFlag(s)
		if err != nil {
			return
		}
		if (c.Command == "") == (c.URL == "") {
			t.Fatalf("%q: exactly one of command and url: %+v", s, c)
		}
	})
}

func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"Bearer ${T}", "${", "${}", "$T", "a${T}b${T}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := expandVars(s, func(string) string { return "v" })
		if err == nil && strings.Contains(out, "${") && !strings.Contains(s, "${${") {
			// Only a value could bring "${" back, and values are "v".
			t.Fatalf("%q expanded to %q", s, out)
		}
	})
}
