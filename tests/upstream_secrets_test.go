package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// TestUpstreamsLearnNoCredentials: the MCP servers toolscript starts do
// not inherit the variables credentials are read from (an upstream's
// get-env tool sees none of them: neither an API's nor one another MCP
// server's header takes), and a token the configuration hands an MCP
// server in a header is redacted from what the server echoes back.
func TestUpstreamsLearnNoCredentials(t *testing.T) {
	const apiToken, mcpToken = "api-token-7f3c9a1e5b", "mcp-token-0d8e2b6c4a"
	everything := testupstreams.Everything(t)
	pyURL, _ := testupstreams.PythonHTTP(t, 0, false)
	api := testapi.New(t)
	config := fmt.Sprintf(`
[apis.pets]
spec = %q
base_url = %q
auth_env = "TS_TEST_PETS_TOKEN"

[mcp_servers.ev]
command = %q
args = [%q, "stdio"]

[mcp_servers.py]
url = %q
headers = { Authorization = "Bearer ${TS_TEST_MCP_TOKEN}" }
`, testapi.SpecPath(), api.HTTP.URL, everything[0], everything[1], pyURL)
	env := []string{"TS_TEST_PETS_TOKEN=" + apiToken, "TS_TEST_MCP_TOKEN=" + mcpToken}
	res, stderr := runUpstreamScript(t, `return { env = sdk.ev.get_env(), headers = sdk.py.echo_headers() }`, config, env)
	if res.Error != nil {
		t.Fatalf("error %+v\nstderr %s", res.Error, stderr)
	}
	value := string(res.Value)
	for _, leak := range []string{"TS_TEST_PETS_TOKEN", "TS_TEST_MCP_TOKEN", apiToken, mcpToken} {
		if strings.Contains(value, leak) {
			t.Errorf("the result shows %q: %s", leak, value)
		}
	}
	if _, headers, _ := strings.Cut(value, `"headers":`); !strings.Contains(strings.ToLower(headers), `authorization\": \"[redacted]`) {
		t.Errorf("the MCP server's echo of its header is not redacted: %s", headers)
	}
}
