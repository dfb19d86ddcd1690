package config

import (
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/testfile"
)

// [[policy]] entries resolve in order with their lines; [effects]
// default, approval_timeout, state_key (hex, base64, an environment
// variable) and previous_state_keys are read and checked.
func TestResolveEffects(t *testing.T) {
	hexKey := strings.Repeat("ab", 32)
	b64Key := "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s="
	env := func(k string) string { return map[string]string{"KEY": hexKey, "SHORT": "abc"}[k] }
	cases := []struct {
		name, text string
		err        string
		check      func(t *testing.T, s EffectsSettings)
	}{
		{name: "none", text: "", check: func(t *testing.T, s EffectsSettings) {
			if len(s.Rules) != 0 || s.ApprovalTimeout != DefaultApprovalTimeout || !s.StateKey.IsZero() {
				t.Errorf("%+v", s)
			}
		}},
		{name: "rules and lines", text: "[effects]\ndefault = \"ask\"\napproval_timeout = \"2m\"\n\n[[policy]]\nname = \"a\"\nwhen = 'effect.method == \"DELETE\"'\naction = \"deny\"\n\n# two\n[[policy]]\nname = \"b\"\nwhen = \"true\"\naction = \"allow\"\n",
			check: func(t *testing.T, s EffectsSettings) {
				if len(s.Rules) != 2 || s.Rules[0].Name != "a" || s.Rules[0].Line != 5 || s.Rules[1].Line != 11 || s.Rules[1].Action != "allow" ||
					s.Default != "ask" || s.ApprovalTimeout != 2*time.Minute {
					t.Errorf("%+v", s)
				}
			}},
		{name: "hex key", text: "[effects]\nstate_key = \"" + hexKey + "\"\n", check: func(t *testing.T, s EffectsSettings) {
			if s.StateKey.Reveal() != strings.Repeat("\xab", 32) {
				t.Errorf("key %q", s.StateKey.Reveal())
			}
		}},
		{name: "base64 key", text: "[effects]\nstate_key = \"" + b64Key + "\"\n", check: func(t *testing.T, s EffectsSettings) {
			if s.StateKey.Reveal() != strings.Repeat("\xab", 32) {
				t.Errorf("key %q", s.StateKey.Reveal())
			}
		}},
		{name: "key from env", text: "[effects]\nstate_key_env = \"KEY\"\n", check: func(t *testing.T, s EffectsSettings) {
			if len(s.StateKey.Reveal()) != 32 {
				t.Error("no key")
			}
		}},
		{name: "key with var", text: "[effects]\nstate_key = \"${KEY}\"\n", check: func(t *testing.T, s EffectsSettings) {
			if len(s.StateKey.Reveal()) != 32 {
				t.Error("no key")
			}
		}},
		{name: "short key", text: "[effects]\nstate_key_env = \"SHORT\"\n", err: "effects.state_key_env: want 32 bytes as 64 hex digits or in standard base64"},
		{name: "unset env", text: "[effects]\nstate_key_env = \"NOPE\"\n", err: "the environment variable NOPE is not set"},
		{name: "both", text: "[effects]\nstate_key = \"x\"\nstate_key_env = \"KEY\"\n", err: "give state_key or state_key_env, not both"},
		{name: "previous keys", text: "[effects]\nstate_key = \"" + hexKey + "\"\nprevious_state_keys = [\"${KEY}\", \"" + b64Key + "\"]\n", check: func(t *testing.T, s EffectsSettings) {
			if len(s.PreviousStateKeys) != 2 || s.PreviousStateKeys[0].Reveal() != strings.Repeat("\xab", 32) || s.PreviousStateKeys[1].Reveal() != strings.Repeat("\xab", 32) {
				t.Errorf("previous keys %d", len(s.PreviousStateKeys))
			}
		}},
		{name: "short previous key", text: "[effects]\nstate_key = \"" + hexKey + "\"\nprevious_state_keys = [\"${KEY}\", \"${SHORT}\"]\n", err: "effects.previous_state_keys[1]: want 32 bytes"},
		{name: "unset previous key", text: "[effects]\nstate_key = \"" + hexKey + "\"\nprevious_state_keys = [\"${NOPE}\"]\n", err: "effects.previous_state_keys[0]: "},
		{name: "previous keys alone", text: "[effects]\nprevious_state_keys = [\"${KEY}\"]\n", err: "effects.previous_state_keys: give the key that replaces them as state_key or state_key_env"},
		{name: "too many previous keys", text: "[effects]\nstate_key_env = \"KEY\"\nprevious_state_keys = [\"a\", \"b\", \"c\", \"d\", \"e\"]\n", err: "effects.previous_state_keys: 5 keys, more than 4"},
		{name: "bad timeout", text: "[effects]\napproval_timeout = \"soon\"\n", err: "effects.approval_timeout: \"soon\" is not a positive duration"},
		{name: "typo in a rule", text: "[[policy]]\nname = \"a\"\nwehn = \"true\"\n", err: `unknown key policy.wehn (did you mean "when"?)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Load(testfile.Temp(t, "toolscript.toml", c.text))
			var s EffectsSettings
			if err == nil {
				s, err = ResolveEffects(f, env)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				if strings.Contains(err.Error(), hexKey) {
					t.Error("the error shows the key")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, s)
		})
	}
}

// The state key is not part of the configuration's digest.
func TestDigestLeavesStateKeyOut(t *testing.T) {
	a := &File{Effects: Effects{StateKey: "one", PreviousStateKeys: []string{"old"}}}
	b := &File{Effects: Effects{StateKey: "two"}}
	if a.Digest() != b.Digest() {
		t.Error("the digest depends on the state key")
	}
}
