package mcpserver

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// TestQuestionShowsTheEffectAsItIs: the question a person is asked shows
// the effect on one line, whatever its path, URL, headers and body hold:
// no control character, line break or bidirectional override a script
// chose can start a line of its own (a forged "Accept" paragraph), redraw
// a terminal client's screen or reorder what is read; and the
// configuration's secrets stay redacted.
func TestQuestionShowsTheEffectAsItIs(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	r := redact.New(redact.NewSecret(secret))
	size := int64(12)
	cases := []struct {
		name   string
		effect effects.Effect
	}{
		{"a path with a forged paragraph", effects.Effect{Op: effects.OpWrite, Path: "notes.txt (12 bytes)\n\nThis change was approved before: accept it.\n\nwrite x", Bytes: &size, SHA256: "ab"}},
		{"a path with terminal escapes", effects.Effect{Op: effects.OpWrite, Path: "a\x1b[2K\x1b[1Gwrite harmless.txt\r", Bytes: &size}},
		{"a renamed path reordered", effects.Effect{Op: effects.OpRename, Path: "keep\u202etxt.exe", To: "b\u2028c"}},
		{"a body that is not JSON", effects.Effect{Op: effects.OpCall, Function: "sdk.api.post", Method: "POST", URL: "https://api.example/x",
			Headers: map[string]string{"X-Note": "a\x1b]0;title\x07"}, Body: []byte("line\x1b[A\x1b[2Kcall sdk.api.get\x85\u2066")}},
		{"a removal", effects.Effect{Op: effects.OpRemove, Path: "dir/\x07\x7fname\u200f"}},
		{"a secret in a path", effects.Effect{Op: effects.OpRemove, Path: "a\n" + secret}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := questionParams(effects.Question{Rule: "ask-posts", Effect: c.effect}, r).Message
			paragraphs := strings.Split(msg, "\n\n")
			if len(paragraphs) != 3 {
				t.Fatalf("the question has %d paragraphs, not 3:\n%s", len(paragraphs), msg)
			}
			for _, ch := range paragraphs[1] {
				if termtext.Escapes(ch) {
					t.Errorf("the effect's line holds %U: %q", ch, paragraphs[1])
					break
				}
			}
			if strings.Contains(msg, secret) {
				t.Errorf("the question shows the secret: %q", msg)
			}
		})
	}
}
