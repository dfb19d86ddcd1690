// Package deploy checks the deployment artifacts that cannot run here (no
// container engine, no cluster): the Dockerfile, the Kubernetes example and
// the HAProxy example are parsed and held to what the server and the image
// actually do, and the image's build command is run to show it gives a
// static binary that serves with the examples' arguments.
package deploy

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/hosted"
)

var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolscript-deploy")
	if err != nil {
		panic(err)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	root       = "../.."
	kubernetes = root + "/examples/kubernetes"
	haproxy    = root + "/examples/haproxy"
	dockerfile = root + "/Dockerfile"
)

// manifests returns the example's objects by kind, as generic maps,
// reading the files its kustomization lists.
func manifests(t *testing.T) map[string]map[string]any {
	t.Helper()
	var kustomization struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	readYAML(t, filepath.Join(kubernetes, "kustomization.yaml"), &kustomization)
	objects := map[string]map[string]any{}
	for _, file := range kustomization.Resources {
		var obj map[string]any
		readYAML(t, filepath.Join(kubernetes, file), &obj)
		kind, _ := obj["kind"].(string)
		if kind == "" || obj["apiVersion"] == nil || get(obj, "metadata", "name") == nil {
			t.Fatalf("%s: no kind, apiVersion or name", file)
		}
		objects[kind] = obj
	}
	return objects
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// get walks a generic map: string keys, and int indexes into lists.
func get(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		case int:
			l, ok := v.([]any)
			if !ok || p >= len(l) {
				return nil
			}
			v = l[p]
		}
	}
	return v
}

func TestKubernetes(t *testing.T) {
	objs := manifests(t)
	for _, kind := range []string{"Deployment", "Service", "HorizontalPodAutoscaler"} {
		if objs[kind] == nil {
			t.Fatalf("no %s in the example", kind)
		}
	}
	dep, svc, hpa := objs["Deployment"], objs["Service"], objs["HorizontalPodAutoscaler"]
	pod := get(dep, "spec", "template", "spec")
	c := get(pod, "containers", 0)
	var args []string
	for _, a := range get(c, "args").([]any) {
		args = append(args, a.(string))
	}
	flag := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 {
			t.Errorf("args %q lack %s", args, name)
			return ""
		}
		if i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}

	tests := []struct {
		name      string
		got, want any
	}{
		{"Deployment apiVersion", dep["apiVersion"], "apps/v1"},
		{"command", get(toAny(args), 0), "serve"},
		{"selector matches the pod", get(dep, "spec", "selector", "matchLabels", "app.kubernetes.io/name"),
			get(dep, "spec", "template", "metadata", "labels", "app.kubernetes.io/name")},
		{"liveness probe", get(c, "livenessProbe", "httpGet", "path"), hosted.PathHealth},
		{"readiness probe", get(c, "readinessProbe", "httpGet", "path"), hosted.PathReady},
		{"liveness probe port", get(c, "livenessProbe", "httpGet", "port"), get(c, "ports", 0, "name")},
		{"readiness probe port", get(c, "readinessProbe", "httpGet", "port"), get(c, "ports", 0, "name")},
		{"container port is --http's", get(c, "ports", 0, "containerPort"), port(t, flag("--http"))},
		{"non-root", get(pod, "securityContext", "runAsNonRoot"), true},
		{"distroless nonroot user", get(pod, "securityContext", "runAsUser"), 65532.0},
		{"read-only root", get(c, "securityContext", "readOnlyRootFilesystem"), true},
		{"no privilege escalation", get(c, "securityContext", "allowPrivilegeEscalation"), false},
		{"writable /tmp", get(c, "volumeMounts", 0, "mountPath"), "/tmp"},
		{"the cache in /tmp, as in the image", get(c, "env", 0, "value"), dockerEnv(t)["XDG_CACHE_HOME"]},
		{"Service selects the pods", get(svc, "spec", "selector", "app.kubernetes.io/name"),
			get(dep, "spec", "template", "metadata", "labels", "app.kubernetes.io/name")},
		{"Service targets the container port", get(svc, "spec", "ports", 0, "targetPort"), get(c, "ports", 0, "name")},
		{"HPA apiVersion", hpa["apiVersion"], "autoscaling/v2"},
		{"HPA scales the Deployment", get(hpa, "spec", "scaleTargetRef", "kind"), "Deployment"},
		{"HPA scales this Deployment", get(hpa, "spec", "scaleTargetRef", "name"), get(dep, "metadata", "name")},
		{"HPA on CPU", get(hpa, "spec", "metrics", 0, "resource", "name"), "cpu"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
	if !slices.Contains(args, "--stateless") {
		t.Errorf("args %q lack --stateless", args)
	}
	if a := flag("--auth-authority"); !strings.HasPrefix(a, "https://") {
		t.Errorf("--auth-authority %q: want an https issuer", a)
	}
	if flag("--auth-audience") == "" {
		t.Errorf("no --auth-audience")
	}
	if g, _ := get(pod, "terminationGracePeriodSeconds").(float64); g <= 10 {
		t.Errorf("terminationGracePeriodSeconds %v: want more than the 10s shutdown grace", g)
	}
	// Utilization targets need CPU requests.
	if get(c, "resources", "requests", "cpu") == nil {
		t.Error("no CPU request: the HPA's utilization has nothing to divide by")
	}
	min, _ := get(hpa, "spec", "minReplicas").(float64)
	max, _ := get(hpa, "spec", "maxReplicas").(float64)
	if min < 1 || max < min {
		t.Errorf("HPA replicas %v..%v", min, max)
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// port returns the port of an --http address such as ":8080".
func port(t *testing.T, addr string) any {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	n, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Errorf("--http %q has no port", addr)
		return nil
	}
	return float64(n)
}

// dockerfileLines returns the Dockerfile's instructions, continuation
// lines joined, comments dropped.
func dockerfileLines(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	var cur string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur += more
			continue
		}
		lines = append(lines, cur+line)
		cur = ""
	}
	return lines
}

