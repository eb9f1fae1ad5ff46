package ltiplatform

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var learner = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"

func fullVariables() *Variables {
	return &Variables{
		UserID: "u-42",
		User: &User{ID: "u-42", Roles: []string{learner, "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"},
			Name: "Ada Lovelace", GivenName: "Ada", FamilyName: "Lovelace", MiddleName: "King", Email: "ada@example.edu",
			Picture: "https://lms.example/ada.png", Username: "ada"},
		Context:      &Context{ID: "c-1", Label: "MATH-101", Title: "Maths", Type: []string{"CourseOffering", "Group"}},
		ResourceLink: &ResourceLink{ID: "rl-7", Title: "Quiz 7", Description: "The seventh quiz"},
	}
}

func TestVariablesLookup(t *testing.T) {
	full := fullVariables()
	empty := &Variables{UserID: "u-1"}
	for _, tc := range []struct {
		v      *Variables
		name   string
		want   string
		wantOK bool
	}{
		{full, "User.id", "u-42", true},
		{full, "User.username", "ada", true},
		{full, "User.image", "https://lms.example/ada.png", true},
		{full, "Person.name.full", "Ada Lovelace", true},
		{full, "Person.name.given", "Ada", true},
		{full, "Person.name.family", "Lovelace", true},
		{full, "Person.name.middle", "King", true},
		{full, "Person.email.primary", "ada@example.edu", true},
		{full, "Membership.role", learner + ",http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student", true},
		{full, "Context.id", "c-1", true},
		{full, "Context.label", "MATH-101", true},
		{full, "Context.title", "Maths", true},
		{full, "Context.type", "CourseOffering,Group", true},
		{full, "ResourceLink.id", "rl-7", true},
		{full, "ResourceLink.title", "Quiz 7", true},
		{full, "ResourceLink.description", "The seventh quiz", true},
		// Unknown names, wrong case, and names without data are not substituted.
		{full, "CourseSection.sourcedId", "", false},
		{full, "Canvas.course.id", "", false},
		{full, "user.id", "", false},
		{full, "User.id ", "", false},
		{full, "", "", false},
		{empty, "User.id", "u-1", true},
		{empty, "User.username", "", false},
		{empty, "Person.name.full", "", false},
		{empty, "Membership.role", "", false},
		{empty, "Context.id", "", false},
		{empty, "ResourceLink.id", "", false},
	} {
		got, ok := tc.v.Lookup(tc.name)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestMergeCustom(t *testing.T) {
	for _, tc := range []struct {
		name         string
		tool, launch map[string]string
		v            *Variables
		want         map[string]string
	}{
		{"both empty", nil, map[string]string{}, fullVariables(), nil},
		{"tool only, constants", map[string]string{"id": "3f2c", "mode": ""}, nil, fullVariables(),
			map[string]string{"id": "3f2c", "mode": ""}},
		{"launch wins on a shared key", map[string]string{"id": "tool", "a": "1"}, map[string]string{"id": "launch", "b": "2"}, fullVariables(),
			map[string]string{"id": "launch", "a": "1", "b": "2"}},
		{"the tool's variables expanded", map[string]string{
			"uid": "$User.id", "name": "$Person.name.full", "course": "$Context.id", "link": "$ResourceLink.id", "role": "$Membership.role",
		}, nil, fullVariables(), map[string]string{
			"uid": "u-42", "name": "Ada Lovelace", "course": "c-1", "link": "rl-7", "role": learner + ",http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student",
		}},
		{"the launch's variables expanded too", nil, map[string]string{"who": "$User.username"}, fullVariables(),
			map[string]string{"who": "ada"}},
		{"unknown and valueless variables left as written", map[string]string{
			"sis": "$CourseSection.sourcedId", "canvas": "$Canvas.user.id", "ctx": "$Context.id", "dollar": "$", "money": "$5",
		}, nil, &Variables{UserID: "u-1"}, map[string]string{
			"sis": "$CourseSection.sourcedId", "canvas": "$Canvas.user.id", "ctx": "$Context.id", "dollar": "$", "money": "$5",
		}},
		{"only a whole value is a variable", map[string]string{"a": "user $User.id", "b": "$User.id/x", "c": " $User.id", "d": "$$User.id"}, nil, fullVariables(),
			map[string]string{"a": "user $User.id", "b": "$User.id/x", "c": " $User.id", "d": "$$User.id"}},
		{"expanded once: a value that looks like a variable is not expanded again",
			map[string]string{"name": "$Person.name.full", "title": "$Context.title"}, nil,
			&Variables{UserID: "u", User: &User{Name: "$User.id"}, Context: &Context{ID: "c", Title: "$Context.id"}},
			map[string]string{"name": "$User.id", "title": "$Context.id"}},
		{"a launch variable wins over a tool constant", map[string]string{"id": "const"}, map[string]string{"id": "$ResourceLink.title"}, fullVariables(),
			map[string]string{"id": "Quiz 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, launch := maps.Clone(tc.tool), maps.Clone(tc.launch)
			got := MergeCustom(tc.tool, tc.launch, tc.v)
			if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("MergeCustom = %v; want %v", got, tc.want)
			}
			if !maps.Equal(tool, tc.tool) || !maps.Equal(launch, tc.launch) {
				t.Error("MergeCustom modified its input")
			}
		})
	}
}

func TestCheckCustom(t *testing.T) {
	many := map[string]string{}
	for i := range MaxCustomEntries + 1 {
		many[fmt.Sprintf("k%d", i)] = ""
	}
	atLimit := maps.Clone(many)
	delete(atLimit, "k0")
	atLimit[strings.Repeat("k", MaxCustomKeyBytes)] = strings.Repeat("é", MaxCustomValue)
	delete(atLimit, "k1")
	for _, tc := range []struct {
		name string
		m    map[string]string
		want string // "" when valid
	}{
		{"nil", nil, ""},
		{"usual keys", map[string]string{"id": "3f2c", "canvas_course_id": "$Canvas.course.id", "a.b-c": "", "X9": "multi\nline\ttext"}, ""},
		{"at the limits", atLimit, ""},
		{"too many", many, "custom: at most 64 custom parameters"},
		{"empty key", map[string]string{"": "x"}, `custom: key "": must be 1 to 128`},
		{"space in a key", map[string]string{"resource id": "x"}, `custom: key "resource id"`},
		{"non-ASCII key", map[string]string{"clé": "x"}, `custom: key "clé"`},
		{"key too long", map[string]string{strings.Repeat("k", MaxCustomKeyBytes+1): "x"}, `custom: key "` + strings.Repeat("k", MaxCustomKeyBytes) + `…": must be`},
		{"value too long", map[string]string{"id": strings.Repeat("é", MaxCustomValue+1)}, "custom.id: must be at most 1024 characters of text"},
		{"control character", map[string]string{"id": "a\x00b"}, "custom.id: must be at most 1024 characters of text"},
		{"invalid UTF-8", map[string]string{"id": "a\xffb"}, "custom.id: must be at most 1024 characters of text"},
		{"the first bad key in order", map[string]string{"b b": "", "a a": ""}, `custom: key "a a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := CheckCustom("custom", tc.m)
			switch {
			case tc.want == "" && e != nil:
				t.Fatalf("CheckCustom refused: %v", e.Description)
			case tc.want != "" && e == nil:
				t.Fatalf("CheckCustom accepted; want %q", tc.want)
			case e != nil && (e.Code != CodeInvalidLaunchData || e.Status != 400 || !strings.HasPrefix(e.Description, tc.want)):
				t.Fatalf("CheckCustom = %d %s %q; want 400 %s %q…", e.Status, e.Code, e.Description, CodeInvalidLaunchData, tc.want)
			}
		})
	}
}

func customMintParams(tool map[string]string, messageType string) MintParams {
	return MintParams{
		Issuer: "https://lti.example.com", Now: time.Unix(1_800_000_000, 0), Lifetime: 5 * time.Minute,
		Launch: LaunchOf{MessageHint: MessageHint{ToolID: "t", ClientID: "client", DeploymentID: "1", User: "hint-user",
			MessageType: messageType, TargetLinkURI: "https://tool.example/launch", ResourceLink: &ResourceLink{ID: "rl-hint", Title: "From the hint"}},
			RedirectURI: "https://tool.example/launch", State: "state", Nonce: "nonce"},
		ToolCustom: tool,
	}
}

func customClaim(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var c struct {
		Custom map[string]string `json:"https://purl.imsglobal.org/spec/lti/claim/custom"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Custom
}

// The id_token carries the tool's custom parameters under the launch's, expanded from the
// launch data: the user id defaults to the login_hint, the resource link to the hint's.
func TestIDTokenClaimsMergesToolCustom(t *testing.T) {
	tool := map[string]string{"id": "0c5a1d2e-uuid", "user": "$User.id", "link": "$ResourceLink.id", "title": "$ResourceLink.title",
		"course": "$Context.id", "name": "$Person.name.full", "sis": "$CourseSection.sourcedId", "mode": "tool"}
	d := &LaunchData{
		User:    &User{Roles: []string{learner}, Name: "Ada Lovelace"},
		Context: &Context{ID: "c-1"},
		Custom:  map[string]string{"mode": "launch", "extra": "$Context.id"},
	}
	b, e := IDTokenClaims(customMintParams(tool, MessageResourceLink), d)
	if e != nil {
		t.Fatal(e.Description)
	}
	want := map[string]string{"id": "0c5a1d2e-uuid", "user": "hint-user", "link": "rl-hint", "title": "From the hint",
		"course": "c-1", "name": "Ada Lovelace", "sis": "$CourseSection.sourcedId", "mode": "launch", "extra": "c-1"}
	if got := customClaim(t, b); !maps.Equal(got, want) {
		t.Errorf("custom claim = %v; want %v", got, want)
	}

	// A deep-linking launch has no resource link: its variables stay as written.
	dl := &LaunchData{User: &User{ID: "u-9", Roles: []string{learner}},
		DeepLinking: &DeepLinking{AcceptTypes: []string{"ltiResourceLink"}, AcceptPresentationDocumentTargets: []string{"iframe"}}}
	b, e = IDTokenClaims(customMintParams(map[string]string{"link": "$ResourceLink.id", "user": "$User.id"}, MessageDeepLinking), dl)
	if e != nil {
		t.Fatal(e.Description)
	}
	if got := customClaim(t, b); !maps.Equal(got, map[string]string{"link": "$ResourceLink.id", "user": "u-9"}) {
		t.Errorf("deep-linking custom claim = %v", got)
	}

	// Without custom parameters on either side there is no custom claim at all.
	b, e = IDTokenClaims(customMintParams(nil, MessageResourceLink), &LaunchData{User: &User{Roles: []string{learner}}})
	if e != nil {
		t.Fatal(e.Description)
	}
	if strings.Contains(string(b), "claim/custom") {
		t.Errorf("custom claim present without custom parameters: %s", b)
	}
}

func TestIDTokenClaimsRefusesBadLaunchCustom(t *testing.T) {
	d := &LaunchData{User: &User{Roles: []string{learner}}, Custom: map[string]string{"bad key": "x"}}
	_, e := IDTokenClaims(customMintParams(map[string]string{"id": "1"}, MessageResourceLink), d)
	if e == nil || e.Status != 400 || e.Code != CodeInvalidLaunchData || !strings.Contains(e.Description, `custom: key "bad key"`) {
		t.Fatalf("IDTokenClaims = %+v; want 400 INVALID_PARAMETERS naming the key", e)
	}
}

// BenchmarkMergeCustom is the per-launch cost of a tool with custom parameters.
func BenchmarkMergeCustom(b *testing.B) {
	tool := map[string]string{"id": "0c5a1d2e-uuid", "user": "$User.id", "course": "$Context.id", "link": "$ResourceLink.id", "name": "$Person.name.full"}
	launch := map[string]string{"chapter": "3"}
	v := fullVariables()
	b.ReportAllocs()
	for b.Loop() {
		if len(MergeCustom(tool, launch, v)) != 6 {
			b.Fatal("lost a parameter")
		}
	}
}

// FuzzMergeCustom: any key and value, in the tool's map and the launch's, gives the union
// of the keys, the launch's value winning, each value either as written or the value of
// the variable it names; CheckCustom accepts exactly what fits the limits.
func FuzzMergeCustom(f *testing.F) {
	f.Add("id", "$User.id", "id", "x")
	f.Add("course", "$Context.id", "chapter", "$ResourceLink.title")
	f.Add("", "$", "a b", "$$Person.name.full")
	f.Add("k", "\xff", "k.2", strings.Repeat("é", 1025))
	v := fullVariables()
	f.Fuzz(func(t *testing.T, tk, tv, lk, lv string) {
		tool, launch := map[string]string{tk: tv}, map[string]string{lk: lv}
		got := MergeCustom(tool, launch, v)
		want := map[string]string{tk: tv, lk: lv}
		if len(got) != len(want) {
			t.Fatalf("keys %v, want those of %v", got, want)
		}
		for k, written := range want {
			s, ok := "", false
			if len(written) > 1 && written[0] == '$' {
				s, ok = v.Lookup(written[1:])
			}
			if (ok && got[k] != s) || (!ok && got[k] != written) {
				t.Fatalf("%q = %q from %q", k, got[k], written)
			}
		}
		e := CheckCustom("custom", launch)
		fits := ValidCustomKey(lk) && utf8.RuneCountInString(lv) <= MaxCustomValue && validText(lv, 4*MaxCustomValue)
		if fits != (e == nil) || (e != nil && (e.Status != 400 || len(e.Description) > 1024)) {
			t.Fatalf("CheckCustom(%q: %q) = %v", lk, lv, e)
		}
	})
}
