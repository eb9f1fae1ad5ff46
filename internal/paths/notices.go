package paths

// Notices is the route of the notice endpoint: the handler ltiop registers with a
// platform's Platform Notification Service for one registration (docs/notices.md).
const Notices = "/lti/notices/{platformId}"

// NoticeEndpoint is the notice endpoint of registration id (metadata.name, a DNS subdomain
// that needs no escaping in a path).
func NoticeEndpoint(id string) string { return "/lti/notices/" + id }
