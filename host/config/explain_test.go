package config

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
)

// TestLoadErrorsExplain: an unknown key and a value of the wrong type are
// named with their line, the key nearest in spelling, and what is wanted.
func TestLoadErrorsExplain(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
	}{
		{"misspelt key", "[limits]\ntimout = \"5s\"\n",
			[]string{"line 2", "unknown key limits.timout", `did you mean "timeout"`}},
		{"misspelt api key", "[apis.shop]\nspec = \"x.json\"\nbase_ulr = \"http://x\"\n",
			[]string{"line 3", "unknown key apis.shop.base_ulr", `did you mean "base_url"`}},
		{"misspelt section", "[limit]\ntimeout = \"5s\"\n",
			[]string{"unknown key limit", `did you mean "limits"`}},
		{"nothing near", "[limits]\nzzzzzzzzzz = 1\n",
			[]string{"line 2", "unknown key limits.zzzzzzzzzz"}},
		{"many unknown keys", "[limits]\n" + manyKeys(25),
			[]string{"line 2: unknown key limits.key0", "unknown key limits.key9", "and 15 more unknown keys"}},
		{"duration as a number", "[limits]\ntimeout = 5\n",
			[]string{"line 2", "limits.timeout", `a duration string such as "5s"`}},
		{"server duration as a number", "[server]\nqueue_wait = 30\n",
			[]string{"line 2", "server.queue_wait", `a duration string such as "5s"`}},
		{"number as a string", "[limits]\nmemory_limit_mb = \"64\"\n",
			[]string{"line 2", "limits.memory_limit_mb", "a whole number"}},
		{"bool as a string", "[io]\nenabled = \"yes\"\n",
			[]string{"line 2", "io.enabled", "true or false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(testfile.Temp(t, "toolscript.toml", c.text))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error = %v\nwant it to contain %q", err, want)
				}
			}
			if c.name == "nothing near" && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("error = %v: a suggestion for nothing near", err)
			}
		})
	}
}

// FuzzLoadExplains: whatever the file holds, Load returns a File or an
// error, and explaining an error never panics.
func FuzzLoadExplains(f *testing.F) {
	for _, seed := range []string{"[limits]\ntimout = \"5s\"\n", "[limits]\ntimeout = 5\n", "[apis.\"a b\"]\nspc = 1\n",
		"[[x]]\ny = 1\n", "a.\"b`c\".d = [1, {e = 2}]\n", "[io]\nenabled = \"yes\"\n"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		dir := t.TempDir()
		path := dir + "/toolscript.toml"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = Load(path)
	})
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("key" + strconv.Itoa(i) + " = 1\n")
	}
	return b.String()
}
