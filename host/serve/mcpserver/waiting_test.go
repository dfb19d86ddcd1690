package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/internal/testrpc"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestHTTPWaitingCallsHoldLittle: the calls of a user waiting for the
// user's execution slot hold at most the user's budget of request bytes
// (hosted.Config.MaxRequestBytesPerUser), however many they are and
// however their requests were padded: a _meta of many small values, which
// decode to tens of times their size, or of one long string. Those past
// the budget are refused at once.
func TestHTTPWaitingCallsHoldLittle(t *testing.T) {
	const sent = 8
	const maxScript = 256 << 10
	maxBody := int64(maxScript*6 + 1<<20) // Server.MaxRequestBytes
	perUser := hosted.DefaultRequestBodiesPerUser * maxBody
	tests := []struct {
		name    string
		pad     string
		waiting int // how many fit the budget at once
		status  int // the answer of the others
	}{
		{"many small values", `[` + strings.TrimSuffix(strings.Repeat(`{"a":0},`, 250_000), ",") + `]`, 0, http.StatusRequestEntityTooLarge},
		{"fewer small values", `[` + strings.TrimSuffix(strings.Repeat(`{"a":0},`, 10_000), ",") + `]`, 3, http.StatusTooManyRequests},
		{"one long string", `"` + strings.Repeat("x", 2_000_000) + `"`, 2, http.StatusTooManyRequests},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHosted(t, hostedOptions{stateless: true, maxRunning: 4, perUser: 1, queueWait: time.Minute, maxScript: maxScript})
			msgs := testrpc.Messages(h.post(t, "alice", "", testrpc.ToolCall("long", busy)))
			testrpc.Next(t, msgs) // alice's slot is taken

			body := func(id string) string {
				return `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"},"_meta":{"pad":` + tt.pad + `}}}`
			}
			token := h.token(t, "alice")
			before := heapInUse()
			ctx, cancelAll := context.WithCancel(context.Background())
			defer cancelAll()
			statuses := make(chan int, sent)
			for i := range sent {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url, strings.NewReader(body("w"+string(rune('a'+i)))))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer "+token)
				go func() {
					status := 0
					if resp, err := http.DefaultClient.Do(req); err == nil {
						status = resp.StatusCode
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					statuses <- status
				}()
			}
			for range sent - tt.waiting {
				if status := <-statuses; status != tt.status {
					t.Errorf("a call past the budget: status %d, want %d", status, tt.status)
				}
			}
			if err := h.srv.WaitTrackedCalls(testwait.Context(t), func(calls int) bool { return calls == 1+tt.waiting }); err != nil {
				t.Fatal(err)
			}
			grown := int64(heapInUse()) - int64(before)
			t.Logf("%d calls of %d bytes sent, %d waiting, hold %d bytes", sent, len(body("wa")), tt.waiting, grown)
			if grown > perUser {
				t.Errorf("%d calls of %d bytes, %d of them waiting for a slot, hold %d bytes of heap, more than the user's %d",
					sent, len(body("wa")), tt.waiting, grown, perUser)
			}
			cancelAll()
			for range tt.waiting {
				<-statuses
			}
			h.post(t, "alice", "", cancel("long"))
		})
	}
}
