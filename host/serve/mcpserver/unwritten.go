package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// UnwrittenBudgetName is the name of a user's budget of unwritten
// responses, as the configuration calls it.
const UnwrittenBudgetName = "max_unwritten_bytes_per_user"

// droppedResultBytes bounds the result that replaces one whose response
// found no room: it holds no budget, so it is kept small.
const droppedResultBytes = 4 << 10

// responseOverhead covers what a tools/call response adds to its
// result's text: the JSON-RPC envelope, the id, the content's framing.
const responseOverhead = 512

// holdResponse counts the response of an execution against the host's
// budgets (Config.ResponseBudget, and the user's MaxUnwrittenBytesPerUser)
// until respond has written it, and returns it. The execution still holds
// its slot: it waits here for room in the process's budget, as long as
// its call lives, so that the results waiting for room are bounded by the
// slots. When the user's own budget has no room (their clients do not
// read what they were sent) or the response is larger than a budget, or
// the call ends first, the result is dropped: the response says so
// instead, in a result small enough to need no budget.
func (s *Server) holdResponse(ctx context.Context, user auth.User, res *result.Result) *mcp.CallToolResult {
	if x, ok := ctx.Value(executionKey{}).(*execution); ok {
		res.Warnings = append(res.Warnings, x.warnings...)
	}
	out := s.present(user, res, s.resultFileDir(ctx))
	c := callFrom(ctx)
	if s.unwritten == nil || c == nil {
		return out
	}
	n := responseBytes(out, len(c.id))
	unhold, err := s.unwritten.Reserve(ctx, user, n, s.cfg.ResponseBudget)
	if err == nil {
		c.unhold = unhold
		return out
	}
	var be *limit.BytesError
	if errors.As(err, &be) && be.Waited == limit.ErrFull {
		s.cfg.Metrics.Refused(metrics.LimitUnwrittenBytes)
	}
	accesslog.FromContext(ctx).SetOutcome(metrics.OutcomeError, string(result.Limit))
	res.Value = json.RawMessage("null")
	res.Error = &result.Error{Kind: result.Limit, Message: droppedMessage(n, err)}
	res.Bound(droppedResultBytes)
	return toolResult(res)
}

// droppedMessage says why a result of an n-byte response was dropped.
func droppedMessage(n int64, err error) string {
	const ran = "the script ran, but its result was dropped: "
	var be *limit.BytesError
	if !errors.As(err, &be) {
		return ran + err.Error()
	}
	key := "[limits] max_host_bytes_total"
	if be.Name == UnwrittenBudgetName {
		key = "[server] " + UnwrittenBudgetName
	}
	switch {
	case be.Waited == limit.ErrFull:
		return fmt.Sprintf(ran+"its response needs %d bytes, and this user's responses that their clients have not yet read "+
			"leave less than that of %s (%d bytes; %s): read those responses, then run it again", n, be.Name, be.Size, key)
	case be.Waited != nil:
		return fmt.Sprintf(ran+"the call ended while its response (%d bytes) waited for room in %s (%d bytes; %s)", n, be.Name, be.Size, key)
	}
	return fmt.Sprintf(ran+"its response needs %d bytes, more than %s (%d bytes; %s)", n, be.Name, be.Size, key)
}

// responseBytes is about the size of the JSON-RPC response carrying out
// (with an id of idBytes): the structured content as it is, each text
// escaped as encoding/json escapes it.
func responseBytes(out *mcp.CallToolResult, idBytes int) int64 {
	n := int64(len(out.RawStructuredContent) + idBytes + responseOverhead)
	for _, content := range out.Content {
		if text, ok := content.(mcp.TextContent); ok {
			n += jsonStringBytes(text.Text)
		}
	}
	return n
}

// jsonStringBytes is the length of s as a JSON string by encoding/json
// (HTML characters escaped, invalid UTF-8 replaced), without its quotes.
func jsonStringBytes(s string) int64 {
	var n int64
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += int64(size)
		}
		i += size
	}
	return n
}
