package lti

import "github.com/ltiop/ltiop/webserver/protocol/apierr"

// checkAssetProcessorMessage is T-TOK-21 for the Asset Processor and EULA messages: the
// claims each one requires (docs/asset-processor.md lists the rules).
//
//   - T-AP-01 LtiAssetProcessorSettingsRequest: activity.id and roles.
//   - T-AP-02 LtiReportReviewRequest: activity.id, submission.id, asset.id,
//     assetreport_type, for_user.user_id and roles.
//   - T-AP-03 LtiEulaRequest: eulaservice.url and eulaservice.scope.
//   - T-AP-04 any of them: a claim of the wrong JSON type is INVALID_CLAIM.
func checkAssetProcessorMessage(c *Claims) *apierr.Error {
	mt, ap := c.MessageType, &c.AssetProcessor
	if e := ap.typeError(); e != nil {
		return e
	}
	switch mt {
	case MessageAssetProcessorSettings:
		if e := requireActivity(ap, mt); e != nil {
			return e
		}
		return requireRoles(c, mt)
	case MessageReportReview:
		switch {
		case ap.Activity == nil || ap.Activity.ID == "":
			return apMissing("activity.id", mt, "T-AP-02")
		case ap.Submission == nil || ap.Submission.ID == "":
			return apMissing("submission.id", mt, "T-AP-02")
		case ap.Asset == nil || ap.Asset.ID == "":
			return apMissing("asset.id", mt, "T-AP-02")
		case ap.ReportType == "":
			return apMissing("assetreport_type", mt, "T-AP-02")
		case c.ForUser == nil || c.ForUser.UserID == "":
			return apMissing("for_user.user_id", mt, "T-AP-02")
		case len(ap.Submission.ID) > MaxIdentifierLength:
			return errTooLong("submission.id", "T-AP-02")
		}
		return requireRoles(c, mt)
	case MessageEula:
		switch {
		case ap.EulaService == nil || ap.EulaService.URL == "":
			return apMissing("eulaservice.url", mt, "T-AP-03")
		case len(ap.EulaService.Scope) == 0:
			return apMissing("eulaservice.scope", mt, "T-AP-03")
		}
	}
	return nil
}

func requireActivity(ap *AssetProcessor, mt string) *apierr.Error {
	if ap.Activity == nil || ap.Activity.ID == "" {
		return apMissing("activity.id", mt, "T-AP-01")
	}
	return nil
}

func requireRoles(c *Claims, mt string) *apierr.Error {
	switch {
	case c.bad&badRoles != 0:
		return c.errorFor(badRoles)
	case !c.RolesPresent:
		return errMissingClaim("roles", mt)
	}
	return nil
}

func apMissing(name, mt, rule string) *apierr.Error {
	e := errMissingClaim(name, mt)
	e.Rule = rule
	return e
}

// typeError is T-AP-04: the first Asset Processor claim sent with an unusable JSON type.
func (a *AssetProcessor) typeError() *apierr.Error {
	if a.bad == 0 {
		return nil
	}
	for _, b := range []struct {
		bit  apBits
		name string
		want string
	}{
		{apBadActivity, "activity", "an object"},
		{apBadSubmission, "submission", "an object"},
		{apBadAsset, "asset", "an object"},
		{apBadReportType, "assetreport_type", "a string"},
		{apBadAssetService, "assetservice", "an object"},
		{apBadAssetReport, "assetreport", "an object"},
		{apBadEulaService, "eulaservice", "an object"},
	} {
		if a.bad&b.bit != 0 {
			e := errInvalidClaim(b.name, b.want)
			e.Rule = "T-AP-04"
			return e
		}
	}
	return nil
}
