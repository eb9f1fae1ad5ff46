package controllers_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"

	"github.com/lestrrat-go/jwx/v3/jwk"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// Helpers the specs of both registration kinds share.

var counter int

// uniqueName keeps specs independent inside the one watched namespace.
func uniqueName(prefix string) string {
	counter++
	return fmt.Sprintf("%s-%d-%d", prefix, GinkgoParallelProcess(), counter)
}

// fresh reads obj again straight from the API server.
func fresh[T any, PT interface {
	*T
	client.Object
}](obj PT) PT {
	out := PT(new(T))
	ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), out)).To(Succeed())
	return out
}

// observedStatus is the part of status both kinds share.
func observedStatus(obj client.Object) (int64, []metav1.Condition) {
	switch o := obj.(type) {
	case *ltiv1.PlatformRegistration:
		return o.Status.ObservedGeneration, o.Status.Conditions
	case *ltiv1.ToolRegistration:
		return o.Status.ObservedGeneration, o.Status.Conditions
	}
	panic(fmt.Sprintf("no status conditions in %T", obj))
}

// observedCondition returns the condition of the given type once it, and status, describe
// the current generation.
func observedCondition[T any, PT interface {
	*T
	client.Object
}](obj PT, conditionType string) func() *metav1.Condition {
	return func() *metav1.Condition {
		cur := fresh(obj)
		observed, conditions := observedStatus(cur)
		c := meta.FindStatusCondition(conditions, conditionType)
		if c == nil || c.ObservedGeneration != cur.GetGeneration() || observed != cur.GetGeneration() {
			return nil
		}
		return c
	}
}

// readyCondition returns the Ready condition once it describes the current generation.
func readyCondition[T any, PT interface {
	*T
	client.Object
}](obj PT) func() *metav1.Condition {
	return observedCondition(obj, ltiv1.ConditionReady)
}

func haveReason(status metav1.ConditionStatus, reason string) OmegaMatcher {
	return And(Not(BeNil()), WithTransform(func(c *metav1.Condition) string { return string(c.Status) + "/" + c.Reason },
		Equal(string(status)+"/"+reason)))
}

func withMessage(want string) OmegaMatcher {
	return WithTransform(func(c *metav1.Condition) string { return c.Message }, ContainSubstring(want))
}

func eventsFor(name, reason string) func() []eventsv1.Event {
	return func() []eventsv1.Event {
		var list eventsv1.EventList
		Expect(k8s.List(context.Background(), &list, client.InNamespace(namespace))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}
}

func rsaPublicPEM(bits int) string {
	k, err := rsa.GenerateKey(rand.Reader, bits)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	Expect(err).NotTo(HaveOccurred())
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func jwkJSON(raw any) string {
	k, err := jwk.Import(raw)
	Expect(err).NotTo(HaveOccurred())
	b, err := json.Marshal(k)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// updateSpec writes obj as a user's edit would land: on the latest version, so that a status
// write of the controller between the test's read and its update (which changes the
// resourceVersion, not the spec) does not fail the test with a Conflict.
func updateSpec(obj client.Object) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := obj.DeepCopyObject().(client.Object)
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), latest); err != nil {
			return err
		}
		obj.SetResourceVersion(latest.GetResourceVersion())
		return k8s.Update(context.Background(), obj)
	})
}
