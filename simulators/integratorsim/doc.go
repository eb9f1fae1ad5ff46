// Package integratorsim is the integrator's side of ltiop, as the demo and the tests play
// it: in tool mode a small web app served beside an LMS simulator (App: its Launch URL, its
// calls of ltiop's integrator API, its notice webhook and the work a notice starts), in
// platform mode a learning platform's app that launches a sample tool through ltiop
// (Platform, with the platform data API of simulators/datasim). Webhook and NoticeWebhook
// are the one model of the integrator's webhook the demo and the tests share.
//
// Like every simulator it imports no product code: what it sends and reads is written from
// the docs (docs/api.md, docs/platform-mode.md, docs/notices.md).
package integratorsim
