// Package openapitest owns how tests load an OpenAPI spec into the
// catalog's API: the way toolscript loads it, with the default options,
// any failure ending the test.
package openapitest

import (
	"context"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/openapi"
)

// Load loads the spec at path (a file or URL) as the API name.
func Load(tb testing.TB, name, path string) *catalog.API {
	tb.Helper()
	api, err := openapi.Load(context.Background(), openapi.Source{Name: name, Spec: path}, openapi.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return api
}
