// Package policy owns the rules of a configuration's [[policy]] entries:
// each a name, a `when` in CEL (github.com/google/cel-go, now
// cel.dev/cel-go) and an action (allow, deny, ask), and the default
// action of [effects] default. It compiles and type-checks them once,
// when the configuration loads, over the one CEL environment of what a
// rule sees (`effect`: effects.Facts; `user`; `client`), and decides an
// effect by the first rule whose `when` is true: a Set, bound to one
// execution's user and client, is the effects.Rules of its Run.
//
// What holds: a rule is type-checked (a field no effect has, a `when`
// that is not bool, are errors naming the rule and the line:column); its
// evaluation is bounded by CEL's cost limit (a `when` too costly stops
// and denies); a `when` that fails at run time (no such key, ...) denies,
// and the reason says why; at most MaxRules rules of at most MaxWhenBytes
// each.
package policy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
)

// The bounds of a rule set.
const (
	// MaxRules is how many rules a configuration may hold.
	MaxRules = 10000
	// MaxWhenBytes bounds one rule's `when`.
	MaxWhenBytes = 4096
	// CostLimit bounds one evaluation of a `when`, in CEL's cost units
	// (about one per operation and per element a comprehension visits):
	// past it the evaluation stops and the effect is denied.
	CostLimit = 100000
)

// Rule is one [[policy]] entry as the configuration holds it.
type Rule struct {
	Name   string
	When   string
	Action string
	// Line is the line of the entry in its file (0 when unknown), for
	// errors.
	Line int
}

// User is what a rule sees as `user`: the token's subject and claims
// (hosted), or the OS user as sub (stdio and run).
type User struct {
	Sub    string         `cel:"sub"`
	Claims map[string]any `cel:"claims"`
}

// Client is what a rule sees as `client`: the MCP client's name and
// version as it declared them ("toolscript" under run).
type Client struct {
	Name    string `cel:"name"`
	Version string `cel:"version"`
}

// Who is the user and client of one execution.
type Who struct {
	Sub           string
	Claims        map[string]any
	ClientName    string
	ClientVersion string
}

// Set is a compiled rule set and its default action. It is safe for
// concurrent use.
type Set struct {
	rules []compiled
	// partial are the rules' programs for Static (partial evaluation),
	// made on its first use.
	partialOnce sync.Once
	partial     []cel.Program
	partialErr  error
	def         effects.Action
	// safe is whether some rule names effect.safe (then safe effects are
	// decided too); request whether some rule names what a call's request
	// tells (NeedsRequest).
	safe, request bool
	env           *cel.Env
}

type compiled struct {
	name   string
	action effects.Action
	prg    cel.Program
	ast    *cel.Ast
	// guards are the `effect.FIELD == "text"` conjuncts at the top of
	// the rule's when: an effect that fails one makes it false, without
	// evaluating it.
	guards []guard
}

// guard is one `effect.FIELD == "text"` a when requires.
type guard struct {
	field func(*effects.Facts) string
	want  string
}

// guardFields are the facts a guard may compare.
var guardFields = map[string]func(*effects.Facts) string{
	"kind":      func(f *effects.Facts) string { return f.Kind },
	"api":       func(f *effects.Facts) string { return f.API },
	"function":  func(f *effects.Facts) string { return f.Function },
	"operation": func(f *effects.Facts) string { return f.Operation },
	"method":    func(f *effects.Facts) string { return f.Method },
	"path":      func(f *effects.Facts) string { return f.Path },
	"url":       func(f *effects.Facts) string { return f.URL },
}

