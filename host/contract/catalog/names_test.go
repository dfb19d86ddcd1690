package catalog

import (
	"strings"
	"testing"
)

func TestSnakeCase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"listPets", "list_pets"},
		{"repos/get-content", "repos_get_content"},
		{"getHTTPResponse", "get_http_response"},
		{"get /pets/{petId}", "get_pets_pet_id"},
		{"ListPets", "list_pets"},
		{"list_pets", "list_pets"},
		{"v2GetItem", "v2_get_item"},
		{"2fa-enable", "op_2fa_enable"},
		{"return", "return_"},
		{"", "op"},
		{"___", "op"},
		{"héllo wörld", "h_llo_w_rld"},
		{"users.list", "users_list"},
		{"getOAuth2Token", "get_o_auth2_token"},
	} {
		if got := SnakeCase(tc.in); got != tc.want {
			t.Errorf("SnakeCase(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := SnakeCase(tc.in); !IsIdentifier(got) {
			t.Errorf("SnakeCase(%q) = %q is not an identifier", tc.in, got)
		}
	}
}

func TestOperationName(t *testing.T) {
	if got := OperationName("", "GET", "/pets/{petId}"); got != "get_pets_pet_id" {
		t.Errorf("got %q", got)
	}
	if got := OperationName("listPets", "GET", "/pets"); got != "list_pets" {
		t.Errorf("got %q", got)
	}
}

func TestUniquify(t *testing.T) {
	names := []string{"a", "b", "a", "a_2", "a", "b"}
	Uniquify(names)
	want := []string{"a", "b", "a_3", "a_2", "a_4", "b_2"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", names, want)
	}
}

func TestLink(t *testing.T) {
	fn := func(names ...string) []*Function {
		var fs []*Function
		for _, n := range names {
			fs = append(fs, &Function{Name: n})
		}
		return fs
	}
	c := &Catalog{APIs: []*API{
		{Name: "petstore", Functions: fn("list_pets", "get_item")},
		{Name: "shop", Functions: fn("get_item", "list_orders")},
	}}
	if err := c.Link(); err != nil {
		t.Fatal(err)
	}
	flat := map[string]bool{}
	for _, a := range c.APIs {
		for _, f := range a.Functions {
			flat[a.Name+"."+f.Name] = f.Flat
		}
	}
	want := map[string]bool{"petstore.list_pets": true, "petstore.get_item": false, "shop.get_item": false, "shop.list_orders": true}
	for k, v := range want {
		if flat[k] != v {
			t.Errorf("%s flat = %v, want %v", k, flat[k], v)
		}
	}

	clash := &Catalog{APIs: []*API{
		{Name: "petstore", Functions: fn("list_pets")},
		{Name: "list_pets", Functions: fn("other")},
	}}
	err := clash.Link()
	if err == nil || !strings.Contains(err.Error(), `API "list_pets"`) || !strings.Contains(err.Error(), "sdk.petstore.list_pets") {
		t.Errorf("clash error = %v", err)
	}
	for _, bad := range []string{"1api", "my-api", "end", ""} {
		if err := (&Catalog{APIs: []*API{{Name: bad}}}).Link(); err == nil {
			t.Errorf("API name %q accepted", bad)
		}
	}
	if err := (&Catalog{APIs: []*API{{Name: "a"}, {Name: "a"}}}).Link(); err == nil {
		t.Error("duplicate API names accepted")
	}
}

func TestClosest(t *testing.T) {
	cands := []string{"limit", "offset", "tag", "petId"}
	for _, tc := range []struct{ in, want string }{
		{"limt", "limit"},
		{"lmiit", "limit"},
		{"pet_id", "petId"},
		{"tags", "tag"},
		{"zzzzzz", ""},
		{"x", ""},
	} {
		if got := Closest(tc.in, cands); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFreeze(t *testing.T) {
	a := &API{Functions: []*Function{{Name: "f", Params: []*Param{{Name: "tenant"}, {Name: "limit"}}}}}
	a.Freeze(map[string]bool{"tenant": true})
	f := a.Functions[0]
	if len(f.Params) != 1 || f.Params[0].Name != "limit" || len(f.Frozen) != 1 || f.Frozen[0].Name != "tenant" {
		t.Errorf("params %v frozen %v", f.Params, f.Frozen)
	}
}
