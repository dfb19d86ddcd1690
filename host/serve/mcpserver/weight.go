package mcpserver

// The weight of a request: what its message may cost in memory while its
// call is handled, and while an execution it started is held paused (the
// execution's context keeps the call, and so its message). Measured
// through the whole hosted server (TestHTTPWaitingCallsHoldLittle): a
// message's bytes are held about six times over (the body, the message's
// params, mcp-go's decodings of them), and each JSON value decoded into
// Go's generic types, twice, up to about 750 bytes for three values
// ({"a":0}). So each byte counts RequestBodyCopies, each value
// RequestValueWeight.
const (
	RequestBodyCopies  = 7
	RequestValueWeight = 300
)

// RequestWeight returns the weight of a message: RequestBodyCopies a byte
// and RequestValueWeight a JSON value (each object, array, string, member
// name and literal), counted by one scan that decodes nothing
// (FuzzRequestWeight checks it against encoding/json).
func RequestWeight(body []byte) int64 {
	values := int64(0)
	var str jsonStrings
	inLiteral := false
	for _, c := range body {
		wasIn := str.in
		if str.step(c) {
			if !wasIn { // an opening quote
				values++
			}
			inLiteral = false
			continue
		}
		switch {
		case c == '{' || c == '[':
			values++
			inLiteral = false
		case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if !inLiteral {
				values++
			}
			inLiteral = true
		default:
			inLiteral = false
		}
	}
	return RequestBodyCopies*int64(len(body)) + RequestValueWeight*values
}