// guardsOf finds the guards of a when: the `effect.FIELD == "text"` (or
// `"text" == effect.FIELD`) among its top-level && conjuncts. A false
// conjunct makes CEL's && false whatever the others do (errors
// included), so skipping the rule when one fails changes nothing.
func guardsOf(e ast.Expr, out []guard) []guard {
	if e.Kind() != ast.CallKind {
		return out
	}
	call := e.AsCall()
	args := call.Args()
	switch {
	case call.FunctionName() == operators.LogicalAnd && len(args) == 2:
		return guardsOf(args[1], guardsOf(args[0], out))
	case call.FunctionName() == operators.Equals && len(args) == 2:
		for _, pair := range [2][2]ast.Expr{{args[0], args[1]}, {args[1], args[0]}} {
			sel, lit := pair[0], pair[1]
			if sel.Kind() != ast.SelectKind || lit.Kind() != ast.LiteralKind || sel.AsSelect().IsTestOnly() {
				continue
			}
			op := sel.AsSelect().Operand()
			text, isText := lit.AsLiteral().(types.String)
			field := guardFields[sel.AsSelect().FieldName()]
			if op.Kind() == ast.IdentKind && op.AsIdent() == "effect" && isText && field != nil {
				return append(out, guard{field: field, want: string(text)})
			}
		}
	}
	return out
}

// The CEL type names of the variables (ext.NativeTypes names a Go struct
// by its package and type).
const (
	effectType = "effects.Facts"
	userType   = "policy.User"
	clientType = "policy.Client"
)

// newEnv is the one CEL environment every rule is compiled in.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[effects.Facts](), reflect.TypeFor[User](), reflect.TypeFor[Client](), ext.ParseStructTags(true)),
		cel.Variable("effect", cel.ObjectType(effectType)),
		cel.Variable("user", cel.ObjectType(userType)),
		cel.Variable("client", cel.ObjectType(clientType)),
		ext.Strings(),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		cel.ParserRecursionLimit(64),
		cel.ParserExpressionSizeLimit(MaxWhenBytes),
	)
}

// Compile compiles rules, in order, and the default action def. An error
// names every rule that does not compile (its name, its entry's line and
// the position in `when`), at most 10 of them.
func Compile(rules []Rule, def effects.Action) (*Set, error) {
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("%d [[policy]] rules, more than %d", len(rules), MaxRules)
	}
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("policy: the CEL environment: %w", err)
	}
	s := &Set{def: def, env: env, rules: make([]compiled, 0, len(rules))}
	var problems []string
	seen := make(map[string]int, len(rules))
	for i, r := range rules {
		c, err := compileRule(env, r, i, seen)
		if err != nil {
			problems = append(problems, err.Error())
			if len(problems) == 10 {
				problems = append(problems, "(more not checked)")
				break
			}
			continue
		}
		s.safe = s.safe || names(c.ast, "safe")
		s.request = s.request || names(c.ast, requestFacts...)
		s.rules = append(s.rules, c)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return s, nil
}

// ParseAction reads an action (a rule's, [effects] default): allow, deny
// or ask; an error suggests the closest.
func ParseAction(s string) (effects.Action, error) {
	a, err := effects.ParseAction(s)
	if err != nil {
		if close := catalog.CloseMatches(s, []string{"allow", "deny", "ask"}, 1); len(close) > 0 {
			return a, fmt.Errorf("%w (did you mean %q?)", err, close[0])
		}
	}
	return a, err
}

// where names rule i in an error.
func where(r Rule, i int) string {
	s := fmt.Sprintf("[[policy]] %d", i+1)
	if r.Name != "" {
		s += fmt.Sprintf(" %q", r.Name)
	}
	if r.Line > 0 {
		s += fmt.Sprintf(" (line %d)", r.Line)
	}
	return s
}