// dockerEnv returns the ENV of the Dockerfile's last stage.
func dockerEnv(t *testing.T) map[string]string {
	env := map[string]string{}
	for _, l := range dockerfileLines(t) {
		if strings.HasPrefix(l, "FROM ") {
			clear(env)
		}
		if rest, ok := strings.CutPrefix(l, "ENV "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
	}
	return env
}

func TestDockerfile(t *testing.T) {
	lines := dockerfileLines(t)
	var froms, users []string
	var build string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "FROM "):
			froms = append(froms, l)
		case strings.HasPrefix(l, "USER "):
			users = append(users, l)
		case strings.Contains(l, "go build"):
			build = l
		}
	}
	if len(froms) != 2 {
		t.Fatalf("stages %q: want a build stage and the image", froms)
	}
	if !strings.HasPrefix(froms[1], "FROM gcr.io/distroless/static") || !strings.HasSuffix(froms[1], ":nonroot") {
		t.Errorf("image base %q: want distroless static, nonroot", froms[1])
	}
	if len(users) != 1 || users[0] != "USER nonroot:nonroot" {
		t.Errorf("USER %q", users)
	}
	if !strings.Contains(build, "./cmd/toolscript") || !strings.Contains(build, "-trimpath") {
		t.Errorf("build %q", build)
	}
	env := map[string]string{}
	for _, l := range lines[:slices.Index(lines, froms[1])] {
		if rest, ok := strings.CutPrefix(l, "ENV "); ok {
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
	}
	if env["CGO_ENABLED"] != "0" {
		t.Errorf("the build stage's CGO_ENABLED is %q, want 0", env["CGO_ENABLED"])
	}
	// The Go image is at least go.mod's Go version.
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(goMod))
	have := regexp.MustCompile(`^FROM golang:(\d+)\.(\d+)`).FindStringSubmatch(froms[0])
	if want == nil || have == nil || atoi(have[1])*100+atoi(have[2]) < atoi(want[1])*100+atoi(want[2]) {
		t.Errorf("build image %q for go.mod's go %v", froms[0], want)
	}
	if _, err := os.Stat(filepath.Join(root, ".dockerignore")); err != nil {
		t.Errorf("no .dockerignore: %v", err)
	}

	// The image builds with the classic builder and with BuildKit's
	// built-in frontend: no parser directive that makes BuildKit pull a
	// frontend image, no BuildKit-only RUN flags.
	raw, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?im)^#\s*syntax\s*=.*$`).Find(raw); m != nil {
		t.Errorf("parser directive %q: BuildKit would pull that frontend (offline and mirror-only builds fail)", m)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "--mount") {
			t.Errorf("%q: RUN --mount needs BuildKit", l)
		}
	}

	// The image's working directory is its user's home, which that user
	// owns in the distroless nonroot image: run's default io directory
	// (relative to the working directory) must be writable there.
	var workdir string
	for _, l := range lines[slices.Index(lines, froms[1]):] {
		if rest, ok := strings.CutPrefix(l, "WORKDIR "); ok {
			workdir = strings.TrimSpace(rest)
		}
	}
	if workdir != "/home/nonroot" {
		t.Errorf("the image's WORKDIR is %q, want /home/nonroot (the nonroot user's home): "+
			"without it run's io directory ./toolscript-files resolves under /, which the user cannot write", workdir)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// built is the binary the Dockerfile's command builds, once per run of the
// package, in a directory TestMain removes. tests/version_test.go installs
// with the same configuration (-trimpath, CGO_ENABLED=0), so that the two
// share the compiled dependencies in the build cache.
var built = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(buildDir, "toolscript")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=deploy-test", "-o", bin, "./cmd/toolscript")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return bin, nil
})

