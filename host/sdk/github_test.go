package sdk

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/internal/testspecs"
)

// TestGitHubCalls makes a handful of calls of GitHub's API, as its spec
// describes them, to a Go server answering those paths.
func TestGitHubCalls(t *testing.T) {
	api := openapitest.Load(t, "gh", testspecs.GitHub(t))
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.EscapedPath()+"?"+r.URL.RawQuery+" "+r.Header.Get("Authorization")+" "+string(body))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		switch {
		case r.Method == "POST":
			w.WriteHeader(201)
			w.Write([]byte(`{"number": 1347, "title": "Found a bug"}`))
		case strings.Contains(r.URL.Path, "/contents/"):
			w.Write([]byte(`{"type": "file", "name": "README.md", "size": 5362}`))
		case strings.HasSuffix(r.URL.Path, "/issues"):
			w.Header().Set("Link", `<https://api.github.com/repositories/1/issues?page=2>; rel="next"`)
			w.Write([]byte(`[{"number": 1347}]`))
		default:
			w.WriteHeader(404)
			w.Write([]byte(`{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}`))
		}
	}))
	defer srv.Close()
	c := clientOf(t, Config{APIs: []APIConfig{{Name: "gh", BaseURL: srv.URL, Auth: &Credential{Token: "ghp_test_token"}}}}, api)
	s := c.Session(nil)
	for _, tc := range []struct{ fn, args, request string }{
		{"repos_get_content", `[{"owner":"octocat","repo":"hello-world","path":"docs/README.md","ref":"main"}]`,
			"GET /repos/octocat/hello-world/contents/docs%2FREADME.md?ref=main Bearer ghp_test_token "},
		{"issues_list_for_repo", `[{"owner":"octocat","repo":"hello-world","state":"open","labels":"bug,ui","per_page":2}]`,
			"GET /repos/octocat/hello-world/issues?state=open&labels=bug%2Cui&per_page=2 Bearer ghp_test_token "},
		{"issues_create", `[{"owner":"octocat","repo":"hello-world"},{"title":"Found a bug","labels":["bug"]}]`,
			`POST /repos/octocat/hello-world/issues? Bearer ghp_test_token {"labels":["bug"],"title":"Found a bug"}`},
		{"repos_get", `[{"owner":"octocat","repo":"missing"}]`, "GET /repos/octocat/missing? Bearer ghp_test_token "},
	} {
		got = nil
		r := call(t, s, tc.fn, tc.args)
		if len(got) != 1 || got[0] != tc.request {
			t.Errorf("%s: the server got %q, want %q (%s)", tc.fn, got, tc.request, r.Message)
		}
		if tc.fn == "repos_get" {
			if r.Fail != sdkcall.Upstream || r.Status != 404 || !strings.HasPrefix(r.Message, `sdk.gh.repos_get: HTTP 404 Not Found: {"message": "Not Found"`) {
				t.Errorf("404: %+v", r)
			}
		} else if r.Fail != sdkcall.OK || !json.Valid(r.JSON) {
			t.Errorf("%s: %+v", tc.fn, r)
		}
	}
	for _, tc := range []struct{ fn, args, want string }{
		{"issues_create", `[{"owner":"octocat","repo":"x"},{"labels":["bug"]}]`, "sdk.gh.issues_create: body: missing required property 'title'"},
		{"issues_list_for_repo", `[{"owner":"o","repo":"r","state":"opne"}]`, "sdk.gh.issues_list_for_repo: parameter 'state': value must be one of 'open', 'closed', 'all'"},
		{"repos_get_content", `[{"owner":"o","repo":"r","pth":"x"}]`, "sdk.gh.repos_get_content: unknown parameter 'pth' (did you mean 'path'?)"},
	} {
		if r := call(t, s, tc.fn, tc.args); r.Fail != sdkcall.Argument || r.Message != tc.want {
			t.Errorf("%s: %q, want %q", tc.fn, r.Message, tc.want)
		}
	}
}

// TestSynthesiseGitHub makes up the response of every operation of
// GitHub's spec whose success response has a JSON body, and validates it
// against the response's schema with the JSON Schema validator (as the sdk
// compiles schemas: oneOf read as anyOf, bounds and patterns not
// checked). Both the minimal value and the dry run's answer (the example
// when it fits) must be valid.
func TestSynthesiseGitHub(t *testing.T) {
	api := openapitest.Load(t, "gh", testspecs.GitHub(t))
	checked, examples := 0, 0
	for _, fn := range api.Functions {
		r, _ := successResponse(fn)
		if r == nil {
			continue
		}
		m := jsonMedia(r)
		if m == nil || m.Schema == nil {
			continue
		}
		c := newChecker(api, m.Schema)
		if c == nil {
			t.Errorf("%s: the response schema does not compile", fn.Name)
			continue
		}
		f := &function{api: &apiState{api: api}, fn: fn}
		outcome := dryResponse(api, fn, f.exampleFits)
		for what, value := range map[string]json.RawMessage{"minimal value": synthesise(api, m.Schema), "dry-run response": outcome.body} {
			v, err := decodeForCheck(value)
			if err != nil {
				t.Errorf("%s: %s %s is not JSON: %v", fn.Name, what, value, err)
				continue
			}
			if err := c.check(v, bodyPlace); err != nil {
				t.Errorf("%s: %s %.300s is not valid: %v", fn.Name, what, value, err)
			}
		}
		if len(m.Example) > 0 && string(outcome.body) != string(synthesise(api, m.Schema)) {
			examples++
		}
		checked++
	}
	t.Logf("%d operations with a JSON success body checked; %d answered with the spec's example", checked, examples)
	if checked < 500 {
		t.Errorf("only %d operations checked", checked)
	}
}
