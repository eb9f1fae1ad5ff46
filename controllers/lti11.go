package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ltiv1 "github.com/ltiop/ltiop/api/v1alpha1"
)

// IndexLTI11ConsumerKey indexes PlatformRegistrations by their LTI 1.1 consumer key.
const IndexLTI11ConsumerKey = "spec.lti11.consumerKey"

// consumerKeyHolders finds the registrations that share an LTI 1.1 consumer key. Unlike
// (url, clientId), no holder wins: a 1.1 launch names nothing but its consumer key, so the
// web server refuses launches with a key two registrations hold (written with kubectl, or
// two API creates that passed the API's check at the same moment), and every holder's
// status says so.
var consumerKeyHolders = newSharedIdentity[ltiv1.PlatformRegistrationList](IndexLTI11ConsumerKey,
	func(reg *ltiv1.PlatformRegistration) string {
		if reg.Spec.LTI11 == nil {
			return ""
		}
		return reg.Spec.LTI11.ConsumerKey
	})

// maxNamedHolders bounds the names an AmbiguousConsumerKey message lists.
const maxNamedHolders = 10

// setConsumerKeyCondition sets the LTI11ConsumerKeyUnique condition of a registration with
// spec.lti11 (and removes it from one without). It returns the problem to announce once
// when the condition newly says the key is ambiguous.
func (r *PlatformRegistrationReconciler) setConsumerKeyCondition(ctx context.Context, reg *ltiv1.PlatformRegistration, status *ltiv1.PlatformRegistrationStatus) (*problem, error) {
	if reg.Spec.LTI11 == nil {
		meta.RemoveStatusCondition(&status.Conditions, ltiv1.ConditionLTI11ConsumerKeyUnique)
		return nil, nil
	}
	peers, err := consumerKeyHolders.peers(ctx, r.Client, reg)
	if err != nil {
		return nil, err
	}
	key := reg.Spec.LTI11.ConsumerKey
	cond := metav1.Condition{Type: ltiv1.ConditionLTI11ConsumerKeyUnique, Status: metav1.ConditionTrue,
		ObservedGeneration: reg.Generation, Reason: ltiv1.ReasonConsumerKeyUnique,
		Message: fmt.Sprintf("No other registration holds LTI 1.1 consumer key %q.", key)}
	if len(peers) > 0 {
		names := make([]string, 0, len(peers))
		for _, p := range peers {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		listed := strings.Join(names[:min(len(names), maxNamedHolders)], ", ")
		if len(names) > maxNamedHolders {
			listed += fmt.Sprintf(" and %d more", len(names)-maxNamedHolders)
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, ltiv1.ReasonAmbiguousConsumerKey
		cond.Message = fmt.Sprintf("PlatformRegistration %s also holds LTI 1.1 consumer key %q: LTI 1.1 launches with this key are refused "+
			"(LTI11_AMBIGUOUS_CONSUMER_KEY) until only one registration holds it. Change or remove spec.lti11 on all but one.", listed, key)
	}
	var news *problem
	if prev := meta.FindStatusCondition(status.Conditions, cond.Type); cond.Status == metav1.ConditionFalse &&
		(prev == nil || prev.Status != cond.Status || prev.Message != cond.Message) {
		news = &problem{cond.Reason, cond.Message}
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	return news, nil
}
