package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestExamples runs the examples of README.md and docs/*.md as a reader
// pastes them, from the code blocks themselves, so that a page cannot show
// an example that does not work. A block is an example when the line
// before its fence is a marker, `<!-- example: KIND ARGS -->`; the examples
// of a page run in the page's order, as a reader follows it, and the
// servers a page starts run until its end. The kinds:
//
//   - shell: the lines run in bash from the repository's root, with the
//     test's toolscript first on PATH; a line `# text` is output the lines
//     before it print (`...` stands for anything), and `# (... left out)`
//     says which lines they print the page does not show; a `go test` line
//     is left out (this test is part of that run);
//   - server: one command that keeps running (a pet store, an issuer,
//     `toolscript serve`); the test waits for the line saying it listens;
//   - file PATH: the block is the file, byte for byte;
//   - luau petstore|fs|io: a script that runs with the pet store's API, the
//     filesystem MCP server on examples/files, or the io library;
//   - sdk-docs NAME: every line of the block is in `toolscript sdk docs NAME`;
//   - config run|lint|petstore: a toolscript.toml with which `run` or `lint`
//     of examples/hello.luau succeeds, or `run` of examples/petstore/pets.luau;
//   - mcp-config: an MCP client's configuration; the test starts the server
//     it names and calls execute_script through it;
//   - python, javascript: an MCP client program, run with TOKEN set against
//     the page's `toolscript serve` (when it reads TOKEN), or one that
//     starts `toolscript serve` itself over stdio; it prints what its
//     comment says.
//
// What a reader cannot have, the test replaces, always the same way: the
// documented loopback addresses become free ports (a reader's machine has
// them free; a test machine may not), `npx -y PACKAGE` becomes the copy
// tests/mcp-upstreams installed (no download in tests), and
// `go run ./examples/X` is given its documented default address explicitly
// (checked against the program's own -h) so that the address can be
// replaced.
func TestExamples(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	seen := 0
	for _, page := range pages {
		blocks := exampleBlocks(t, page)
		if len(blocks) == 0 {
			continue
		}
		seen += len(blocks)
		name, _ := filepath.Rel(root, page)
		t.Run(name, func(t *testing.T) {
			s := newExampleSession(t, root)
			for _, b := range blocks {
				t.Run(fmt.Sprintf("line%d_%s", b.line, b.kind), func(t *testing.T) { s.run(t, b) })
			}
		})
	}
	if seen == 0 {
		t.Fatal("no examples found in README.md and docs/*.md")
	}
}

// exampleBlock is one marked code block of a page.
type exampleBlock struct {
	kind string   // the marker's first word
	args []string // its other words
	line int      // the marker's line, from 1
	text string   // the block's content, without its fences
}

var exampleMarker = regexp.MustCompile(`^<!-- example: (.+?) -->$`)

// exampleBlocks returns the marked blocks of a page, failing the test on a
// marker that is not followed by a code block.
func exampleBlocks(t *testing.T, path string) []exampleBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var blocks []exampleBlock
	for i, line := range lines {
		m := exampleMarker.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		words := strings.Fields(m[1])
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s:%d: the marker %q is not followed by a code block", path, i+1, line)
		}
		end := i + 2
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		if end == len(lines) {
			t.Fatalf("%s:%d: the code block never ends", path, i+2)
		}
		blocks = append(blocks, exampleBlock{kind: words[0], args: words[1:], line: i + 1,
			text: strings.Join(lines[i+2:end], "\n") + "\n"})
	}
	return blocks
}

// The loopback addresses the pages document, and the example programs'
// flags whose defaults they are.
const (
	docPetstore = "127.0.0.1:8090"
	docIssuer   = "127.0.0.1:9000"
	docServe    = "127.0.0.1:8080"
)

var exampleServerFlags = map[string][]string{
	"./examples/petstore": {"-addr", docPetstore},
	"./examples/issuer":   {"-addr", docIssuer, "-audience", "http://" + docServe},
}

// exampleSession is what the examples of one page share: the servers they
// started and the addresses that stand for the documented ones.
type exampleSession struct {
	page  *testing.T // the page's test: the servers stop when it ends
	root  string
	bin   string // a directory holding toolscript, first on PATH
	addrs *strings.Replacer
	serve string // the test's address for docServe
	iss   string // the test's address for docIssuer
	pet   string // the test's address for docPetstore
	tmp   string // the examples' TMPDIR (mktemp -d), removed with the page's test
}

func newExampleSession(t *testing.T, root string) *exampleSession {
	s := &exampleSession{page: t, root: root, bin: filepath.Dir(binary), tmp: t.TempDir()}
	if filepath.Base(binary) != "toolscript" {
		t.Fatalf("the test binary %s is not named toolscript", binary)
	}
	port := func() string { return fmt.Sprintf("127.0.0.1:%d", testupstreams.FreePort(t)) }
	s.pet, s.iss, s.serve = port(), port(), port()
	s.addrs = strings.NewReplacer(docPetstore, s.pet, docIssuer, s.iss, docServe, s.serve)
	return s
}

func (s *exampleSession) run(t *testing.T, b exampleBlock) {
	switch b.kind {
	case "shell":
		s.shell(t, b.text)
	case "server":
		s.server(t, b.text)
	case "file":
		s.file(t, b)
	case "luau":
		s.luau(t, b)
	case "sdk-docs":
		s.sdkDocs(t, b)
	case "config":
		s.config(t, b)
	case "mcp-config":
		s.mcpConfig(t, b.text)
	case "python", "javascript":
		s.client(t, b)
	default:
		t.Fatalf("line %d: unknown kind of example %q", b.line, b.kind)
	}
}

// env is the environment the examples run in: the test's toolscript first
// on PATH, no io directory from the caller's environment, and a temporary
// directory of the test's own (what an example's mktemp makes goes with it,
// and what an example's `go install` installs: GOBIN).
func (s *exampleSession) env(extra ...string) []string {
	env := []string{"PATH=" + s.bin + string(os.PathListSeparator) + os.Getenv("PATH"), "TOOLSCRIPT_IO_DIR=", "TMPDIR=" + s.tmp,
		"GOBIN=" + filepath.Join(s.tmp, "gobin")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "TOOLSCRIPT_IO_DIR=") && !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "GOBIN=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// paste is what the test runs for a block's text: the documented addresses
// replaced, the npm servers replaced by their installed copies.
func (s *exampleSession) paste(t *testing.T, text string) string {
	text = s.addrs.Replace(text)
	const fs = "npx -y @modelcontextprotocol/server-filesystem"
	if strings.Contains(text, fs) {
		installed := testupstreams.Filesystem(t, "")[:2]
		for _, a := range installed {
			if strings.ContainsAny(a, `'" \`) {
				t.Fatalf("the installed server's path needs quoting in a shell: %s", a)
			}
		}
		text = strings.ReplaceAll(text, fs, strings.Join(installed, " "))
	}
	if strings.Contains(text, "npx ") {
		t.Fatalf("the example runs npx with a package the test does not know:\n%s", text)
	}
	return text
}

// shellLines joins a shell block's continued lines and splits off the
// output lines it shows (`# text`) and the `go test` lines.
func shellLines(text string) (script string, want []string) {
	var lines []string
	cur := ""
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if c, ok := strings.CutSuffix(line, "\\"); ok {
			cur += c
			continue
		}
		lines = append(lines, cur+line)
		cur = ""
	}
	var run []string
	for _, line := range lines {
		switch {
		case isOutputNote(line):
		case strings.HasPrefix(line, "# "):
			want = append(want, strings.TrimPrefix(line, "# "))
		case strings.HasPrefix(line, "go test "):
		default:
			run = append(run, line)
		}
	}
	return strings.Join(run, "\n") + "\n", want
}

func (s *exampleSession) shell(t *testing.T, text string) {
	script, want := shellLines(s.paste(t, text))
	needProgram(t, "bash")
	if strings.Contains(script, "curl ") {
		needProgram(t, "curl")
	}
	cmd := exec.Command("bash", "-c", "set -eo pipefail\n"+script)
	cmd.Dir = s.root
	cmd.Env = s.env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s\nstdout:\n%s\nstderr:\n%s", err, script, out.String(), errOut.String())
	}
	if !outputShows(out.String(), want) {
		t.Fatalf("the output does not show what the page says:\n%s\nwant, in order:\n%s\ngot:\n%s",
			script, strings.Join(want, "\n"), out.String())
	}
}

// isOutputNote reports whether a shell block's line is a note on the
// output shown, such as `# (log lines left out)`, not output itself.
func isOutputNote(line string) bool {
	return strings.HasPrefix(line, "# (") && strings.HasSuffix(line, "left out)")
}

// outputShows reports whether the lines of out include every line of want,
// in order, where `...` in a wanted line stands for anything.
func outputShows(out string, want []string) bool {
	lines := strings.Split(out, "\n")
	i := 0
	for _, w := range want {
		for i < len(lines) && !lineMatches(lines[i], w) {
			i++
		}
		if i == len(lines) {
			return false
		}
		i++
	}
	return true
}

func lineMatches(line, want string) bool {
	parts := strings.Split(want, "...")
	if len(parts) == 1 {
		return line == want
	}
	if !strings.HasPrefix(line, parts[0]) || !strings.HasSuffix(line, parts[len(parts)-1]) {
		return false
	}
	rest := line[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

var serverReady = regexp.MustCompile(`listening on |"msg":"ready"`)

// server starts a block's one command and waits for the line saying it
// listens; the command runs until the page's test ends.
func (s *exampleSession) server(t *testing.T, text string) {
	script, _ := shellLines(text)
	script = strings.TrimSpace(script)
	if strings.Contains(script, "\n") {
		t.Fatalf("a server block holds one command:\n%s", script)
	}
	for pkg, flags := range exampleServerFlags {
		prefix := "go run " + pkg
		if script == prefix || strings.HasPrefix(script, prefix+" ") {
			s.checkDefaults(t, pkg, flags)
			script = strings.Replace(script, prefix, prefix+" "+strings.Join(flags, " "), 1)
		}
	}
	script = s.paste(t, script)
	needProgram(t, "bash")
	cmd := exec.Command("bash", "-c", "exec "+script)
	cmd.Dir = s.root
	cmd.Env = s.env()
	testupstreams.InOwnGroup(cmd)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	// The server outlives this block: it is stopped when the page ends.
	stop := func() {
		testupstreams.StopGroup(cmd)
		<-exited
	}
	ready := make(chan struct{})
	output := &syncbuf.Buffer{}
	go func() {
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(output, sc.Text())
			if !signalled && serverReady.MatchString(sc.Text()) {
				close(ready)
				signalled = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case <-ready:
		s.page.Cleanup(stop)
	case err := <-exited:
		t.Fatalf("%s exited before it listened: %v\n%s", script, err, output.String())
	case <-time.After(5 * time.Minute):
		stop()
		t.Fatalf("%s did not say it listens within 5 minutes\n%s", script, output.String())
	}
}

// checkDefaults checks that the flags the test gives an example program are
// its defaults, so that the command the page shows does the same.
func (s *exampleSession) checkDefaults(t *testing.T, pkg string, flags []string) {
	cmd := exec.Command("go", "run", pkg, "-h")
	cmd.Dir = s.root
	out, _ := cmd.CombinedOutput() // the usage, whatever the status -h exits with
	for i := 0; i+1 < len(flags); i += 2 {
		want := fmt.Sprintf("%s string\n", flags[i])
		def := fmt.Sprintf("(default %q)", flags[i+1])
		at := strings.Index(string(out), "  "+want)
		if at < 0 || !strings.Contains(strings.SplitN(string(out)[at+len(want)+2:], "\n  -", 2)[0], def) {
			t.Fatalf("go run %s -h does not show %s %s:\n%s", pkg, flags[i], def, out)
		}
	}
}

func (s *exampleSession) file(t *testing.T, b exampleBlock) {
	if len(b.args) != 1 {
		t.Fatalf("line %d: a file example names one file", b.line)
	}
	data, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(b.args[0])))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != b.text {
		t.Fatalf("the page shows\n%s\nbut %s holds\n%s", b.text, b.args[0], data)
	}
}

// toolscript runs the test's toolscript from the repository's root.
func (s *exampleSession) toolscript(t *testing.T, dir string, env []string, args ...string) string {
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = s.env(env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("toolscript %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

func (s *exampleSession) petstoreArgs() []string {
	return []string{"--api", "petstore=http://" + s.pet + "/openapi.yaml", "--auth", "petstore:PETSTORE_TOKEN"}
}

func (s *exampleSession) luau(t *testing.T, b exampleBlock) {
	args := []string{"run", "--json"}
	var env []string
	for _, a := range b.args {
		switch a {
		case "petstore":
			args = append(args, s.petstoreArgs()...)
			env = append(env, "PETSTORE_TOKEN=any-token")
		case "fs":
			args = append(args, "--mcp", "fs="+testupstreams.Shell(testupstreams.Filesystem(t, "examples/files")))
		case "io":
			args = append(args, "--io-dir", t.TempDir())
		default:
			t.Fatalf("line %d: unknown luau example argument %q", b.line, a)
		}
	}
	script := filepath.Join(t.TempDir(), "example.luau")
	if err := os.WriteFile(script, []byte(b.text), 0o600); err != nil {
		t.Fatal(err)
	}
	out := s.toolscript(t, s.root, env, append(args, script)...)
	var res execResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if res.Error != nil {
		t.Fatalf("the example fails: %s: %s\n%s", res.Error.Kind, res.Error.Message, b.text)
	}
}

func (s *exampleSession) sdkDocs(t *testing.T, b exampleBlock) {
	if len(b.args) != 1 {
		t.Fatalf("line %d: an sdk-docs example names one function", b.line)
	}
	out := s.toolscript(t, s.root, nil, append(append([]string{"sdk", "docs"}, s.petstoreArgs()[:2]...), b.args[0])...)
	lines := strings.Split(out, "\n")
	for _, want := range strings.Split(strings.TrimSpace(b.text), "\n") {
		if !containsLine(lines, want) {
			t.Errorf("toolscript sdk docs %s does not print %q:\n%s", b.args[0], want, out)
		}
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func (s *exampleSession) config(t *testing.T, b exampleBlock) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "toolscript.toml"), []byte(s.addrs.Replace(b.text)), 0o600); err != nil {
		t.Fatal(err)
	}
	hello := filepath.Join(s.root, "examples", "hello.luau")
	switch strings.Join(b.args, " ") {
	case "run":
		out := s.toolscript(t, dir, nil, "run", "--json", hello)
		var res execResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Error != nil {
			t.Fatalf("run with the configuration: %s (%v)", out, err)
		}
	case "lint":
		s.toolscript(t, dir, nil, "lint", hello)
	case "petstore":
		pets := filepath.Join(s.root, "examples", "petstore", "pets.luau")
		out := s.toolscript(t, dir, []string{"PETSTORE_TOKEN=any-token"}, "run", "--json", pets)
		var res execResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Error != nil || !jsonEqual(string(res.Result), `{"first":"Rex","second":"Tom"}`) {
			t.Fatalf("pets.luau with the configuration: %s (%v)", out, err)
		}
	default:
		t.Fatalf("line %d: a config example is `config run`, `config lint` or `config petstore`", b.line)
	}
}

// mcpConfig starts the server an MCP client's configuration names, as the
// client would (its command, arguments and environment), with the test's
// toolscript for the documented path and a directory of the test's for the
// io directory, and has a script write a file there.
func (s *exampleSession) mcpConfig(t *testing.T, text string) {
	var conf struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(text), &conf); err != nil {
		t.Fatalf("the configuration is not JSON: %v\n%s", err, text)
	}
	srv, ok := conf.MCPServers["toolscript"]
	if !ok || filepath.Base(srv.Command) != "toolscript" || !filepath.IsAbs(srv.Command) {
		t.Fatalf("the configuration names no toolscript server by an absolute path: %+v", conf)
	}
	ioDir := filepath.Join(t.TempDir(), "toolscript-files")
	var env []string
	for k, v := range srv.Env {
		if k == "TOOLSCRIPT_IO_DIR" {
			if !filepath.IsAbs(v) {
				t.Fatalf("TOOLSCRIPT_IO_DIR %q is not absolute", v)
			}
			v = ioDir
		}
		env = append(env, k+"="+v)
	}
	stderr := &syncbuf.Buffer{}
	tr := transport.NewStdioWithOptions(binary, nil, srv.Args,
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Dir = "/" // a GUI client's working directory
			cmd.Env = s.env(env...)
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(stderr))
	c := client.NewClient(tr)
	if _, err := testclient.Start(t, c, ""); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	defer c.Close() // the server ends here, not with the test
	ctx := testwait.Context(t)
	_, res := callScript(t, ctx, c, map[string]any{"script": `io.open("hello.txt", "w"):write("hi"):close() return "ok"`})
	if res.Error != nil {
		t.Fatalf("execute_script: %+v\n%s", res.Error, stderr.String())
	}
	if data, err := os.ReadFile(filepath.Join(ioDir, "hello.txt")); err != nil || string(data) != "hi" {
		t.Fatalf("the file the script wrote is not in the configured io directory: %q, %v", data, err)
	}
}

// client runs an MCP client program of the page against the page's
// `toolscript serve`, with a token from its issuer, and checks that it
// prints what the comment on its printing line says.
func (s *exampleSession) client(t *testing.T, b exampleBlock) {
	text := s.paste(t, b.text)
	dir := t.TempDir()
	var cmd *exec.Cmd
	var comment string
	switch b.kind {
	case "python":
		python := filepath.Join(testupstreams.Dir(), ".venv", "bin", "python")
		needInstalled(t, python, "the MCP Python SDK")
		path := filepath.Join(dir, "client.py")
		testfile.Write(t, path, text)
		cmd, comment = exec.Command(python, path), "  # "
	case "javascript":
		modules := filepath.Join(testupstreams.Dir(), "node_modules")
		needProgram(t, "node")
		needInstalled(t, filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json"), "the MCP TypeScript SDK")
		if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "client.mjs")
		testfile.Write(t, path, text)
		cmd, comment = exec.Command("node", path), "; // "
	}
	var want []string
	for _, line := range strings.Split(text, "\n") {
		if _, c, ok := strings.Cut(line, comment); ok && (strings.Contains(line, "print(") || strings.Contains(line, "console.log(")) {
			want = append(want, c)
		}
	}
	if len(want) != 1 {
		t.Fatalf("line %d: the client's printing line says nothing of what it prints (a comment %q)", b.line, comment)
	}
	cmd.Dir = dir
	cmd.Env = s.env()
	if usesToken.MatchString(text) { // the client calls the page's hosted server
		cmd.Env = s.env("TOKEN=" + s.token(t))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !outputShows(string(out), want) {
		t.Fatalf("the client prints\n%s\nnot %q", out, want[0])
	}
}

// usesToken finds a client that reads TOKEN (not PETSTORE_TOKEN).
var usesToken = regexp.MustCompile(`(^|[^A-Za-z0-9_])TOKEN([^A-Za-z0-9_]|$)`)

// token asks the page's issuer for a token.
func (s *exampleSession) token(t *testing.T) string {
	resp, err := http.Get("http://" + s.iss + "/token")
	if err != nil {
		t.Fatalf("the page's issuer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a token from the issuer: %s %s %v", resp.Status, body, err)
	}
	return strings.TrimSpace(string(body))
}

// needInstalled skips the test when path is absent, saying what installs
// it; in CI it fails.
func needInstalled(t *testing.T, path, what string) {
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (%v); run: %s", what, err, testupstreams.Install)
		}
		t.Skipf("%s is not installed (%v); run: %s", what, err, testupstreams.Install)
	}
}

// needProgram skips the test when program is not on PATH; in CI it fails.
func needProgram(t *testing.T, program string) {
	if _, err := exec.LookPath(program); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the example needs %s on PATH: %v", program, err)
		}
		t.Skipf("the example needs %s on PATH (%v): install it to run it", program, err)
	}
}