// TestStaticBinary builds as the Dockerfile does and checks that the
// result is static: it needs no dynamic loader, so a distroless static
// image (no libc) can run it.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF binary")
	}
	bin, err := built()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader (PT_INTERP)")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %q", libs)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "toolscript deploy-test\n") {
		t.Errorf("toolscript version: %q, %v", out, err)
	}
}

// haproxyConfig returns the sections of examples/haproxy/haproxy.cfg
// ("global", "defaults", "frontend mcp", "backend toolscript"), each a list
// of its directives as fields, comments dropped.
func haproxyConfig(t *testing.T) map[string][][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(haproxy, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string][][]string{}
	current := ""
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			current = strings.Join(fields, " ")
			if _, dup := sections[current]; dup {
				t.Fatalf("haproxy.cfg: section %q twice", current)
			}
			sections[current] = nil
			continue
		}
		if current == "" {
			t.Fatalf("haproxy.cfg: %q outside a section", line)
		}
		sections[current] = append(sections[current], fields)
	}
	return sections
}

// directive returns the arguments of the first directive of section whose
// fields start with words, and whether there is one.
func directive(section [][]string, words ...string) ([]string, bool) {
	for _, d := range section {
		if len(d) >= len(words) && slices.Equal(d[:len(words)], words) {
			return d[len(words):], true
		}
	}
	return nil, false
}

// composeServices returns examples/haproxy/compose.yaml's services.
func composeServices(t *testing.T) map[string]map[string]any {
	t.Helper()
	var compose struct {
		Services map[string]map[string]any `json:"services"`
	}
	readYAML(t, filepath.Join(haproxy, "compose.yaml"), &compose)
	return compose.Services
}

func strs(t *testing.T, v any) []string {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%#v: want a list of strings", v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		out[i], ok = x.(string)
		if !ok {
			t.Fatalf("%#v: want a list of strings", v)
		}
	}
	return out
}

// TestHAProxy holds the load-balancer example to the server: HAProxy
// checks the replicas on /readyz, retries a connection a replica refused
// on another one, waits longer than a call may run, and its servers are
// the compose file's replicas, running stateless on the port HAProxy
// sends to.
func TestHAProxy(t *testing.T) {
	cfg := haproxyConfig(t)
	defaults, backend := cfg["defaults"], cfg["backend toolscript"]
	if backend == nil {
		t.Fatalf("haproxy.cfg: no backend toolscript (sections %v)", slices.Collect(maps.Keys(cfg)))
	}
	var frontend [][]string
	for name, sec := range cfg {
		if strings.HasPrefix(name, "frontend ") {
			frontend = sec
		}
	}
	if be, _ := directive(frontend, "default_backend"); !slices.Equal(be, []string{"toolscript"}) {
		t.Errorf("the frontend's default_backend is %q, want toolscript", be)
	}
	both := append(slices.Clone(defaults), backend...)

	if _, ok := directive(backend, "option", "httpchk"); !ok {
		t.Error("the backend has no option httpchk: replicas are not health-checked over HTTP")
	}
	if send, _ := directive(backend, "http-check", "send"); !slices.Equal(send, []string{"meth", "GET", "uri", hosted.PathReady}) {
		t.Errorf("http-check send %q, want meth GET uri %s", send, hosted.PathReady)
	}
	if expect, _ := directive(backend, "http-check", "expect"); !slices.Equal(expect, []string{"status", "200"}) {
		t.Errorf("http-check expect %q, want status 200", expect)
	}
	if _, ok := directive(both, "option", "redispatch"); !ok {
		t.Error("no option redispatch: a retry would go back to the replica that refused it")
	}
	if r, _ := directive(both, "retries"); len(r) != 1 || atoi(r[0]) < 1 {
		t.Errorf("retries %q: want at least 1", r)
	}
	// Retrying anything but a refused connection could run a call twice.
	if on, ok := directive(both, "retry-on"); ok {
		for _, cond := range on {
			if cond != "conn-failure" && cond != "none" {
				t.Errorf("retry-on %q: a call a replica began to run may be sent again", on)
			}
		}
	}
	for _, which := range []string{"client", "server"} {
		v, _ := directive(both, "timeout", which)
		d, err := time.ParseDuration(strings.Join(v, ""))
		if err != nil || d <= 5*time.Minute {
			t.Errorf("timeout %s %q: want more than the default [server] max_timeout, 5m", which, v)
		}
	}

	// The servers are the compose file's replicas.
	services := composeServices(t)
	var servers int
	for _, d := range backend {
		if d[0] != "server" {
			continue
		}
		servers++
		if len(d) < 3 {
			t.Errorf("server %q: no address", d)
			continue
		}
		host, portText, _ := strings.Cut(d[2], ":")
		svc := services[host]
		if svc == nil {
			t.Errorf("server %s: %q is no service of compose.yaml", d[1], host)
			continue
		}
		args := strs(t, svc["command"])
		i := slices.Index(args, "--http")
		if len(args) == 0 || args[0] != "serve" || i < 0 || i+1 >= len(args) {
			t.Errorf("service %s: command %q, want serve --http ADDR", host, args)
			continue
		}
		if want := port(t, args[i+1]); want != float64(atoi(portText)) {
			t.Errorf("server %s: port %s, the replica listens on %v", d[1], portText, want)
		}
		if !slices.Contains(args, "--stateless") {
			t.Errorf("service %s is not --stateless: a client's requests go to any replica", host)
		}
		check := slices.Contains(d, "check")
		if ds, ok := directive(backend, "default-server"); ok && slices.Contains(ds, "check") {
			check = true
		}
		if !check {
			t.Errorf("server %s is not health-checked", d[1])
		}
	}
	if servers < 2 {
		t.Errorf("%d servers: want at least two replicas", servers)
	}
	// HAProxy's published port is the one it binds.
	bind, _ := directive(frontend, "bind")
	hp := services["haproxy"]
	if len(bind) == 0 || hp == nil {
		t.Fatalf("no bind in the frontend, or no haproxy service")
	}
	published := strs(t, hp["ports"])
	if len(published) == 0 || !strings.HasSuffix(published[0], ":"+strings.TrimPrefix(bind[0], ":")) {
		t.Errorf("haproxy publishes %q, binds %q", published, bind[0])
	}
}

