package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// Registrations written by /lti/register (an unauthenticated request) wait here until they
// are first activated: no key and no Secret are made for them, and one never activated
// within PendingExpiry is deleted. So a flood of registrations costs no key generation and
// lasts a bounded time.

// awaitActivation reports a never-activated dynamic registration as waiting (Ready False,
// not Stalled: nothing is wrong), or deletes it once it has waited PendingExpiry.
func (r *PlatformRegistrationReconciler) awaitActivation(ctx context.Context, reg, next *ltiv1.PlatformRegistration) (ctrl.Result, error) {
	var left time.Duration
	if r.PendingExpiry > 0 {
		left = reg.CreationTimestamp.Add(r.PendingExpiry).Sub(r.now())
		if left <= 0 {
			return ctrl.Result{}, r.expire(ctx, reg)
		}
	}
	status := &next.Status
	status.ObservedGeneration = reg.Generation
	meta.RemoveStatusCondition(&status.Conditions, ltiv1.ConditionReconciling)
	meta.RemoveStatusCondition(&status.Conditions, ltiv1.ConditionStalled)
	message := "Registered dynamically and not activated yet: no key is made until it is activated (spec.active: true)."
	if r.PendingExpiry > 0 {
		message += fmt.Sprintf(" Unless activated, it is deleted at %s.",
			reg.CreationTimestamp.Add(r.PendingExpiry).UTC().Format(time.RFC3339))
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ltiv1.ConditionReady,
		Status: metav1.ConditionFalse, ObservedGeneration: reg.Generation,
		Reason: ltiv1.ReasonAwaitingActivation, Message: message})
	if err := r.setOAuth2Condition(ctx, reg, status); err != nil {
		return ctrl.Result{}, err
	}
	ambiguous, err := r.setConsumerKeyCondition(ctx, reg, status)
	if err != nil {
		return ctrl.Result{}, err
	}
	return statusWritten(writeStatus(ctx, r.Client, r.Recorder, reg, next, ambiguous), left)
}

// expire deletes a registration that waited too long. It is read again from the API
// server, and deleted only at that version: one activated meanwhile is kept.
func (r *PlatformRegistrationReconciler) expire(ctx context.Context, reg *ltiv1.PlatformRegistration) error {
	current := &ltiv1.PlatformRegistration{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(reg), current); err != nil {
		return client.IgnoreNotFound(err)
	}
	if current.UID != reg.UID || !current.AwaitingActivation() || !current.DeletionTimestamp.IsZero() {
		return nil // changed meanwhile: its own event reconciles it
	}
	r.Recorder.Eventf(current, nil, corev1.EventTypeNormal, ltiv1.ReasonExpired, "Delete",
		"Registered dynamically on %s and never activated within %s; deleted.",
		current.CreationTimestamp.UTC().Format(time.RFC3339), r.PendingExpiry)
	err := r.Delete(ctx, current, client.Preconditions{UID: &current.UID, ResourceVersion: &current.ResourceVersion})
	if err != nil {
		return client.IgnoreNotFound(err) // a conflict is retried, and reads the new version
	}
	log.FromContext(ctx).Info("deleted a dynamic registration never activated", "platform", current.Name,
		"issuer", current.Spec.URL, "age", r.now().Sub(current.CreationTimestamp.Time).Round(time.Second).String())
	return nil
}

// recordFirstActivation sets status.firstActivated the first time a dynamic registration
// is seen active: from then on it has a key and never expires. Only dynamic registrations
// need the record. One active since its creation (generation 1) records its creation
// time, so two reconciles of the same generation write the same value.
func recordFirstActivation(reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus, now time.Time) {
	if !reg.IsDynamic() || !reg.Spec.IsActive() || status.FirstActivated != nil {
		return
	}
	at := metav1.NewTime(now.Truncate(time.Second))
	if reg.Generation == 1 {
		at = reg.CreationTimestamp
	}
	status.FirstActivated = &at
}

func (r *PlatformRegistrationReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
