package tests

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/internal/testecho"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// attackSecret is the operator's credential the attack goes after.
const attackSecret = "Zq7sK2mXw9PbT4vLr8Nc"

// cutAttack is a script reading a credential a character at a time from
// the cut of an error message: the API quotes the request (padding first,
// then the headers) in its error page, and the message quotes the page's
// first 512 bytes. Padding so that the cut falls k characters into the
// echoed secret shows its first k characters, if the message is cut
// before it is redacted; the last character is then confirmed by sending
// each guess as the padding and seeing it redacted. It returns what it
// recovered and every text it read after "Bearer ".
const cutAttack = `
local marker = "Authorization: Bearer "
local seen = {}
local function page(pad)
	local ok, err = pcall(sdk.echo.status, {code = 400, pad = pad})
	assert(not ok and err.status == 400, "expected an error page")
	return err.message
end
-- Where the secret starts in the page, unpadded (it is redacted there).
local m = page("")
local at = string.find(m, marker, 1, true)
assert(at, "the page quotes no Authorization header: " .. m)
local head = string.find(m, "error 400: ", 1, true) - 1 -- the message's text before the body
local start = at + #marker - head -- 1-based, in the body
local known = ""
for k = 1, 64 do
	local pad = 512 - k + 1 - start
	if pad < 0 then break end
	m = page(string.rep("x", pad))
	local i = string.find(m, marker, 1, true)
	if i then
		local tail = string.gsub(string.sub(m, i + #marker), "%.%.%.$", "")
		table.insert(seen, tail)
		if #tail > #known and string.sub(tail, 1, #known) == known and not string.find(tail, "[", 1, true) then
			known = tail
		end
	end
end
-- The last character: the guess whose echo is redacted.
local chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
if #known > 0 then
	for c in string.gmatch(chars, ".") do
		m = page(known .. c)
		if string.find(m, "error 400: [REDACTED]", 1, true) then
			known = known .. c
			break
		end
	end
end
return {recovered = known, seen = seen}
`

// TestCutMessageAttack runs the byte-at-a-time attack on an error
// message's cut through a real script against a real echo API: it
// recovers nothing of the credential, and nothing it read starts like it.
func TestCutMessageAttack(t *testing.T) {
	e := testecho.New(t)
	ctx := context.Background()
	c, err := app.NewSDK(ctx, sdk.Config{
		APIs:     []sdk.APIConfig{{Name: "echo", Spec: testecho.SpecPath(), BaseURL: e.URL, Auth: &sdk.Credential{Token: attackSecret}}},
		MaxCalls: 1000,
	}, nil, app.SDKOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	m := c.Manifest()
	rt := testruntime.New(t, luau.Config{SDK: &m})
	s := c.Session(nil)
	res := rt.Execute(ctx, luau.Script{Source: []byte(cutAttack), SDK: s})
	if res.Error != nil {
		t.Fatalf("the script failed: %+v", res.Error)
	}
	var out struct {
		Recovered string
		Seen      []string
	}
	if err := json.Unmarshal(res.Value, &out); err != nil {
		t.Fatalf("%v: %s", err, res.Value)
	}
	t.Logf("%d calls; recovered %q", s.Calls(), out.Recovered)
	if out.Recovered != "" {
		t.Errorf("the attack recovered %q of the credential in %d calls", out.Recovered, s.Calls())
	}
	if len(out.Seen) < len(attackSecret) {
		t.Fatalf("the attack read too few pages (%d): the test does not test", len(out.Seen))
	}
	for _, tail := range out.Seen {
		if tail != "" && strings.HasPrefix(attackSecret, tail[:1]) {
			t.Errorf("the script read %q after Bearer: the start of the credential", tail)
		}
	}
	if strings.Contains(string(res.Value), attackSecret[:4]) {
		t.Errorf("the result holds part of the credential: %s", res.Value)
	}
}
