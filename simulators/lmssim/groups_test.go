package lmssim_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ltiop/ltiop/simulators/lmssim"
)

// allOf follows the next links of a groups service listing from u and returns the ids of
// the entries under key ("groups" or "sets"), failing on an entry seen twice.
func allOf(t *testing.T, u, token, media, key string) (entries []map[string]any, pages int) {
	t.Helper()
	seen := map[string]bool{}
	for u != "" {
		res := call(t, "GET", u, token, map[string]string{"Accept": media}, "")
		if res.Status != 200 || res.Header.Get("Content-Type") != media {
			t.Fatalf("GET %s: HTTP %d %s: %s", u, res.Status, res.Header.Get("Content-Type"), res.Body)
		}
		var c map[string]json.RawMessage
		var list []map[string]any
		if err := json.Unmarshal([]byte(res.Body), &c); err != nil || json.Unmarshal(c[key], &list) != nil {
			t.Fatalf("%s: %v", res.Body, err)
		}
		for _, e := range list {
			id := e["id"].(string)
			if seen[id] {
				t.Fatalf("%s listed twice", id)
			}
			seen[id] = true
			entries = append(entries, e)
		}
		pages++
		u = nextLink(t, res.Header)
		if pages > 100 {
			t.Fatal("paging does not end")
		}
	}
	return entries, pages
}

func TestGroupsService(t *testing.T) {
	r := newRig(t)
	token := r.token(t)
	groupsURL := r.lms.Issuer + lmssim.GroupsPath

	all, pages := allOf(t, groupsURL+"?limit=10", token, lmssim.MediaGroupContainer, "groups")
	if len(all) != 36 || pages != 4 {
		t.Fatalf("%d groups in %d pages", len(all), pages)
	}
	if all[0]["id"] != "lab-1" || !slices.Equal(all[0]["set_ids"].([]any), []any{"set-labs"}) || all[0]["tag"] != "lab" {
		t.Fatalf("first group %v", all[0])
	}
	if staff := all[35]; staff["id"] != "teaching-staff" || len(staff["set_ids"].([]any)) != 0 {
		t.Fatalf("a group outside any set %v", staff)
	}

	mine, _ := allOf(t, groupsURL+"?user_id=user-1", token, lmssim.MediaGroupContainer, "groups")
	var ids []string
	for _, g := range mine {
		ids = append(ids, g["id"].(string))
	}
	if !slices.Equal(ids, []string{"lab-2", "project-2", "teaching-staff"}) {
		t.Fatalf("user-1's groups %v", ids)
	}

	sets, _ := allOf(t, r.lms.Issuer+lmssim.GroupSetsPath+"?limit=1", token, lmssim.MediaGroupSetContainer, "sets")
	if len(sets) != 2 || sets[0]["name"] != "Lab groups" || sets[1]["id"] != "set-projects" {
		t.Fatalf("sets %v", sets)
	}

	// The claim of a launch names both URLs.
	claim := r.lms.Claims("user-1", "n", "https://tool.example/launch")[lmssim.ClaimGroups].(map[string]any)
	if claim["context_groups_url"] != groupsURL || claim["context_group_sets_url"] != r.lms.Issuer+lmssim.GroupSetsPath {
		t.Fatalf("claim %v", claim)
	}
}

func TestGroupsServiceRefusals(t *testing.T) {
	r := newRig(t)
	groupsURL := r.lms.Issuer + lmssim.GroupsPath
	accept := map[string]string{"Accept": lmssim.MediaGroupContainer}
	if res := call(t, "GET", groupsURL, "", accept, ""); res.Status != 401 {
		t.Errorf("no token: HTTP %d", res.Status)
	}
	if res := call(t, "GET", groupsURL, r.token(t, lmssim.ScopeNRPS), accept, ""); res.Status != 403 {
		t.Errorf("a token without contextgroup.readonly: HTTP %d", res.Status)
	}
	token := r.token(t, lmssim.ScopeGroups)
	if res := call(t, "GET", groupsURL, token, map[string]string{"Accept": "application/json"}, ""); res.Status != 406 {
		t.Errorf("another Accept: HTTP %d", res.Status)
	}
	if res := call(t, "GET", r.lms.Issuer+lmssim.GroupSetsPath, token, accept, ""); res.Status != 406 {
		t.Errorf("the groups media type for sets: HTTP %d", res.Status)
	}
	first := call(t, "GET", groupsURL+"?limit=5", token, accept, "")
	next := nextLink(t, first.Header)
	if res := call(t, "GET", next+"&user_id=user-1", token, accept, ""); res.Status != 400 {
		t.Errorf("a next link with a filter added: HTTP %d", res.Status)
	}
}
