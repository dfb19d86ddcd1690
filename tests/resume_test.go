package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/serve/requeststate"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testfile"
)

// resumeScript reads a file, makes a safe call, appends to a log, reads
// the clock and the random seed, then creates a pet (a POST a person is
// asked about), then writes what it created.
const resumeScript = `
local seed = math.random(1, 1000000000)
local now = os.time()
local f = io.open("in.txt", "r")
local input = f:read("a")
f:close()
local pet = sdk.get_pet({petId = 7})
local log = io.open("out/log.txt", "a")
log:write("before ", input, " ", pet.name, "\n")
log:close()
local created = sdk.create_pet({name = input})
local after = io.open("out/after.txt", "w")
after:write("created ", created.name)
after:close()
return {seed = seed, now = now, pet = pet.name, created = created.name}
`

// countingAPI is the test API behind a server that counts each request
// by method and path.
type countingAPI struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string]int
}

func newCountingAPI(t testing.TB) *countingAPI {
	api := testapi.New(t)
	c := &countingAPI{got: map[string]int{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.got[r.Method+" "+r.URL.Path]++
		c.mu.Unlock()
		api.HTTP.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// resumeSetup is where every resume test starts: the counting API, a
// runtime and client calling it, and an io directory whose in.txt holds
// "Rex".
func resumeSetup(t testing.TB) (api *countingAPI, rt *luau.Runtime, client *sdk.Client, dir string) {
	t.Helper()
	api = newCountingAPI(t)
	rt, client = petsSDK(t, api.srv.URL)
	dir = t.TempDir()
	testfile.Write(t, filepath.Join(dir, "in.txt"), "Rex")
	return api, rt, client, dir
}

func (c *countingAPI) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.got {
		out[k] = v
	}
	return out
}

func execute(rt *luau.Runtime, client *sdk.Client, source, dir string, fx *effects.Run) *result.Result {
	return rt.Execute(context.Background(), luau.Script{Source: []byte(source),
		SDK: client.Session(nil).WithEffects(fx), Effects: fx,
		IO: &luau.IO{Dir: dir}, Limits: luau.Limits{Timeout: time.Minute}})
}

// askPosts is a rule that asks a person about every POST.
func askPosts(e *effects.Facts) string {
	if e.Method == "POST" {
		return "creating needs a person"
	}
	return ""
}

// pauser is an Asker that pauses the execution: it takes the prefix and
// the digests of its files, and stops the execution (as an MCP client
// on 2026-07-28 is answered with input_required).
type pauser struct {
	fx     *effects.Run
	dir    string
	q      effects.Question
	prefix []byte
	files  []sandboxio.FileDigest
	err    error
}

func (p *pauser) Ask(q effects.Question) (effects.Answer, error) {
	p.q = q
	p.prefix, p.err = p.fx.Prefix(context.Background())
	if p.err == nil {
		var paths []string
		if paths, p.err = p.fx.PrefixFiles(); p.err == nil {
			p.files, p.err = sandboxio.Digests(p.dir, paths)
		}
	}
	return effects.Cancel, errors.New("paused: the client is answered with input_required")
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// pauseScript runs source until its ask pauses it, and seals the pause.
func pauseScript(t testing.TB, rt *luau.Runtime, client *sdk.Client, source, dir string, sealer *requeststate.Sealer, b requeststate.Binding, expiry time.Time) string {
	t.Helper()
	w := trace.NewMemoryWriter(trace.Header{Toolscript: "test", ScriptSHA256: sum(source)})
	p := &pauser{dir: dir}
	p.fx = effects.NewRecording(w).AskWith(askPosts, p)
	res := execute(rt, client, source, dir, p.fx)
	w.Close()
	if res.Error == nil || res.Error.Kind != effects.KindApproval || p.err != nil {
		t.Fatalf("the paused run: %+v, %v", res.Error, p.err)
	}
	token, err := sealer.Seal(&requeststate.State{Binding: b, Expiry: expiry, Question: p.q, Prefix: p.prefix, Files: p.files})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// resumeState resumes an opened state with answer: nil and the reason
// when the state does not resume (nothing ran).
func resumeState(t testing.TB, rt *luau.Runtime, client *sdk.Client, source, dir string, st *requeststate.State, answer effects.Answer) (*result.Result, error) {
	t.Helper()
	if err := sandboxio.Unchanged(dir, st.Files); err != nil {
		return nil, err
	}
	pr, err := st.PrefixReader()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	rd, _, err := trace.NewReader(pr, 0)
	if err != nil {
		return nil, err
	}
	fx, err := effects.NewResume(rd, st.Question, answer, trace.NewMemoryWriter(trace.Header{Toolscript: "test"}))
	if err != nil {
		return nil, err
	}
	fx.AskWith(askPosts, &pauser{fx: fx, dir: dir})
	return execute(rt, client, source, dir, fx), nil
}

// TestResumeOnAnotherReplica: a script paused at its POST, its state
// sealed, opened by another replica (the same key, its own memory) and
// resumed: every earlier request was made exactly once, every earlier
// write done once, the clock and the seed are the paused run's; then
// the refusals, with nothing run.
func TestResumeOnAnotherReplica(t *testing.T) {
	api, rt, client, dir := resumeSetup(t)
	key, err := requeststate.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	replica := func() *requeststate.Sealer {
		s, err := requeststate.NewSealer(t.TempDir(), requeststate.NewSpent(0), key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Now()
	b := requeststate.Binding{User: "alice", Client: "test-client", ScriptSHA256: sum(resumeScript), ArgumentsSHA256: sum("{}")}
	token := pauseScript(t, rt, client, resumeScript, dir, replica(), b, now.Add(10*time.Minute))
	paused := api.counts()
	if paused["GET /pets/7"] != 1 || paused["POST /pets"] != 0 {
		t.Fatalf("before the pause the API saw %v", paused)
	}

	// Refusals first: each leaves nothing run.
	other := replica()
	for _, tc := range []struct {
		name string
		b    func(requeststate.Binding) requeststate.Binding
		at   time.Time
		want error
	}{
		{"another script", func(b requeststate.Binding) requeststate.Binding { b.ScriptSHA256 = sum("return 1"); return b }, now, requeststate.ErrOtherScript},
		{"other arguments", func(b requeststate.Binding) requeststate.Binding { b.ArgumentsSHA256 = sum(`{"x":1}`); return b }, now, requeststate.ErrOtherArgs},
		{"another user", func(b requeststate.Binding) requeststate.Binding { b.User = "mallory"; return b }, now, requeststate.ErrOtherUser},
		{"expired", func(b requeststate.Binding) requeststate.Binding { return b }, now.Add(11 * time.Minute), requeststate.ErrExpired},
	} {
		if _, err := other.Open(token, tc.b(b), tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// A file the prefix read, changed: the state opens, and does not resume.
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("Tom"), 0o644)
	st, err := replica().Open(token, b, now)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := resumeState(t, rt, client, resumeScript, dir, st, effects.Approve); err == nil || err.Error() != "in.txt changed since the pause" {
		t.Fatalf("a changed file: %v %+v", err, res)
	}
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("Rex"), 0o644)
	if got := api.counts(); got["GET /pets/7"] != 1 || got["POST /pets"] != 0 {
		t.Fatalf("a refused state made requests: %v", got)
	}

	// The resume, on another replica.
	st, err = other.Open(token, b, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	res, err := resumeState(t, rt, client, resumeScript, dir, st, effects.Approve)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatalf("the resumed run: %+v", res.Error)
	}
	if got := api.counts(); got["GET /pets/7"] != 1 || got["POST /pets"] != 1 || len(got) != 2 {
		t.Errorf("the API saw %v: each request exactly once", got)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "out/log.txt")); string(log) != "before Rex Rex\n" {
		t.Errorf("out/log.txt holds %q: the prefix's append done once", log)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "out/after.txt")); string(after) != "created Rex" {
		t.Errorf("out/after.txt holds %q", after)
	}
	if v := string(res.Value); !strings.Contains(v, `"created":"Rex"`) || !strings.Contains(v, `"pet":"Rex"`) {
		t.Errorf("result %s", v)
	}
	var names []string
	for _, f := range res.FilesTouched {
		names = append(names, f.Name)
	}
	if strings.Join(names, " ") != "out/after.txt out/log.txt" {
		t.Errorf("files touched %v: the prefix's among them", names)
	}

	// The state resumed once on that replica.
	if _, err := other.Open(token, b, now.Add(2*time.Minute)); !errors.Is(err, requeststate.ErrSpent) {
		t.Errorf("a replayed state: %v", err)
	}
}

// TestResumeDeclined: a person who declines: the effect is not made and
// the script gets an error it may catch.
func TestResumeDeclined(t *testing.T) {
	api, rt, client, dir := resumeSetup(t)
	source := strings.Replace(resumeScript, "local created = sdk.create_pet({name = input})",
		`local ok, err = pcall(sdk.create_pet, {name = input}) local created = {name = ok and "?" or tostring(err)}`, 1)
	key, _ := requeststate.NewKey()
	sealer, _ := requeststate.NewSealer("", requeststate.NewSpent(0), key)
	b := requeststate.Binding{User: "alice", ScriptSHA256: sum(source)}
	token := pauseScript(t, rt, client, source, dir, sealer, b, time.Now().Add(time.Minute))
	st, err := sealer.Open(token, b, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	res, err := resumeState(t, rt, client, source, dir, st, effects.Decline)
	if err != nil || res.Error != nil {
		t.Fatalf("%v %+v", err, res.Error)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "out/after.txt")); !strings.Contains(string(after), "declined by a person") {
		t.Errorf("the script got %q", after)
	}
	if got := api.counts(); got["POST /pets"] != 0 || got["GET /pets/7"] != 1 {
		t.Errorf("the API saw %v", got)
	}
}
