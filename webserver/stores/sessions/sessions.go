// Package sessions seals the tokens ltiop hands out and takes back — ltik, serviceKey, state,
// lti_message_hint and the platform-mode payload. Their single use is internal/replay's.
//
// A sealed token is a compact JWE (alg "dir", enc "A256GCM", zip "DEF") made with a key of
// the sealing keyring, which the controller keeps in the service Secret (internal/keyring
// holds the keys and their rotation). The protected header names the key (kid) and the
// token's purpose (typ "ltiop-<purpose>"); the purpose, expiry, issue time, token id and
// payload travel encrypted. A token opens only for the purpose it was sealed for, only
// before it expires and only with a key the keyring still holds.
package sessions

import (
	"errors"
	"net/http"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// Purposes of sealed tokens. A token sealed for one purpose never opens as another.
const (
	PurposeLTIK        = "ltik"
	PurposeServiceKey  = "servicekey"
	PurposeState       = "state"
	PurposeMessageHint = "messagehint"
	PurposePayload     = "payload"
	// PurposeDeepLinkReturn: the platform-mode deep-linking request a tool's response answers.
	PurposeDeepLinkReturn = "dl-return"
	// PurposePendingLaunch: a validated launch waiting for the platform-storage check.
	PurposePendingLaunch = "pending-launch"
	// PurposeRegistration: a dynamic registration waiting for the integrator's approval.
	PurposeRegistration = "registration"
	// PurposeListCursor: where the next page of a list (GET /api/platforms) starts.
	PurposeListCursor = "list-cursor"
	// PurposeNoticeKey: the short-lived credential a notice webhook hands the integrator, so
	// that it can call the services the notice names without a launch (docs/notices.md).
	PurposeNoticeKey = "noticekey"
	// PurposeServiceGrant: the grant in the URL of a platform-mode NRPS or AGS service
	// (the tool, its deployment and the context it was launched into).
	PurposeServiceGrant = "service-grant"
	// PurposeToolRegistration: the registration token of a tool's dynamic registration
	// with ltiop as the platform.
	PurposeToolRegistration = "tool-registration"
)

// Errors of Open. They say no more than this on purpose: a caller (and so a client) learns
// that a token expired, or that it is not a token of ours for this purpose, nothing else.
var (
	ErrExpired = errors.New("sessions: token expired")
	ErrInvalid = errors.New("sessions: invalid token")
)

// ErrSealingNotReady is the answer to a request that needs a token sealed when Seal fails,
// which in practice means the keyring has no key yet (the service Secret is not read yet).
var ErrSealingNotReady = httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeNotReady,
	"Sealing keys are not available yet; try again.")
