package openapi

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// A success response's example reaches the catalog as JSON: its example,
// else the first of its named examples (a $ref to components/examples
// included); an error response's, or one over catalog.MaxExampleBytes, do
// not.
func TestResponseExamples(t *testing.T) {
	big := strings.Repeat("x", catalog.MaxExampleBytes)
	spec := spec30("http://api.example", `  /a:
    post:
      operationId: inline
      responses:
        "201":
          description: ok
          content: { application/json: { schema: { type: object }, example: { id: 1, tags: [a, b] } } }
        "400":
          description: bad
          content: { application/json: { schema: { type: object }, example: { error: bad } } }
  /b:
    post:
      operationId: named
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: { type: object }
              examples:
                first: { $ref: "#/components/examples/First" }
                second: { value: { id: 3 } }
  /c:
    post:
      operationId: tooBig
      responses:
        "200":
          description: ok
          content: { application/json: { schema: { type: string }, example: "`+big+`" } }
components:
  examples:
    First: { summary: the first, value: { id: 2, name: "two" } }
`)
	checkExamples(t, spec, []exampleCase{
		{"inline", 0, `{"id":1,"tags":["a","b"]}`},
		{"inline", 1, ``},
		{"named", 0, `{"id":2,"name":"two"}`},
		{"too_big", 0, ``},
	})
}

// A Swagger 2.0 response's examples, keyed by media type, reach the
// catalog as that media type's example (a 2xx response's only, up to
// catalog.MaxExampleBytes), also when the response gives no schema.
func TestSwagger2ResponseExamples(t *testing.T) {
	big := strings.Repeat("x", catalog.MaxExampleBytes)
	spec := `swagger: "2.0"
info: { title: ex, version: "1" }
host: api.example
produces: [application/json]
paths:
  /a:
    post:
      operationId: inline
      responses:
        "201":
          description: ok
          schema: { type: object }
          examples: { application/json: { id: 1, tags: [a, b] } }
        "400":
          description: bad
          schema: { type: object }
          examples: { application/json: { error: bad } }
  /b:
    post:
      operationId: noSchema
      produces: ["application/json; charset=utf-8"]
      responses:
        "200":
          description: ok
          examples: { Application/JSON: { id: 2 } }
  /c:
    post:
      operationId: otherType
      responses:
        "200":
          description: ok
          schema: { type: object }
          examples: { text/plain: "hello" }
  /d:
    post:
      operationId: tooBig
      responses:
        "200":
          description: ok
          schema: { type: string }
          examples: { application/json: "` + big + `" }
`
	checkExamples(t, spec, []exampleCase{
		{"inline", 0, `{"id":1,"tags":["a","b"]}`},
		{"inline", 1, ``},
		{"no_schema", 0, `{"id":2}`},
		{"other_type", 0, ``},
		{"too_big", 0, ``},
	})
}

// exampleCase is a response of a function and the example its first
// media type should carry ("" for none, or no content at all).
type exampleCase struct {
	fn       string
	response int
	want     string
}

// checkExamples loads spec and checks each case.
func checkExamples(t *testing.T, spec string, cases []exampleCase) {
	t.Helper()
	api := loadText(t, "", spec, Options{})
	for _, tt := range cases {
		r := mustFunc(t, api, tt.fn).Responses[tt.response]
		if len(r.Content) == 0 {
			if tt.want != "" {
				t.Errorf("%s response %d: no content, want example %s", tt.fn, tt.response, tt.want)
			}
			continue
		}
		if got := string(r.Content[0].Example); got != tt.want {
			t.Errorf("%s response %d: example %.80s, want %s", tt.fn, tt.response, got, tt.want)
		}
	}
}
