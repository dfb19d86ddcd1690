package catalog

import (
	"strings"
	"testing"
)

// Override classifies functions by operationId, sdk name or tool name,
// clears what an earlier call set, returns the names no function has, and
// refuses one function named in both lists.
func TestOverride(t *testing.T) {
	api := func() *API {
		return &API{Name: "a", Functions: []*Function{
			{Name: "search_pets", OperationID: "searchPets", Kind: OpenAPI, Method: "POST"},
			{Name: "get_token", OperationID: "getToken", Kind: OpenAPI, Method: "GET"},
			{Name: "write_note", Tool: "write-note", Kind: MCP},
		}}
	}
	for _, tc := range []struct {
		name         string
		safe, unsafe []string
		readOnly     string // of each function, in order: r read-only, w may write
		unknown      string
		err          string
	}{
		{"none", nil, nil, "wrw", "", ""},
		{"by operationId", []string{"searchPets"}, []string{"getToken"}, "rww", "", ""},
		{"by sdk name", []string{"search_pets", "write_note"}, []string{"get_token"}, "rwr", "", ""},
		{"by tool name", []string{"write-note"}, nil, "wrr", "", ""},
		{"unknown", []string{"serchPets", "searchPets"}, []string{"nope"}, "rrw", "serchPets nope", ""},
		{"both lists", []string{"searchPets"}, []string{"search_pets"}, "", "", `function search_pets (searchPets) is both safe (as "searchPets") and unsafe (as "search_pets")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := api()
			unknown, err := a.Override(tc.safe, tc.unsafe)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(unknown, " ") != tc.unknown {
				t.Fatalf("unknown %q, error %v", unknown, err)
			}
			got := ""
			for _, f := range a.Functions {
				got += map[bool]string{true: "r", false: "w"}[f.ReadOnly()]
			}
			if got != tc.readOnly {
				t.Errorf("read-only %s, want %s", got, tc.readOnly)
			}
			// A second Override replaces the first.
			if _, err := a.Override(nil, nil); err != nil || a.Functions[0].ReadOnly() || !a.Functions[1].ReadOnly() {
				t.Errorf("cleared: %v", err)
			}
		})
	}
}

func TestCloseMatches(t *testing.T) {
	names := []string{"createPet", "create_pet", "listPets", "list_pets", "getPet", "deletePet", "markdown/render"}
	for _, tc := range []struct{ name, want string }{
		{"createPett", "createPet create_pet"},
		{"markdown_rendr", "markdown/render"},
		{"pets", "listPets list_pets"},
		{"zzz", ""},
	} {
		if got := strings.Join(CloseMatches(tc.name, names, 3), " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
