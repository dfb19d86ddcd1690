package vtscreen

import "testing"

func TestRenderShowsTheScreen(t *testing.T) {
	tests := []struct{ name, out, screen, title string }{
		{"lines", "one\ntwo\n", "one\ntwo", ""},
		{"cursor up and clear hide a line", "secret\n\x1b[1A\r\x1b[Jshown\n", "shown", ""},
		{"carriage return overwrites", "aaaa\rbb\n", "bbaa", ""},
		{"a title is no text", "\x1b]0;owned\x07x\n", "x", "owned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			screen, title := Render(tt.out)
			if screen != tt.screen || title != tt.title {
				t.Errorf("Render(%q) = %q, title %q; want %q, title %q", tt.out, screen, title, tt.screen, tt.title)
			}
		})
	}
}