func compileRule(env *cel.Env, r Rule, i int, seen map[string]int) (compiled, error) {
	at := where(r, i)
	switch {
	case strings.TrimSpace(r.Name) == "":
		return compiled{}, fmt.Errorf("%s: name is empty: every rule needs a name, which decisions and errors quote", at)
	case seen[r.Name] > 0:
		return compiled{}, fmt.Errorf("%s: name %q is also rule %d's: names must be unique", at, r.Name, seen[r.Name])
	case strings.TrimSpace(r.When) == "":
		return compiled{}, fmt.Errorf(`%s: when is empty: want a CEL expression such as 'effect.method == "DELETE"'`, at)
	case len(r.When) > MaxWhenBytes:
		return compiled{}, fmt.Errorf("%s: when is %d bytes, more than %d", at, len(r.When), MaxWhenBytes)
	}
	seen[r.Name] = i + 1
	action, err := ParseAction(r.Action)
	if err != nil {
		return compiled{}, fmt.Errorf("%s: action: %w", at, err)
	}
	checked, iss := env.Compile(r.When)
	if iss != nil && iss.Err() != nil {
		return compiled{}, fmt.Errorf("%s: when: %s", at, describeIssues(iss, r.When))
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return compiled{}, fmt.Errorf("%s: when is of type %s: it must be bool (a condition, such as 'effect.kind == \"write\"')", at, cel.FormatCELType(checked.OutputType()))
	}
	prg, err := env.Program(checked, cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return compiled{}, fmt.Errorf("%s: when: %w", at, err)
	}
	return compiled{name: r.Name, action: action, prg: prg, ast: checked, guards: guardsOf(checked.NativeRep().Expr(), nil)}, nil
}

// variableOf is the variable of each type.
var variableOf = map[string]string{effectType: "effect", userType: "user", clientType: "client"}

// fieldsOf are the CEL field names of each variable's type, for
// suggestions.
var fieldsOf = map[string][]string{
	effectType: celFields(reflect.TypeFor[effects.Facts]()),
	userType:   celFields(reflect.TypeFor[User]()),
	clientType: celFields(reflect.TypeFor[Client]()),
}

func celFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		out = append(out, f.Tag.Get("cel"))
	}
	return out
}

// describeIssues words CEL's errors: each line:column and message, an
// undefined field with the fields there are and the closest.
func describeIssues(iss *cel.Issues, src string) string {
	var parts []string
	for _, e := range iss.Errors() {
		loc := e.Location
		msg := fmt.Sprintf("%d:%d: %s", loc.Line(), loc.Column()+1, e.Message)
		if name, ok := strings.CutPrefix(e.Message, "undefined field '"); ok {
			name = strings.TrimSuffix(name, "'")
			for typ, fields := range fieldsOf {
				if !fieldOf(src, loc.Line(), loc.Column(), typ) {
					continue
				}
				if close := catalog.Closest(name, fields); close != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", close)
				}
				msg += " (" + variableOf[typ] + " has " + strings.Join(fields, ", ") + ")"
			}
		}
		parts = append(parts, msg)
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, "; ")
}

// fieldOf guesses which variable's field an error at line:col is on: the
// identifier before the dot.
func fieldOf(src string, line, col int, typ string) bool {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) || col > len(lines[line-1]) {
		return false
	}
	before := strings.TrimRight(lines[line-1][:col], " \t.")
	return strings.HasSuffix(before, variableOf[typ])
}

// requestFacts are the facts only a call's request tells.
var requestFacts = []string{"url", "path", "params", "body", "args", "headers"}

// names reports whether a checked `when` selects one of fields of
// effect, or takes effect as a whole (which may reach any of them).
func names(checked *cel.Ast, fields ...string) bool {
	root := ast.NavigateAST(checked.NativeRep())
	found := ast.MatchDescendants(root, func(e ast.NavigableExpr) bool {
		if e.Kind() == ast.IdentKind && e.AsIdent() == "effect" {
			parent, ok := e.Parent()
			return !ok || parent.Kind() != ast.SelectKind // effect as a value
		}
		if e.Kind() != ast.SelectKind {
			return false
		}
		sel := e.AsSelect()
		op := sel.Operand()
		return slices.Contains(fields, sel.FieldName()) && op.Kind() == ast.IdentKind && op.AsIdent() == "effect"
	})
	return len(found) > 0
}

// Len is how many rules s has.
func (s *Set) Len() int { return len(s.rules) }

// DecidesSafe reports whether some rule names effect.safe.
func (s *Set) DecidesSafe() bool { return s.safe }

// NeedsRequest reports whether some rule names what only a call's
// request tells: url, path, params, body, args or headers.
func (s *Set) NeedsRequest() bool { return s.request }

