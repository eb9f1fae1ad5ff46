package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// WriteStatusProblem is writeStatus with a problem that is news, for the suite's stale-read
// test: next is reg with the problem set in its Ready condition.
func WriteStatusProblem(ctx context.Context, c client.StatusClient, rec events.EventRecorder, reg *ltiv1.PlatformRegistration, reason, message string) error {
	next := reg.DeepCopy()
	p := &problem{reason: reason, message: message}
	news := setReadiness(&next.Status.ObservedGeneration, &next.Status.Conditions, reg.Generation, p, "")
	return writeStatus(ctx, c, rec, reg, next, news)
}

// AdvanceRotation is one reconcile's rotation step of reg's key Secret s at now, as
// rotateKey takes it (s is changed in place): the kids it started and switched to.
func AdvanceRotation(reg *ltiv1.PlatformRegistration, s *corev1.Secret, now time.Time) (started, switched string, err error) {
	c, err := advanceRotation(s, planRotation(reg, s), now)
	return c.started, c.switched, err
}
