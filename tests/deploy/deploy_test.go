// Package deploy checks the deployment artifacts that cannot run here (no
// container engine, no cluster): the Dockerfile and the Kubernetes example
// are parsed and held to what the server and the image actually do, and
// the image's build command is run to show it gives a static binary.
package deploy

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"io"
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

	"sigs.k8s.io/yaml"

	"github.com/toolscript/toolscript/host/auth/authtest"
	"github.com/toolscript/toolscript/host/hosted"
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

// TestExampleServes runs the Kubernetes example's container arguments
// with the binary the image holds, the issuer replaced by a real one
// (authtest) and the port by a free loopback one: it starts, its probes
// answer 200, and /mcp wants a token.
func TestExampleServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := built()
	if err != nil {
		t.Fatalf("go build: %v", err)
	}
	issuer := authtest.NewIssuer(t, authtest.Options{PlainHTTP: true})
	c := get(manifests(t)["Deployment"], "spec", "template", "spec", "containers", 0)
	var args []string
	for _, a := range get(c, "args").([]any) {
		args = append(args, a.(string))
	}
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
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
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
