package app

import (
	"encoding/json"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// Objects decoded apart (as the informers decode each event) come out of the cache
// transform sharing the strings they repeat, their values unchanged and no managedFields.
func TestCacheTransformSharesRepeatedStrings(t *testing.T) {
	const secretJSON = `{"metadata":{"name":"lms-key","namespace":"ltiop-system",
		"labels":{"app.kubernetes.io/managed-by":"ltiop","lti.ltiop.dev/platform-registration":"lms"},
		"ownerReferences":[{"apiVersion":"lti.ltiop.dev/v1alpha1","kind":"PlatformRegistration","name":"lms","uid":"u1","controller":true}],
		"managedFields":[{"manager":"ltiop","operation":"Apply"}]},
		"type":"lti.ltiop.dev/tool-key","data":{"privateKey":"UEVN","kid":"a2lk"}}`
	const regJSON = `{"metadata":{"name":"lms","namespace":"ltiop-system"},
		"spec":{"url":"https://lms.example","clientId":"c","name":"LMS","authConfig":{"method":"JWK_SET","key":"https://lms.example/jwks"}},
		"status":{"loginUrl":"https://lti.example.com/lti/login","launchUrl":"https://lti.example.com/lti/launch",
		"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"The registration is ready.","lastTransitionTime":"2026-11-25T00:00:00Z"}]}}`
	transform := cacheTransform()
	decode := func(doc string, into any) any {
		t.Helper()
		if err := json.Unmarshal([]byte(doc), into); err != nil {
			t.Fatal(err)
		}
		out, err := transform(into)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := decode(secretJSON, &corev1.Secret{}).(*corev1.Secret), decode(secretJSON, &corev1.Secret{}).(*corev1.Secret)
	var want corev1.Secret
	if err := json.Unmarshal([]byte(secretJSON), &want); err != nil {
		t.Fatal(err)
	}
	want.ManagedFields = nil
	if !equality.Semantic.DeepEqual(a, &want) {
		t.Fatalf("the transform changed the Secret: %+v", a)
	}
	shared := func(what, x, y string) {
		t.Helper()
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: two copies of %q", what, x)
		}
	}
	shared("namespace", a.Namespace, b.Namespace)
	shared("type", string(a.Type), string(b.Type))
	shared("owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind)
	shared("owner apiVersion", a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion)
	for k := range a.Labels {
		for l := range b.Labels {
			if k == l {
				shared("label key", k, l)
			}
		}
	}
	for k := range a.Data {
		for l := range b.Data {
			if k == l {
				shared("data key", k, l)
			}
		}
	}

	r1, r2 := decode(regJSON, &ltiv1.PlatformRegistration{}).(*ltiv1.PlatformRegistration), decode(regJSON, &ltiv1.PlatformRegistration{}).(*ltiv1.PlatformRegistration)
	shared("namespace", r1.Namespace, r2.Namespace)
	shared("login URL", r1.Status.LoginURL, r2.Status.LoginURL)
	shared("launch URL", r1.Status.LaunchURL, r2.Status.LaunchURL)
	shared("condition message", r1.Status.Conditions[0].Message, r2.Status.Conditions[0].Message)
	shared("condition reason", r1.Status.Conditions[0].Reason, r2.Status.Conditions[0].Reason)
	if r1.Name != "lms" || r1.Status.Conditions[0].Message != "The registration is ready." || r1.Spec.AuthConfig.Method != ltiv1.AuthMethodJWKSet {
		t.Fatalf("the transform changed the registration: %+v", r1)
	}
}
