package e2e

import (
	"context"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// eventsOn are the Events on the object named name in namespace ns whose reason is reason
// ("": any reason).
func eventsOn(ns, name, reason string) []eventsv1.Event {
	var list eventsv1.EventList
	ExpectWithOffset(1, k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && (reason == "" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out
}
