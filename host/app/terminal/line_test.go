package terminal

import (
	"strings"
	"testing"
)

func TestShowBodyIsOneLine(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"text":"hi"}`, `{"text":"hi"}`},
		{"{\n  \"a\": 1,\n\"  2. call   sdk.x.y\": \"\u009b2J\u202e\"\n}", `{"a":1,"  2. call   sdk.x.y":"\u009b2J\u202e"}`},
		{`"` + strings.Repeat("é", 150) + `"`, `"` + strings.Repeat("é", 99) + "..."},
	}
	for _, tt := range tests {
		if got := showBody([]byte(tt.body)); got != tt.want {
			t.Errorf("showBody(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}