// Decide decides the effect f describes for who: the first rule whose
// `when` is true, else the default. A `when` that fails (a runtime error,
// its cost limit) decides deny, and the Verdict's Reason says why.
func (s *Set) Decide(f *effects.Facts, who *Who) effects.Verdict {
	act := &activation{effect: f, user: User{Sub: who.Sub, Claims: who.Claims}, client: Client{Name: who.ClientName, Version: who.ClientVersion}}
	if act.user.Claims == nil {
		act.user.Claims = map[string]any{}
	}
	if f.Params == nil {
		f.Params = map[string]any{}
	}
	if f.Args == nil {
		f.Args = map[string]any{}
	}
	if f.Headers == nil {
		f.Headers = map[string]string{}
	}
rules:
	for i := range s.rules {
		r := &s.rules[i]
		for _, g := range r.guards {
			if g.field(f) != g.want {
				continue rules
			}
		}
		out, _, err := r.prg.Eval(act)
		if err != nil {
			return effects.Verdict{Action: effects.ActionDeny, Rule: r.name, Reason: "its when failed: " + err.Error()}
		}
		if b, ok := out.Value().(bool); ok && b {
			return effects.Verdict{Action: r.action, Rule: r.name}
		}
	}
	return effects.Verdict{Action: s.def}
}

// For binds s to one execution's user and client: the Rules of its Run.
// A nil s is no rules.
func (s *Set) For(who Who) effects.Rules {
	if s == nil {
		return nil
	}
	return bound{set: s, who: &who}
}

type bound struct {
	set *Set
	who *Who
}

func (b bound) Decide(f *effects.Facts) effects.Verdict { return b.set.Decide(f, b.who) }
func (b bound) DecidesSafe() bool                       { return b.set.safe }
func (b bound) NeedsRequest() bool                      { return b.set.request }

// activation gives a rule its three variables without a map.
type activation struct {
	effect *effects.Facts
	user   User
	client Client
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "effect":
		return a.effect, true
	case "user":
		return &a.user, true
	case "client":
		return &a.client, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// unknownFacts are what Static does not know of a call: everything but
// its kind, safety, api, function, operation and method.
var unknownFacts = []string{"url", "path", "to", "params", "body", "args", "headers", "bytes", "sha256"}

// Static decides a call from what is known before it is made (f's Kind,
// Safe, API, Function, Operation and Method; lint --effects): the verdict
// of the first rule whose when is true whatever the arguments, the user
// and the client, else the default. known is false when a rule before
// that depends on what is not known (the arguments, the user): then v
// names that rule.
func (s *Set) Static(f *effects.Facts) (v effects.Verdict, known bool) {
	s.partialOnce.Do(func() {
		for _, r := range s.rules {
			prg, err := s.env.Program(r.ast, cel.CostLimit(CostLimit), cel.EvalOptions(cel.OptPartialEval))
			if err != nil {
				s.partialErr = err
				return
			}
			s.partial = append(s.partial, prg)
		}
	})
	if s.partialErr != nil {
		return effects.Verdict{Reason: s.partialErr.Error()}, false
	}
	patterns := []*cel.AttributePatternType{cel.AttributePattern("user"), cel.AttributePattern("client")}
	for _, name := range unknownFacts {
		patterns = append(patterns, cel.AttributePattern("effect").QualString(name))
	}
	act, err := cel.PartialVars(map[string]any{"effect": f, "user": &User{}, "client": &Client{}}, patterns...)
	if err != nil {
		return effects.Verdict{Reason: err.Error()}, false
	}
	for i, prg := range s.partial {
		out, _, err := prg.Eval(act)
		switch {
		case out != nil && types.IsUnknown(out):
			return effects.Verdict{Action: s.rules[i].action, Rule: s.rules[i].name}, false
		case err != nil:
			return effects.Verdict{Action: effects.ActionDeny, Rule: s.rules[i].name, Reason: "its when failed: " + err.Error()}, true
		}
		if b, ok := out.Value().(bool); ok && b {
			return effects.Verdict{Action: s.rules[i].action, Rule: s.rules[i].name}, true
		}
	}
	return effects.Verdict{Action: s.def}, true
}
