package launchhealth

import (
	"maps"

	"github.com/ltiop/ltiop/webserver/protocol/lti11"
)

// hints11 are the hints of the LTI 1.1 refusals, recorded like the 1.3 ones once the
// consumer key names a registration.
var hints11 = map[string]string{
	lti11.CodeInvalidSignature:           "The LTI 1.1 OAuth signature does not verify: check the consumer secret in the LMS against the registration's spec.lti11.sharedSecret, and that the LMS launches ltiop's public launch URL (status.launchUrl), not an address behind a proxy.",
	lti11.CodeStaleTimestamp:             "The LTI 1.1 launch's oauth_timestamp is too old or in the future: check the LMS server's clock (NTP).",
	lti11.CodeNonceReused:                "An LTI 1.1 launch form was submitted twice: usually harmless; repeated, it is a replay attempt.",
	lti11.CodeBodyHashMismatch:           "The LTI 1.1 request's oauth_body_hash does not match its body: an LMS or proxy altered the request.",
	lti11.CodeUnsupportedSignatureMethod: "The LMS signs LTI 1.1 launches with another method than HMAC-SHA1: configure HMAC-SHA1.",
	lti11.CodeAmbiguousConsumerKey:       "Another registration holds the same LTI 1.1 consumer key (condition LTI11ConsumerKeyUnique names it), so 1.1 launches with it are refused: change or remove spec.lti11 on all but one.",
}

func init() { maps.Copy(hints, hints11) }
