package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPetstore(t *testing.T) {
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = handler(newStore(srv.URL), srv.URL)
	tests := []struct {
		name, method, path, token, body string
		status                          int
		want                            string // a part of the body
		link                            string // the Link header
	}{
		{"no token", "GET", "/pets", "", "", 401, "bearer token", ""},
		{"first page", "GET", "/pets?limit=2", "t", "", 200, `[{"id":1,"name":"Rex","tag":"dog","status":"available"},{"id":2,"name":"Tom","tag":"cat","status":"available"}]`, "<" + srv.URL + "/pets?limit=2&page=2>; rel=\"next\""},
		{"last page", "GET", "/pets?limit=20", "t", "", 200, `"name":"Leo"`, ""},
		{"by status", "GET", "/pets?status=sold&limit=1", "t", "", 200, `[{"id":3,"name":"Kitty","tag":"dog","status":"sold"}]`, "<" + srv.URL + "/pets?limit=1&page=2&status=sold>; rel=\"next\""},
		{"bad limit", "GET", "/pets?limit=0", "t", "", 400, "limit must be", ""},
		{"one pet", "GET", "/pets/8", "t", "", 200, `{"id":8,"name":"Lucy","tag":"cat","status":"available"}`, ""},
		{"no such pet", "GET", "/pets/999", "t", "", 404, "no pet 999", ""},
		{"not a number", "GET", "/pets/x", "t", "", 404, "no pet x", ""},
		{"create", "POST", "/pets", "t", `{"name":"Nemo","tag":"fish"}`, 201, `{"id":21,"name":"Nemo","tag":"fish"}`, ""},
		{"create without a name", "POST", "/pets", "t", `{"tag":"fish"}`, 400, "with a name", ""},
		{"update", "PUT", "/pets/2", "t", `{"name":"Tim"}`, 200, `{"id":2,"name":"Tim"}`, ""},
		{"spec", "GET", "/openapi.yaml", "", "", 200, "- url: " + srv.URL + "\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(string(body), tt.want) {
				t.Fatalf("%s %s: %d %s, want %d with %s", tt.method, tt.path, resp.StatusCode, body, tt.status, tt.want)
			}
			if got := resp.Header.Get("Link"); got != tt.link {
				t.Fatalf("Link %q, want %q", got, tt.link)
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && !json.Valid(body) {
				t.Fatalf("not JSON: %s", body)
			}
		})
	}
}
