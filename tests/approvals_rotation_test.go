package tests

import (
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
