package sessions

// PurposeNoticeKey seals the short-lived credential a notice webhook hands the integrator, so
// that it can call the services the notice names without a launch (docs/notices.md).
const PurposeNoticeKey = "noticekey"
