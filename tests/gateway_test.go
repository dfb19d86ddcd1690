package tests

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// progressNote is one notifications/progress a client received.
type progressNote struct {
	progress float64
	total    *float64
	message  string
}

// progressOf collects the progress notifications c receives for token.
func progressOf(c *client.Client, token string) func() []progressNote {
	var mu sync.Mutex
	var notes []progressNote
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		f := n.Params.AdditionalFields
		if n.Method != string(mcp.MethodNotificationProgress) || f["progressToken"] != token {
			return
		}
		note := progressNote{}
		note.progress, _ = f["progress"].(float64)
		if t, ok := f["total"].(float64); ok {
			note.total = &t
		}
		note.message, _ = f["message"].(string)
		mu.Lock()
		notes = append(notes, note)
		mu.Unlock()
	})
	return func() []progressNote {
		mu.Lock()
		defer mu.Unlock()
		return append([]progressNote(nil), notes...)
	}
}

// TestGatewayUpstreamProgress: an upstream tool's progress reaches the
// client whose execute_script call runs it, under stdio and hosted HTTP,
// from a stdio and a streamable HTTP upstream (server-everything's
// long-running operation, which reports progress only when its call has
// a progress token): as messages naming the function, with progress that
// keeps increasing and stays the script's own.
func TestGatewayUpstreamProgress(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	stdio := "--mcp=ev=" + testupstreams.Shell(testupstreams.Everything(t))
	step := regexp.MustCompile(`^sdk\.ev\.trigger_long_running_operation: [1-4]/4$`)
	for _, tc := range []struct{ over, upstream string }{
		{"stdio", "stdio"},
		{"http", "stdio"},
		{"stdio", "http"},
	} {
		t.Run(tc.over+" client, "+tc.upstream+" upstream", func(t *testing.T) {
			mcpFlag := stdio
			if tc.upstream == "http" {
				mcpFlag = "--mcp=ev=" + testupstreams.EverythingHTTP(t)
			}
			c := mcpClientOver(t, tc.over, t.TempDir(), "--no-io", mcpFlag)
			ctx := testwait.Context(t)
			for i, script := range []string{
				// Only the upstream reports: its last step is the last notification.
				`return sdk.ev.trigger_long_running_operation({ duration = 0.4, steps = 4 })`,
				// The script reported 1 of 10: the upstream's steps move it up by the least
				// step and keep its total.
				`progress(1, 10, "before") return sdk.ev.trigger_long_running_operation({ duration = 0.4, steps = 4 })`,
			} {
				token := fmt.Sprintf("gw-%s-%s-%d", tc.over, tc.upstream, i)
				notes := progressOf(c, token)
				res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
					Name: "execute_script", Arguments: map[string]any{"script": script}, Meta: &mcp.Meta{ProgressToken: token}}})
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %v", script, err, textsOf(res))
				}
				got := notes()
				if len(got) == 0 {
					t.Fatalf("%s: no progress notification", script)
				}
				var upstream []progressNote
				for j, n := range got {
					if j > 0 && n.progress <= got[j-1].progress {
						t.Errorf("%s: progress went from %v to %v", script, got[j-1].progress, n.progress)
					}
					if strings.HasPrefix(n.message, "sdk.ev.") {
						upstream = append(upstream, n)
						if !step.MatchString(n.message) {
							t.Errorf("%s: upstream progress message %q", script, n.message)
						}
					}
				}
				last := got[len(got)-1]
				if last.message != "sdk.ev.trigger_long_running_operation: 4/4" {
					t.Errorf("%s: the last notification is %+v, want the upstream's last step", script, last)
				}
				if i == 1 {
					if got[0].message != "before" || got[0].progress != 1 {
						t.Errorf("%s: first notification %+v", script, got[0])
					}
					for _, n := range upstream {
						if n.progress <= 1 || n.progress >= 1.000001 || n.total == nil || *n.total != 10 {
							t.Errorf("%s: upstream step %+v: want just above the script's 1 of 10", script, n)
						}
					}
				}
			}
		})
	}
}
