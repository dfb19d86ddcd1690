package upstream

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestProgressRoutes(t *testing.T) {
	// Notifications reach the call whose token they name while it is in
	// flight; a token never given, a forgotten one, a number token and a
	// progress that is not a number are dropped; the message is capped.
	var r progressRoutes
	type note struct {
		progress float64
		total    *float64
		message  string
	}
	var got []note
	token, done := r.open(func(p float64, total *float64, m string) { got = append(got, note{p, total, m}) })
	other, otherDone := r.open(func(float64, *float64, string) { t.Error("the other call got a notification") })
	defer otherDone()
	if token == other {
		t.Fatalf("two calls share the token %s", token)
	}
	send := func(fields map[string]any) {
		r.deliver(mcp.JSONRPCNotification{Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationProgress), Params: mcp.NotificationParams{AdditionalFields: fields}}})
	}
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	send(map[string]any{"progressToken": token, "progress": 1.0, "total": 4.0})
	send(map[string]any{"progressToken": token, "progress": 2.0, "message": string(long)})
	send(map[string]any{"progressToken": "ts-progress-999", "progress": 3.0})
	send(map[string]any{"progressToken": 1.0, "progress": 3.0})
	send(map[string]any{"progressToken": token, "progress": "3"})
	done()
	send(map[string]any{"progressToken": token, "progress": 4.0})
	if len(got) != 2 || got[0].progress != 1 || got[0].total == nil || *got[0].total != 4 || got[1].progress != 2 {
		t.Fatalf("delivered %+v", got)
	}
	if n := len(got[1].message); n > maxProgressMessage+40 {
		t.Errorf("a message of %d bytes was forwarded", n)
	}
}
