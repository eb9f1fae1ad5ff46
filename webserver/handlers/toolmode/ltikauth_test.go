package toolmode

import (
	"strings"
	"testing"
)

func TestParseLtikAuth(t *testing.T) {
	for _, tc := range []struct {
		header, key, ltik string
		ok                bool
	}{
		{"LTIK-AUTH-V2 key:a.b.c.d.e", "key", "a.b.c.d.e", true},
		{"ltik-auth-v2 key:tok", "key", "tok", true},
		{"LTIK-AUTH-V2 k:e:y:tok", "k:e:y", "tok", true}, // the last ':' separates
		{"LTIK-AUTH-V1 Token=tok, Additional=Bearer key", "key", "tok", true},
		{"LTIK-AUTH-V1 Additional=Bearer key,Token=tok", "key", "tok", true},
		{"LTIK-AUTH-V2 key:", "", "", false},
		{"LTIK-AUTH-V2 :tok", "", "", false},
		{"LTIK-AUTH-V2 keytok", "", "", false},
		{"LTIK-AUTH-V1 Token=tok", "", "", false},
		{"LTIK-AUTH-V1 Token=tok, Additional=Basic key", "", "", false},
		{"Bearer key", "", "", false},
		{"", "", "", false},
	} {
		key, ltik, ok := parseLtikAuth(tc.header)
		if ok != tc.ok || (ok && (key != tc.key || ltik != tc.ltik)) {
			t.Errorf("parseLtikAuth(%q) = %q, %q, %v; want %q, %q, %v", tc.header, key, ltik, ok, tc.key, tc.ltik, tc.ok)
		}
	}
}

func FuzzParseLtikAuth(f *testing.F) {
	f.Add("LTIK-AUTH-V2 key:a.b.c")
	f.Add("LTIK-AUTH-V1 Token=t, Additional=Bearer k")
	f.Add("LTIK-AUTH-V2 ::::")
	f.Fuzz(func(t *testing.T, h string) {
		key, ltik, ok := parseLtikAuth(h)
		if ok && (key == "" || ltik == "" || strings.Contains(ltik, ":") && strings.HasPrefix(strings.ToUpper(h), "LTIK-AUTH-V2")) {
			t.Fatalf("accepted %q as key %q, ltik %q", h, key, ltik)
		}
	})
}
