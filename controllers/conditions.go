package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// problem is why a registration is not Ready. Problems need a spec change to go away, so
// they are reported once and not retried (no hot loop).
type problem struct{ reason, message string }

// setReadiness sets the status every kind shares: observedGeneration, and Ready plus Stalled
// when a problem needs a spec change, in the kstatus vocabulary. Reconciling is never left
// behind: every check finishes within one reconcile. It returns p when the Ready condition
// did not tell it yet, so writeStatus reports it once.
func setReadiness(observedGeneration *int64, conditions *[]metav1.Condition, generation int64, p *problem, readyMessage string) (news *problem) {
	if p != nil && !isReported(*conditions, p) {
		news = p
	}
	*observedGeneration = generation
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
	return news
}

// isReported says whether the Ready condition already tells p, so its event was sent.
func isReported(conditions []metav1.Condition, p *problem) bool {
	c := meta.FindStatusCondition(conditions, ltiv1.ConditionReady)
	return c != nil && c.Reason == p.reason && c.Message == p.message
}

// writeStatus is the one way registration status is written: next is reg, as read, with
// the new status. An unchanged status is not written, so a standing problem makes no hot
// loop. The patch carries reg's resourceVersion: a reconcile that read a stale cache (its
// own last write not seen yet) gets a Conflict instead of writing again, and each of news
// (from setReadiness, or another condition's first telling; nil ones are skipped) becomes
// one Warning event only once the write that tells it succeeded.
// The lock also keeps another writer's conditions: a merge patch replaces the conditions
// list whole, so a patch from a stale read would undo the reachability probe's.
func writeStatus[O client.Object](ctx context.Context, c client.StatusClient, rec events.EventRecorder, reg, next O, news ...*problem) error {
	if equality.Semantic.DeepEqual(reg, next) {
		return nil
	}
	if err := c.Status().Patch(ctx, next, client.MergeFromWithOptions(reg, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	for _, p := range news {
		if p != nil {
			rec.Eventf(reg, nil, corev1.EventTypeWarning, p.reason, "Validate", "%s", p.message)
		}
	}
	return nil
}

// statusWritten ends a reconcile after writeStatus: a Conflict means the read was stale;
// the newer version's watch event brings the registration back, and a look a second later
// covers a missed one, without an error in the log. A registration deleted meanwhile needs
// nothing.
func statusWritten(err error, after time.Duration) (reconcile.Result, error) {
	switch {
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// rateLimiter backs off failing reconciles from 1 s to 5 min, so an API server outage
// or a persistent error does not become a hot loop.
func rateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Minute)
}