// example is how an example runs the image: its command line, and the
// files it mounts in the image's working directory (their names there,
// and where they are in the repository).
type example struct {
	args  []string
	files map[string]string
}

// examples returns the Kubernetes Deployment's container and each compose
// replica.
func examples(t *testing.T) map[string]example {
	t.Helper()
	out := map[string]example{}
	c := get(manifests(t)["Deployment"], "spec", "template", "spec", "containers", 0)
	out["kubernetes"] = example{args: strs(t, get(c, "args"))}
	for name, svc := range composeServices(t) {
		if svc["command"] == nil {
			continue
		}
		ex := example{args: strs(t, svc["command"]), files: map[string]string{}}
		if svc["volumes"] != nil {
			for _, v := range strs(t, svc["volumes"]) {
				src, dst, _ := strings.Cut(v, ":")
				dst, _, _ = strings.Cut(dst, ":")
				if dir, file := filepath.Split(dst); dir == "/home/nonroot/" {
					ex.files[file] = filepath.Join(haproxy, src)
				}
			}
		}
		out["haproxy/"+name] = ex
	}
	return out
}

// TestExampleServes runs the examples' command lines with the binary the
// image holds, in a working directory holding what they mount there, the issuer replaced by a real one (authtest) and the port
// by a free loopback one: each starts, its probes answer 200, and /mcp
// wants a token.
func TestExampleServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := built()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	issuer := authtest.NewIssuer(t, authtest.Options{PlainHTTP: true})
	all := examples(t)
	if len(all) < 3 {
		t.Fatalf("examples %v: want the Kubernetes one and two HAProxy replicas", slices.Collect(maps.Keys(all)))
	}
	for name, ex := range all {
		t.Run(name, func(t *testing.T) {
			args := slices.Clone(ex.args)
			for i := 0; i+1 < len(args); i++ {
				switch args[i] {
				case "--http":
					args[i+1] = "127.0.0.1:0"
				case "--auth-authority":
					args[i+1] = issuer.URL
				case "--auth-audience":
					args[i+1] = issuer.Audience
				}
			}
			if !slices.Contains(args, "--stateless") {
				t.Error("the example's replicas are not --stateless")
			}
			dir := t.TempDir()
			for name, src := range ex.files {
				b, err := os.ReadFile(src)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			serves(t, bin, dir, args)
		})
	}
}

// serves runs bin with args in dir (the image's working directory) until it
// is ready, and checks its probes and that /mcp wants a token.
func serves(t *testing.T, bin, dir string, args []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	}()
	url := ""
	lines := bufio.NewScanner(stderr)
	for url == "" && lines.Scan() {
		var m map[string]any
		if json.Unmarshal(lines.Bytes(), &m) == nil && m["msg"] == "ready" {
			url, _ = m["url"].(string)
		}
	}
	if url == "" {
		t.Fatal("the server did not get ready")
	}
	go io.Copy(io.Discard, stderr)
	base := strings.TrimSuffix(url, hosted.PathMCP)
	for _, path := range []string{hosted.PathHealth, hosted.PathReady} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", path, resp.StatusCode)
		}
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp without a token: status %d, want 401", resp.StatusCode)
	}
}
