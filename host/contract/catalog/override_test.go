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

// A name two functions could mean (one's tool name or operationId,
// another's sdk name) is an error naming both and a name only each has,
// in either list, and classifies nothing; a name only one has classifies
// that one.
func TestOverrideAmbiguous(t *testing.T) {
	api := &API{Name: "a", Functions: []*Function{
		{Name: "wipe_all", Tool: "wipe-all", Kind: MCP},
		{Name: "wipe_all_2", Tool: "wipe_all", Kind: MCP},
		{Name: "list_pets", Kind: OpenAPI, Method: "GET", Path: "/pets"},
		{Name: "list_pets_2", OperationID: "list_pets", Kind: OpenAPI, Method: "GET", Path: "/pets/all"},
		// A server may list two tools of one name.
		{Name: "x", Tool: "x", Kind: MCP},
		{Name: "x_2", Tool: "x", Kind: MCP},
	}}
	for _, tc := range []struct {
		name         string
		safe, unsafe []string
		err          string
	}{
		{"a tool name and another's sdk name", []string{"wipe_all"}, nil,
			`"wipe_all" in safe could mean the tool wipe-all (sdk.a.wipe_all) or the tool wipe_all (sdk.a.wipe_all_2): name the one you mean by a name only it has ("wipe-all" or "wipe_all_2")`},
		{"an operationId and another's sdk name", nil, []string{"list_pets"},
			`"list_pets" in unsafe could mean the operation GET /pets (sdk.a.list_pets) or the operation list_pets (sdk.a.list_pets_2): name the one you mean by a name only it has ("list_pets_2")`},
		{"two tools of one name", []string{"x"}, nil,
			`"x" in safe could mean the tool x (sdk.a.x) or the tool x (sdk.a.x_2): name the one you mean by a name only it has ("x_2")`},
		{"names only one has", []string{"wipe-all", "x_2"}, []string{"wipe_all_2", "list_pets_2"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unknown, err := api.Override(tc.safe, tc.unsafe)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil || len(unknown) > 0 {
				t.Fatalf("unknown %q, error %v", unknown, err)
			}
			got := ""
			for _, f := range api.Functions {
				got += map[bool]string{true: "r", false: "w"}[f.ReadOnly()]
			}
			if got != "rwrwwr" {
				t.Errorf("read-only %s, want rwrwwr", got)
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
