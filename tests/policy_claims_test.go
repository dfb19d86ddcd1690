package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/internal/testconfig"
)

// TestRulesSeeClaimsAndClient: under the hosted mode a rule sees the
// verified token's claims (user.claims) and the client's name as its
// request gives it (client.name): alice, an admin, creates a note; bob,
// with the same client, is denied; alice through another client is
// denied. The API receives alice's one POST.
func TestRulesSeeClaimsAndClient(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir := t.TempDir()
	testconfig.Write(t, dir, notesSection(api.URL, "")+
		"[[policy]]\nname = \"admins, from the ops console\"\n"+
		"when = 'effect.method == \"POST\" && !(user.claims.role == \"admin\" && client.name == \"ops-console\")'\naction = \"deny\"\n")
	iss, auth := issuerArgs(t)
	p := startServe(t, dir, append([]string{"--stateless"}, auth...)...)
	token := func(sub, role string) string {
		claims := iss.Claims(sub)
		claims["role"] = role
		return authtest.Sign(t, iss.Key(t, "RS256"), claims)
	}
	const script = `local ok, err = pcall(sdk.notes.create_note, { text = "hi" }) return ok or tostring(err)`
	for _, tc := range []struct {
		who, role, client, want string
	}{
		{"alice", "admin", "ops-console", "true"},
		{"bob", "viewer", "ops-console", `denied by rule "admins, from the ops console"`},
		{"alice", "admin", "other-client", `denied by rule "admins, from the ops console"`},
	} {
		call := strings.Replace(modernCall(1, script, "", nil), `"replica-test"`, fmt.Sprintf("%q", tc.client), 1)
		res := postModern(t, p.url, token(tc.who, tc.role), call)
		sc, _ := res["structuredContent"].(map[string]any)
		if got := fmt.Sprint(sc["result"]); !strings.Contains(got, tc.want) {
			t.Errorf("%s (%s) through %s: %s, want %s", tc.who, tc.role, tc.client, got, tc.want)
		}
	}
	if posts := api.count(http.MethodPost); posts != 1 {
		t.Errorf("the API got %d POSTs, want alice's one", posts)
	}
}
