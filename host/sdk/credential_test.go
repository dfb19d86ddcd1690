package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestCredentialFormats: a Credential printed, encoded or logged shows
// none of its secrets.
func TestCredentialFormats(t *testing.T) {
	c := &Credential{Type: AuthBasic, Username: "user-name-1", Password: "pass-word-2", Token: "tok-en-3", Value: "val-ue-4"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("m", "cred", c, "creds", map[string]*Credential{"a": c})
	b, _ := json.Marshal(map[string]any{"c": c, "v": *c})
	for _, got := range []string{
		fmt.Sprintf("%v %+v %#v %s %q", c, c, c, c, c),
		fmt.Sprintf("%v %+v %#v", *c, *c, *c),
		fmt.Sprintf("%+v", map[string]*Credential{"a": c}),
		string(b), logged.String(),
	} {
		for _, s := range []string{"user-name-1", "pass-word-2", "tok-en-3", "val-ue-4"} {
			if strings.Contains(got, s) {
				t.Errorf("%s shows in %s", s, got)
			}
		}
	}
}
