// Package testspecs locates the real-world OpenAPI specs the tests load:
// GitHub's REST API description from the npm package @octokit/openapi,
// pinned by tests/sdk/package-lock.json and installed by .ci/run.
package testspecs

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// EnvGitHubSpec overrides where GitHub's spec is read from.
const EnvGitHubSpec = "TOOLSCRIPT_GITHUB_SPEC"

// GitHub returns the path of api.github.com.json. Outside CI a missing
// file skips the test with the command that installs it; in CI it fails.
func GitHub(tb testing.TB) string {
	tb.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "tests", "sdk", "node_modules", "@octokit", "openapi", "generated", "api.github.com.json")
	if p := os.Getenv(EnvGitHubSpec); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("GitHub's spec is missing in CI: %v (npm ci --prefix tests/sdk)", err)
		}
		tb.Skipf("GitHub's spec is not installed; run: npm ci --prefix tests/sdk (%v)", err)
	}
	return path
}
