package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// problem is why a registration is not Ready. Problems need a spec change to go away, so
// they are reported once and not retried (no hot loop).
type problem struct{ reason, message string }

// setReadiness sets Ready, and Stalled when a problem needs a spec change, in the kstatus
// vocabulary. Reconciling is never left behind: every check finishes within one reconcile.
func setReadiness(conditions *[]metav1.Condition, generation int64, p *problem, readyMessage string) {
	ready := metav1.Condition{Type: ltiv1.ConditionReady, ObservedGeneration: generation}
	meta.RemoveStatusCondition(conditions, ltiv1.ConditionReconciling)
	if p != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, p.reason, p.message
		meta.SetStatusCondition(conditions, metav1.Condition{
			Type: ltiv1.ConditionStalled, Status: metav1.ConditionTrue, ObservedGeneration: generation,
			Reason: p.reason, Message: p.message,
		})
	} else {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, ltiv1.ReasonReady, readyMessage
		meta.RemoveStatusCondition(conditions, ltiv1.ConditionStalled)
	}
	meta.SetStatusCondition(conditions, ready)
}

// isReported says whether the Ready condition already tells p, so its event was sent.
func isReported(conditions []metav1.Condition, p *problem) bool {
	c := meta.FindStatusCondition(conditions, ltiv1.ConditionReady)
	return c != nil && c.Reason == p.reason && c.Message == p.message
}

// rateLimiter backs off failing reconciles from 1 s to 5 min, so an API server outage
// or a persistent error does not become a hot loop.
func rateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute)
}
