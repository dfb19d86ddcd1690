// Package testupstreams locates and starts the real MCP servers the tests
// call as upstreams: @modelcontextprotocol/server-everything,
// @modelcontextprotocol/server-filesystem and
// @modelcontextprotocol/server-memory (npm, pinned by
// tests/mcp-upstreams/package-lock.json) and tests/mcp-upstreams/pyserver.py
// (the official MCP Python SDK, pinned by tests/e2e/python/requirements.txt,
// in the virtual environment tests/mcp-upstreams/.venv). .ci/run installs
// them; outside CI a missing server skips the test with the command that
// installs it, in CI it fails.
package testupstreams

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Install is the command that installs the servers.
const Install = "npm ci --prefix tests/mcp-upstreams && python3 -m venv tests/mcp-upstreams/.venv && tests/mcp-upstreams/.venv/bin/pip install -r tests/e2e/python/requirements.txt"

// Dir is tests/mcp-upstreams.
func Dir() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "tests", "mcp-upstreams")
}

func need(tb testing.TB, path string) string {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("an upstream MCP server is missing in CI: %v (%s)", err, Install)
		}
		tb.Skipf("the upstream MCP servers are not installed; run: %s (%v)", Install, err)
	}
	return path
}

// node is the Node.js that runs the npm servers: a machine without it
// skips (or, in CI, fails) the test saying what to install.
func node(tb testing.TB) string {
	tb.Helper()
	_, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("Node.js is missing in CI: %v", err)
		}
		tb.Skipf("the npm MCP servers need Node.js (node on PATH), then: %s (%v)", Install, err)
	}
	return "node"
}

// Everything is the command line of server-everything over stdio.
func Everything(tb testing.TB) []string {
	tb.Helper()
	return []string{node(tb), need(tb, filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")), "stdio"}
}

// Filesystem is the command line of server-filesystem serving dir.
func Filesystem(tb testing.TB, dir string) []string {
	tb.Helper()
	return []string{node(tb), need(tb, filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")), dir}
}

// Memory is the command line of server-memory (a knowledge graph of
// entities, relations and observations), keeping its graph in file.
func Memory(tb testing.TB, file string) (args []string, env map[string]string) {
	tb.Helper()
	return []string{node(tb), need(tb, filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js"))},
		map[string]string{"MEMORY_FILE_PATH": file}
}

// Python is the command line of pyserver.py over stdio.
func Python(tb testing.TB) []string {
	return []string{need(tb, filepath.Join(Dir(), ".venv", "bin", "python")), need(tb, filepath.Join(Dir(), "pyserver.py"))}
}

// Shell joins a command line for --mcp NAME=...
func Shell(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// EverythingHTTP starts server-everything in streamable HTTP mode on a
// free loopback port and returns its URL; the test's cleanup stops it.
func EverythingHTTP(tb testing.TB) string {
	tb.Helper()
	args := Everything(tb)
	args[len(args)-1] = "streamableHttp"
	port := FreePort(tb)
	url, _ := listen(tb, args, []string{"PORT=" + strconv.Itoa(port)}, "listening on port", port)
	return url
}

// PythonHTTP starts pyserver.py in streamable HTTP mode on port (0: a
// free one; json: single JSON responses instead of event streams) and
// returns its URL and a function that kills it, which the test's cleanup
// also calls.
func PythonHTTP(tb testing.TB, port int, json bool) (url string, kill func()) {
	tb.Helper()
	if port == 0 {
		port = FreePort(tb)
	}
	args := append(Python(tb), "http", strconv.Itoa(port))
	if json {
		args = append(args, "json")
	}
	return listen(tb, args, nil, "Uvicorn running on", port)
}

// listen starts a server in its own process group with env added, waits
// until its standard error says ready, and returns its MCP endpoint on
// port and a function that kills it (the test's cleanup calls it too).
func listen(tb testing.TB, args, env []string, ready string, port int) (string, func()) {
	tb.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	InOwnGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	kill := func() {
		once.Do(func() {
			killGroup(cmd)
			_ = cmd.Wait()
		})
	}
	tb.Cleanup(kill)
	said := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), ready) {
				said <- nil
				for sc.Scan() {
				}
				return
			}
		}
		said <- fmt.Errorf("%v ended before listening", args)
	}()
	select {
	case err := <-said:
		if err != nil {
			tb.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		tb.Fatalf("%v did not listen within a minute", args)
	}
	// The line says it listens; a connection says it listens on the
	// loopback address the tests use (polled: no event tells it).
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%v said it listens, but %s refuses connections: %v", args, addr, err)
		}
	}
	return fmt.Sprintf("http://%s/mcp", addr), kill
}

// FreePort returns a loopback TCP port nothing listens on now, below
// the kernel's range of ephemeral ports (32768 and up on Linux): a server
// started on it cannot find it taken, between this check and its own
// listen, as the source port of one of the thousands of client
// connections other tests open meanwhile.
func FreePort(tb testing.TB) int {
	tb.Helper()
	const low, high = 20000, 32000
	for range 1000 {
		port := low + rand.IntN(high-low)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		l.Close()
		return port
	}
	tb.Fatalf("no free loopback port in %d-%d", low, high)
	return 0
}

// Alive reports whether process pid exists.
func Alive(pid int) bool {
	return alive(pid)
}
