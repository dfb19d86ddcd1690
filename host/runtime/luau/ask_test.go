package luau_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// slowPerson answers Approve after taking an hour.
type slowPerson struct{}

func (slowPerson) Ask(effects.Question) (effects.Answer, error) {
	time.Sleep(time.Hour)
	return effects.Approve, nil
}

// askingCaller asks its Run about every call of list_pets (id 1), as the
// sdk's Decide does for a rule's ask, and answers with the answer; the
// other ids wait for the execution's end (slow).
type askingCaller struct{ fx *effects.Run }

func (c askingCaller) Call(ctx context.Context, id uint32, _ json.RawMessage) *sdkcall.Response {
	if id != 1 {
		<-ctx.Done()
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: "sdk.slow: " + ctx.Err().Error()}
	}
	answer, err := c.fx.Ask(effects.Question{Effect: effects.Effect{Op: effects.OpCall, Function: "sdk.pets.list_pets"}, Rule: "r"})
	if err != nil {
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: err.Error()}
	}
	text, _ := json.Marshal(answer.String())
	return &sdkcall.Response{Status: 200, JSON: text}
}

// TestWaitingForAPersonIsNotTheScriptsTime: a person who takes an hour to
// answer does not use up a script's second; the second still holds for
// what the script does after the answer.
func TestWaitingForAPersonIsNotTheScriptsTime(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      want
	}{
		{"the answer comes after an hour", `return sdk.list_pets({})`, want{result: `"approve"`}},
		{"twice", `sdk.list_pets({}) return sdk.list_pets({})`, want{result: `"approve"`}},
		{"the limit holds after the wait", `sdk.list_pets({}) return sdk.slow({})`, want{kind: result.Timeout, message: "time limit of 1s"}},
		{"in parallel", `return parallel({function() return sdk.list_pets({}) end, function() return sdk.list_pets({}) end})`, want{result: `["approve","approve"]`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The runtime is the bubble's: its background work too.
				rt, err := luau.New(context.Background(), luau.Config{SDK: sdkManifest, PoolSize: 1})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close(context.Background())
				fx := effects.New(effects.Real).WithAsker(slowPerson{})
				res := rt.Execute(context.Background(), luau.Script{Source: []byte(tt.src), SDK: askingCaller{fx}, Effects: fx,
					Limits: luau.Limits{Timeout: time.Second}})
				check(t, res, tt.want)
			})
		})
	}
}
