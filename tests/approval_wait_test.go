package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testwait"
)

// silentPerson is a client's elicitation handler that tells the test it
// was asked and never answers.
type silentPerson struct{ asked chan<- string }

func (p silentPerson) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p.asked <- req.Params.Message
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestApprovalWaitIsBounded: a person asked through elicitation/create
// who never answers: once [effects] approval_timeout has passed, the
// script stops with kind approval saying so, and the effect is not made.
// The wait is not the script's time: its own timeout, shorter, does not
// end it.
func TestApprovalWaitIsBounded(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	ioDir := filepath.Join(dir, "files")
	testconfig.Write(t, dir, "[[policy]]\nname = \"writes need a person\"\nwhen = 'effect.kind == \"write\"'\naction = \"ask\"\n"+
		"[effects]\napproval_timeout = \"1s\"\n")
	asked := make(chan string, 1)
	c := gatewayClient(t, "stdio", []client.ClientOption{client.WithElicitationHandler(silentPerson{asked})},
		"--config", filepath.Join(dir, "toolscript.toml"), "--io-dir", ioDir)
	ctx, cancel := context.WithCancel(testwait.Context(t))
	defer cancel() // the handler's wait ends with the test
	_, out := callScript(t, ctx, c, map[string]any{"script": `io.open("out.txt", "w"):write("x"):close() return "written"`, "timeout_ms": 300})
	if out.Error == nil || out.Error.Kind != "approval" || !strings.Contains(out.Error.Message, "no answer within 1s") {
		t.Errorf("result %s, error %+v; want kind approval, no answer within 1s", out.Result, out.Error)
	}
	select {
	case q := <-asked:
		if !strings.Contains(q, `"writes need a person"`) || !strings.Contains(q, "out.txt") {
			t.Errorf("the question: %s", q)
		}
	default:
		t.Error("the person was not asked")
	}
	if _, err := os.Stat(filepath.Join(ioDir, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("out.txt: %v; want it not written", err)
	}
}
