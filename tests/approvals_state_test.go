package tests

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestApprovalStateKeyRotates: a pause sealed under the old state key
// resumes on a replica whose state_key is the new one and whose
// previous_state_keys holds the old; a replica with the new key alone
// refuses it as sealed under a key it does not hold, with nothing run.
func TestApprovalStateKeyRotates(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	iss, auth := issuerArgs(t)
	ioDir := filepath.Join(t.TempDir(), "files")
	if err := os.MkdirAll(ioDir, 0o755); err != nil {
		t.Fatal(err)
	}
	oldKey, newKey := strings.Repeat("0a", 32), strings.Repeat("0b", 32)
	start := func(effects string) *hostedProcess {
		t.Helper()
		dir := t.TempDir()
		writeApprovalConfig(t, dir, api, "", effects)
		cmd := exec.Command(binary, append([]string{"serve", "--http", "127.0.0.1:0", "--stateless", "--io-dir", ioDir}, auth...)...)
		return startServeCmd(t, cmd, dir)
	}
	t.Setenv("TOOLSCRIPT_STATE_KEY", oldKey)
	before := start("state_key = \"${TOOLSCRIPT_STATE_KEY}\"\n")
	t.Setenv("TOOLSCRIPT_STATE_KEY", newKey)
	t.Setenv("TOOLSCRIPT_STATE_KEY_PREVIOUS", oldKey)
	rotating := start("state_key = \"${TOOLSCRIPT_STATE_KEY}\"\nprevious_state_keys = [\"${TOOLSCRIPT_STATE_KEY_PREVIOUS}\"]\n")
	rotated := start("state_key = \"${TOOLSCRIPT_STATE_KEY}\"\n")
	token := iss.Token(t, "RS256", "alice")
	accept := map[string]any{"action": "accept", "content": map[string]any{}}

	first := postModern(t, before.url, token, modernCall(1, replicaScript, "", nil))
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("the first call: %v", first)
	}
	refused := postModern(t, rotated.url, token, modernCall(2, replicaScript, state, accept))
	if refused["isError"] != true || !strings.Contains(fmt.Sprint(refused["content"]), "sealed with another key") {
		t.Errorf("a replica without the old key: %v", refused)
	}
	if posts := api.count(http.MethodPost); posts != 0 {
		t.Fatalf("%d POSTs after a refused retry", posts)
	}
	resumed := postModern(t, rotating.url, token, modernCall(3, replicaScript, state, accept))
	sc, _ := resumed["structuredContent"].(map[string]any)
	if sc == nil || sc["error"] != nil {
		t.Fatalf("the retry on the replica holding the old key: %v", resumed)
	}
	if got := fmt.Sprint(sc["result"]); got != "map[before:1 made:approved]" {
		t.Errorf("result %s", got)
	}
	if posts := api.count(http.MethodPost); posts != 1 {
		t.Errorf("%d POSTs, want 1", posts)
	}
	// The rotating replica seals new pauses under the new key: the
	// replica with the new key alone opens them.
	second := postModern(t, rotating.url, token, modernCall(4, replicaScript, "", nil))
	state, _ = second["requestState"].(string)
	if state == "" {
		t.Fatalf("the second pause: %v", second)
	}
	again := postModern(t, rotated.url, token, modernCall(5, replicaScript, state, accept))
	if sc, _ := again["structuredContent"].(map[string]any); sc == nil || sc["error"] != nil {
		t.Errorf("a pause sealed by the rotating replica, resumed under the new key: %v", again)
	}
}

// TestApprovalLargePrefixSpills: a paused execution whose prefix (here an
// API response of 2.5 MB that does not compress) seals to more than
// requeststate's 1 MiB is kept in the replicas' shared state_dir; the
// retry resumes it from there on the other replica, or in place on the
// replica holding it, and either way the kept prefix is removed once the
// state is spent. Without a state_dir such a pause resumes only in
// place, and the other replica says so with nothing run.
func TestApprovalLargePrefixSpills(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	random := make([]byte, 1875<<10)
	rand.Read(random)
	big := base64.StdEncoding.EncodeToString(random) // 2.5 MB
	const script = `local notes = sdk.notes.list_notes()
		local made = sdk.notes.create_note({ text = "approved" })
		return { read = #notes[2].text, made = made.text }`
	accept := map[string]any{"action": "accept", "content": map[string]any{}}
	for i, tc := range []struct {
		name           string
		shared, onHold bool // a state_dir; the retry sent to the replica holding the execution
	}{
		{"state_dir, resumed by the other replica", true, false},
		{"state_dir, resumed in place", true, true},
		{"no state_dir", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newNotesAPI(t)
			api.notes["core"] = append(api.notes["core"], big)
			replicas, iss, ioDir := startApprovalReplicas(t, api, "", tc.shared)
			kept := func() []string {
				names, _ := filepath.Glob(filepath.Join(filepath.Dir(ioDir), "states", "paused-*"))
				return names
			}
			holder, other := replicas[0].url, replicas[1].url
			if tc.onHold {
				other = holder
			}
			token := iss.Token(t, "RS256", "alice")
			first := postModern(t, holder, token, modernCall(10*i+1, script, "", nil))
			state, _ := first["requestState"].(string)
			if first["resultType"] != "input_required" || state == "" {
				t.Fatalf("the first call: %v", first)
			}
			if len(state) > 64<<10 {
				t.Errorf("the requestState is %d bytes: the prefix travelled in it", len(state))
			}
			if n := len(kept()); tc.shared && n != 1 {
				t.Errorf("the state_dir keeps %d prefixes, want the pause's", n)
			}
			retry := postModern(t, other, token, modernCall(10*i+2, script, state, accept))
			if !tc.shared {
				if text := fmt.Sprint(retry["structuredContent"]); retry["isError"] != true ||
					!strings.Contains(text, "resumes only in the process that paused it") || !strings.Contains(text, "nothing ran") {
					t.Errorf("the retry on the other replica: %v", retry)
				}
				if posts := api.count(http.MethodPost); posts != 0 {
					t.Fatalf("%d POSTs after a refused retry", posts)
				}
				retry = postModern(t, holder, token, modernCall(10*i+3, script, state, accept))
			}
			sc, _ := retry["structuredContent"].(map[string]any)
			if sc == nil || sc["error"] != nil {
				t.Fatalf("the retry: %v", retry)
			}
			if got, _ := sc["result"].(map[string]any); got["made"] != "approved" || got["read"] != float64(len(big)) {
				t.Errorf("result %v, want the note made and the %d bytes read", got, len(big))
			}
			if gets, posts := api.count(http.MethodGet), api.count(http.MethodPost); gets != 1 || posts != 1 {
				t.Errorf("the API got %d GETs and %d POSTs, want each once", gets, posts)
			}
			if left := kept(); len(left) != 0 {
				t.Errorf("the state_dir keeps %q after the state was spent", left)
			}
		})
	}
}
