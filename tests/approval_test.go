//go:build unix

package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
)

// The approval prompt of `toolscript run`, driven through a
// pseudo-terminal that is the process's controlling terminal, as a
// person at a terminal answers it; and the same run without a terminal.

// askRules is a configuration whose one rule asks a person before every
// POST; a GET is not asked about.
const askRules = "[[policy]]\nname = \"posts need a person\"\nwhen = 'effect.method == \"POST\"'\naction = \"ask\"\n"

// approvalScript creates two pets (each asked about), catching a denial,
// and lists the pets (not asked).
const approvalScript = `
local made = {}
for _, name in {"Rex", "Tom"} do
	local ok, err = pcall(sdk.pets.create_pet, {name = name})
	-- A denied call raises a message that says so; anything else is kept.
	table.insert(made, if ok then name elseif string.find(tostring(err), "denied", 1, true) then "denied" else tostring(err))
end
sdk.pets.list_pets()
return made`

// approvalDir writes the configuration (the test API as "pets", and
// extra) and the script into a new directory.
func approvalDir(t *testing.T, api *testapi.Server, extra string) string {
	t.Helper()
	dir := t.TempDir()
	config := "[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = " + testconfig.Quote(api.URL) + "\nauth = \"t\"\n" + askRules + extra
	testfile.Write(t, filepath.Join(dir, "script.luau"), approvalScript)
	return testconfig.Write(t, dir, config)
}

// screen is what toolscript wrote to the terminal, read as it comes.
type screen struct {
	mu      sync.Mutex
	text    strings.Builder
	changed chan struct{} // a token each time text grew
	done    chan struct{} // the terminal's other side closed
}

func readScreen(ptmx io.Reader) *screen {
	s := &screen{changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			s.mu.Lock()
			s.text.Write(buf[:n])
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

// waitFor waits until the screen shows want for the nth time; false when
// the terminal closed first.
func (s *screen) waitFor(want string, n int) bool {
	for strings.Count(s.String(), want) < n {
		select {
		case <-s.changed:
		case <-s.done:
			return strings.Count(s.String(), want) >= n
		}
	}
	return true
}

type approvalResult struct {
	Result []string `json:"result"`
	Error  *struct{ Kind, Message string }
}

// runAnswering runs script.luau in dir on a terminal, answering each
// prompt with the next of answers (a line each); it returns the run's
// JSON result, what the terminal showed and the exit status.
func runAnswering(t *testing.T, dir string, answers []string, args ...string) (approvalResult, string, int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(binary, append(append([]string{"run", "--json"}, args...), "script.luau")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLSCRIPT_IO_DIR=")
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &out, tty
	// Its own session, the pseudo-terminal its controlling terminal: its
	// /dev/tty.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	s := readScreen(ptmx)
	for i, answer := range answers {
		if !s.waitFor("allow it?", i+1) {
			t.Fatalf("the terminal closed before prompt %d:\n%s", i+1, s)
		}
		if _, err := io.WriteString(ptmx, answer+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	status := 0
	var exitErr *exec.ExitError
	if err := cmd.Wait(); errors.As(err, &exitErr) {
		status = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	<-s.done
	var res approvalResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("the result %q: %v\nterminal:\n%s", out.String(), err, s)
	}
	return res, s.String(), status
}

func TestApprovalPrompt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		answers []string
		want    []string // the script's result
		kind    string   // the execution's error kind
		prompts int      // how many times the person was asked
		posts   int64    // the POSTs the API received
	}{
		{"yes, then no", []string{"y", "n"}, []string{"Rex", "denied"}, "", 2, 1},
		{"no, then yes", []string{"no", "yes"}, []string{"denied", "Tom"}, "", 2, 1},
		{"yes to all like this", []string{"a"}, []string{"Rex", "Tom"}, "", 1, 2},
		{"stop", []string{"s"}, nil, "approval", 1, 0},
		{"garbage, then yes", []string{"maybe", "y", "y"}, []string{"Rex", "Tom"}, "", 3, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := testapi.New(t)
			res, terminal, status := runAnswering(t, approvalDir(t, api, ""), tt.answers)
			gets := int64(1)
			if tt.kind != "" {
				gets = 0 // stopped before the listing
			}
			if got := api.Requests.Load(); got != tt.posts+gets {
				t.Errorf("the API received %d requests, want %d POSTs and %d GETs", got, tt.posts, gets)
			}
			switch {
			case tt.kind != "":
				if res.Error == nil || res.Error.Kind != tt.kind || status == 0 {
					t.Errorf("status %d, error %+v; want kind %s", status, res.Error, tt.kind)
				}
			case res.Error != nil || strings.Join(res.Result, ",") != strings.Join(tt.want, ","):
				t.Errorf("result %q, error %+v; want %q", res.Result, res.Error, tt.want)
			}
			if n := strings.Count(terminal, "allow it?"); n != tt.prompts {
				t.Errorf("asked %d times, want %d:\n%s", n, tt.prompts, terminal)
			}
			for _, want := range []string{`the rule "posts need a person" asks`, "call   sdk.pets.create_pet: POST " + api.URL + "/pets", `{"name":"Rex"}`} {
				if !strings.Contains(terminal, want) {
					t.Errorf("the terminal does not show %q:\n%s", want, terminal)
				}
			}
		})
	}
}

// TestApprovalWithoutTerminal: without a terminal an ask is deny, unless
// --approve names a plan that holds the effect (each entry approves one).
func TestApprovalWithoutTerminal(t *testing.T) {
	t.Parallel()
	api := testapi.New(t)
	dir := approvalDir(t, api, "")
	plan := `[{"op":"call","function":"sdk.pets.create_pet","method":"POST","url":"` + api.URL + `/pets",` +
		`"headers":{"Content-Type":"application/json"},"body":{"name":"Tom"}}]`
	testfile.Write(t, filepath.Join(dir, "plan.json"), plan)
	for _, tt := range []struct {
		name  string
		args  []string
		want  string
		posts int64
	}{
		{"denied", nil, "denied,denied", 0},
		{"the plan approves what it holds", []string{"--approve", "plan.json"}, "denied,Tom", 1},
	} {
		before := api.Requests.Load()
		cmd := exec.Command(binary, append(append([]string{"run", "--json"}, tt.args...), "script.luau")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TOOLSCRIPT_IO_DIR=")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v: %s", tt.name, err, out)
		}
		var res approvalResult
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s: %q: %v", tt.name, out, err)
		}
		if got := strings.Join(res.Result, ","); got != tt.want || res.Error != nil {
			t.Errorf("%s: result %q, error %+v; want %q", tt.name, got, res.Error, tt.want)
		}
		if got := api.Requests.Load() - before; got != tt.posts+1 {
			t.Errorf("%s: %d requests, want %d POSTs and the GET", tt.name, got, tt.posts)
		}
	}
}
