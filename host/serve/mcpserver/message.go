package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// Message is one message of the streamable HTTP transport, decoded once:
// the hosted mode's handler decodes a POST's body for its access log and
// its rate limit (DecodeMessage), and hands the message on in the
// request's context (WithMessage), so that the transport reads neither the
// body nor its _meta again.
type Message struct {
	body []byte
	env  envelope
	// err is why the body is not one JSON-RPC object, nil if it is.
	err error
	// tool is params.name; metaVersion the protocol version params._meta
	// declares (2026-07-28 and later).
	tool        string
	metaVersion string
}

// DecodeMessage decodes a POST's body as one JSON-RPC message. A body
// that is not a JSON object, or has members of the wrong types, decodes
// with what could be read (its method, say); the transport refuses it.
func DecodeMessage(body []byte) *Message {
	m := &Message{body: body}
	if m.err = json.Unmarshal(body, &m.env); m.err != nil {
		return m
	}
	var p struct {
		Name string    `json:"name"`
		Meta *mcp.Meta `json:"_meta"`
	}
	_ = json.Unmarshal(m.env.Params, &p) // params of the wrong type are mcp-go's to refuse
	m.tool, m.metaVersion = p.Name, p.Meta.ProtocolVersion()
	return m
}

// Method is the message's method ("" for a response).
func (m *Message) Method() string { return m.env.Method }

// Tool is the tool a tools/call names, "" for other messages.
func (m *Message) Tool() string {
	if m.env.Method != string(mcp.MethodToolsCall) {
		return ""
	}
	return m.tool
}

type messageKey struct{}

// WithMessage returns ctx with m, the body of the request it belongs to,
// for the HTTP transport.
func WithMessage(ctx context.Context, m *Message) context.Context {
	return context.WithValue(ctx, messageKey{}, m)
}

// messageFrom returns the message a request's context holds, nil if none.
func messageFrom(ctx context.Context) *Message {
	m, _ := ctx.Value(messageKey{}).(*Message)
	return m
}
