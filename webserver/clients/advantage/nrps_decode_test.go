package advantage

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// mapMembersReference is MapMembers's mapping rules written over encoding/json's generic
// decoding: the hand-written decoder must agree with it on every input both accept, and
// accept nothing that is not JSON.
func mapMembersReference(raw []byte) (*MembershipPage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the top-level value")
	}
	page := &MembershipPage{Members: []Member{}}
	if top == nil {
		return page, nil
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	scalar := func(v any) (string, bool) {
		switch v := v.(type) {
		case string:
			return v, true
		case json.Number:
			return string(v), true
		case nil:
			return "", true
		}
		return "", false
	}
	lenient := func(v any) string { s, _ := v.(string); return s }
	var ok2 bool
	if page.ID, ok2 = scalar(obj["id"]); !ok2 {
		return nil, errors.New("id")
	}
	if c, ok := obj["context"].(map[string]any); ok {
		if page.Context.ID, ok2 = scalar(c["id"]); !ok2 {
			return nil, errors.New("context.id")
		}
		page.Context.Label, page.Context.Title = lenient(c["label"]), lenient(c["title"])
	}
	switch ms := obj["members"].(type) {
	case nil:
	case []any:
		for _, e := range ms {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, errors.New("member not an object")
			}
			var mem Member
			if mem.UserID, ok2 = scalar(m["user_id"]); !ok2 {
				return nil, errors.New("user_id")
			}
			mem.Roles = []string{}
			switch r := m["roles"].(type) {
			case string:
				mem.Roles = []string{r}
			case []any:
				for _, x := range r {
					if s, ok := x.(string); ok {
						mem.Roles = append(mem.Roles, s)
					}
				}
			}
			mem.Status = lenient(m["status"])
			if mem.Status == "" {
				mem.Status = "Active"
			}
			mem.Email, mem.Name, mem.GivenName = lenient(m["email"]), lenient(m["name"]), lenient(m["given_name"])
			mem.FamilyName, mem.MiddleName = lenient(m["family_name"]), lenient(m["middle_name"])
			mem.LisPersonSourcedID, mem.Picture = lenient(m["lis_person_sourcedid"]), lenient(m["picture"])
			mem.LTI11LegacyUserID = lenient(m["lti11_legacy_user_id"])
			if n, ok := m["lti11_legacy_user_id"].(json.Number); ok {
				mem.LTI11LegacyUserID = string(n)
			}
			page.Members = append(page.Members, mem)
		}
	default:
		return nil, errors.New("members not an array")
	}
	return page, nil
}

var mapMembersSeeds = []string{
	`{"members":[{"user_id":"u","lti11_legacy_user_id":"legacy-1"},{"user_id":"v","lti11_legacy_user_id":34212},{"user_id":"w","lti11_legacy_user_id":[1]}]}`,
	`{"id":"x","context":{"id":"c","label":"L","title":"T"},"members":[{"user_id":"u","roles":["r"]}]}`,
	`{"id":7,"context":{"id":-1.5e3},"members":[{"user_id":42,"roles":null,"status":"Inactive"}]}`,
	`{"members":[{"user_id":"a\u00e9\"\\\/\b\f\n\r\t","roles":"Learner","name":5,"email":null,"picture":{"x":[1,2,{"y":true}]}}]}`,
	`{"members":[{"user_id":"u","roles":["a",1,null,"b"],"roles":["c"]}],"members":[{"user_id":"v"}]}`,
	` null `,
	`{}`,
	`{"members":[]}`,
	`{"context":"not an object","extra":[true,false,null,0,-0,0.5,1E+2,"s"]}`,
	"{\"members\":[{\"user_id\":\"\xff\xfe bad utf8\"}]}",
	`{"members":[{"user_id":"\ud83d\ude00 \ud800"}]}`,
	`[]`, `{"id":true}`, `{"members":[1]}`, `{"members":{}}`, `{"id":"x"} {}`, `{"id":"x",}`, `{"id":01}`,
	`{"id":"a` + "\x01" + `"}`, `{"id":"\x"}`, `{"id":"\u12"}`, `{"id":1.}`, `{"id":1e}`, `{"id":-}`, `{"id" "x"}`,
	`{"members":[{"user_id":"u"}`, `{"id":nul}`, `{"id":"unterminated`, ``, `{"a":[[[[[[[[]]]]]]]]}`,
	`null x`, `nullx`, `nul`, `{"context":{"id":"c","x":[1,}}`, `{"members":[{"user_id":"u","roles":["a",]}]}`,
	`{"members":[{"user_id":"u","picture":"\q"}]}`, `{"members":[{"user_id":"u"},]}`, `{"members":[{"user_id":"u"} {}]}`,
	`{"members":[{"user\u005fid":"esc","roles":["https:\/\/purl.example\/r"],"name":"Zo\u00eb"}]}`,
	`{"id":"x","members":[{"user_id":"u"}],"members":null}`, `{"context":{"id":{"a":1}}}`, `{"members":[{"user_id":true}]}`,
}

func TestMapMembersMatchesReference(t *testing.T) {
	seeds := append(slicesClone(mapMembersSeeds), string(membersPage(20)))
	for _, in := range seeds {
		checkMapMembers(t, []byte(in))
	}
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	if _, err := MapMembers([]byte(`{"x":` + deep + `}`)); err == nil {
		t.Error("nesting beyond 10000 accepted")
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func checkMapMembers(t *testing.T, raw []byte) {
	t.Helper()
	got, err := MapMembers(raw)
	want, refErr := mapMembersReference(raw)
	if err == nil && !json.Valid(raw) {
		t.Fatalf("accepted invalid JSON %q", raw)
	}
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%q: MapMembers err %v, reference err %v", raw, err, refErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\ngot  %#v\nwant %#v", raw, got, want)
	}
}

func FuzzMapMembers(f *testing.F) {
	for _, s := range mapMembersSeeds {
		f.Add([]byte(s))
	}
	f.Add(membersPage(3))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkMapMembers(t, raw)
	})
}

// flexString decodes strings with internal/jsonscan: byte for byte as encoding/json.
func TestFlexStringDecodesAsEncodingJSON(t *testing.T) {
	for _, lit := range []string{`"plain"`, `"https:\/\/lms.example\/li\/1"`, `"Zo\u00eb \ud83d\ude00 \ud800"`, "\"caf\xc3\xa9 \xff\"", `""`} {
		var want string
		if err := json.Unmarshal([]byte(lit), &want); err != nil {
			t.Fatal(err)
		}
		var v struct{ ID flexString }
		if err := json.Unmarshal([]byte(`{"ID":`+lit+`}`), &v); err != nil || string(v.ID) != want {
			t.Errorf("%s: %q, %v; want %q", lit, v.ID, err, want)
		}
	}
	for in, want := range map[string]string{`42`: "42", `-1.5e3`: "-1.5e3", `null`: ""} {
		var v struct{ ID flexString }
		if err := json.Unmarshal([]byte(`{"ID":`+in+`}`), &v); err != nil || string(v.ID) != want {
			t.Errorf("%s: %q, %v", in, v.ID, err)
		}
	}
	var v struct{ ID flexString }
	if json.Unmarshal([]byte(`{"ID":true}`), &v) == nil {
		t.Error("a boolean id accepted")
	}
}
