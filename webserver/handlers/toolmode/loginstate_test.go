package toolmode

import (
	"encoding/json"
	"testing"
)

// decodeLoginState reads what Login seals exactly as encoding/json did.
func TestDecodeLoginState(t *testing.T) {
	for _, st := range []loginState{
		{ID: "Zk2p9QeXb1c8R0tY", Bind: "q3Vn8dKfP0sLx2mB7wE1yA", PlatformID: "canvas", PlatformUID: "0b6b3a0e-6f4c",
			Nonce: "h7Jd0sKq2LmNp4RtUv6wXy", TargetLinkURI: "https://lti.example.com/lti/launch?a=1&b=<\"é\">", DeploymentID: "1:4dde\u2028x"},
		{ID: "a", Bind: "b", Storage: "_parent", StorageOrigin: "https://canvas.example.edu"},
		{},
	} {
		b, _ := json.Marshal(st)
		got, ok := decodeLoginState(b)
		if !ok || got != st {
			t.Errorf("%s: got %+v, %v", b, got, ok)
		}
	}
	got, ok := decodeLoginState([]byte(`{"i":"x","later":{"field":[1,2]},"n":"y"}`))
	if !ok || got.ID != "x" || got.Nonce != "y" {
		t.Errorf("unknown members: %+v, %v", got, ok)
	}
	for _, bad := range []string{``, `[]`, `{"i":1}`, `{"i":"x"`, `{"i":"x"} {}`, `{"n":null}`, `"state"`} {
		if _, ok := decodeLoginState([]byte(bad)); ok {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func BenchmarkDecodeLoginState(b *testing.B) {
	payload, _ := json.Marshal(loginState{ID: "Zk2p9QeXb1c8R0tY", Bind: "q3Vn8dKfP0sLx2mB7wE1yA", PlatformID: "canvas-prod",
		PlatformUID: "0b6b3a0e-6f4c-4a51-9d35-2b3b4c5d6e7f", Nonce: "h7Jd0sKq2LmNp4RtUv6wXy",
		TargetLinkURI: "https://lti.example.com/lti/launch", DeploymentID: "1:4dde05e8ca1973bcca9bffc13e1548820eee93a3"})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeLoginState(payload); !ok {
			b.Fatal("not decoded")
		}
	}
}
