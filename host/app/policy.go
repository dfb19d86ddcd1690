package app

import (
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// compileRules compiles the [[policy]] rules and [effects] default of f:
// nil when it has none. An error names the file, the rule, its line and
// the position in its when.
func compileRules(f *config.File) (*policy.Set, error) {
	if f == nil {
		return nil, nil
	}
	s, err := config.ResolveEffects(f, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", f.Path(), err)
	}
	if len(s.Rules) == 0 && (s.Default == "" || s.Default == "allow") {
		return nil, nil
	}
	def, err := effectsDefault(s.Default)
	if err != nil {
		return nil, fmt.Errorf("config %s: effects.default: %w", f.Path(), err)
	}
	rules := make([]policy.Rule, len(s.Rules))
	for i, r := range s.Rules {
		rules[i] = policy.Rule{Name: r.Name, When: r.When, Action: r.Action, Line: r.Line}
	}
	set, err := policy.Compile(rules, def)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", f.Path(), err)
	}
	return set, nil
}

// localWho is the user and client of a run on this machine (run, and
// serve's stdio mode): the OS user as sub, toolscript as the client.
func localWho(version string) policy.Who {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	return policy.Who{Sub: name, Claims: map[string]any{}, ClientName: "toolscript", ClientVersion: version}
}

// effectsDefault is [effects] default's action: allow when unset.
func effectsDefault(name string) (effects.Action, error) {
	if name == "" {
		return effects.ActionAllow, nil
	}
	return policy.ParseAction(name)
}

// approvalTimeout is the configuration's [effects] approval_timeout (its
// default without a configuration).
func approvalTimeout(f *config.File) time.Duration {
	if f == nil {
		return config.DefaultApprovalTimeout
	}
	s, err := config.ResolveEffects(f, os.Getenv)
	if err != nil {
		return config.DefaultApprovalTimeout // Load checked it; compileRules reports a failure
	}
	return s.ApprovalTimeout
}

// pausing returns the sealer of paused executions' states, with the
// configuration's [effects] state_key (a random key of this process's own
// when unset) sealing and previous_state_keys opening too, and state_dir, the replicas' shared directory, as where
// they remember the states they resumed and keep a prefix too large to
// travel; and the approval timeout.
func pausing(f *config.File) (*requeststate.Sealer, time.Duration, error) {
	s, err := config.ResolveEffects(f, os.Getenv)
	if err != nil {
		return nil, 0, fmt.Errorf("config %s: %w", f.Path(), err)
	}
	var key requeststate.Key
	if s.StateKey.IsZero() {
		key, err = requeststate.NewKey()
	} else {
		key, err = requeststate.KeyFrom([]byte(s.StateKey.Reveal()))
	}
	if err != nil {
		return nil, 0, fmt.Errorf("effects.state_key: %w", err)
	}
	keys := []requeststate.Key{key}
	for i, previous := range s.PreviousStateKeys {
		k, err := requeststate.KeyFrom([]byte(previous.Reveal()))
		if err != nil {
			return nil, 0, fmt.Errorf("effects.previous_state_keys[%d]: %w", i, err)
		}
		keys = append(keys, k)
	}
	spent := requeststate.NewSpent(0)
	if s.StateDir != "" {
		if spent, err = requeststate.NewSharedSpent(0, s.StateDir); err != nil {
			return nil, 0, fmt.Errorf("effects.state_dir: %w", err)
		}
	}
	sealer, err := requeststate.NewSealer(s.StateDir, spent, keys...)
	return sealer, s.ApprovalTimeout, err
}
