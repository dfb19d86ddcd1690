package mcpserver

import "testing"

// BenchmarkMessageOverhead measures what the server adds to one tools/call
// round trip before and after mcp-go: admit on the request, the response's
// id and accounting on the way out.
func BenchmarkMessageOverhead(b *testing.B) {
	s, _ := testTransport()
	req := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"}}}` + "\n")
	resp := []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"{\"result\":1,\"logs\":[],\"files_touched\":[]}"}],"structuredContent":{"result":1,"logs":[],"files_touched":[]}}}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		s.admit(req)
		id, _ := responseID(resp)
		s.requests.answer(idKey(id))
	}
}
