package toolmode

import (
	"math"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/internal/pox"
	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// CodeOutcomeRefused means the LMS answered the Basic Outcomes request with an imsx_codeMajor
// other than success; details.upstreamBody holds its code and description.
const CodeOutcomeRefused = "OUTCOME_REFUSED"

// Outcome is the body of PUT/POST /api/outcomes and the answer of GET: a score in [0, 1]
// (null on GET when the LMS holds none) and optional text result data.
type Outcome struct {
	Score *float64 `json:"score"`
	Text  string   `json:"text,omitempty"`
}

// maxOutcomeText bounds the text result data sent to the LMS.
const maxOutcomeText = 4096

// ReadOutcome serves GET /api/outcomes: readResult of the launch's result.
func (t *Tool) ReadOutcome(w http.ResponseWriter, r *http.Request) {
	t.outcome(w, r, pox.OpRead, pox.Outcome{})
}

// ReplaceOutcome serves PUT and POST /api/outcomes: replaceResult with the body's score.
func (t *Tool) ReplaceOutcome(w http.ResponseWriter, r *http.Request) {
	var in Outcome
	if !httpapi.ReadJSON(w, r, &in) {
		return
	}
	if in.Score == nil || math.IsNaN(*in.Score) || !pox.ValidScore(*in.Score) {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters,
			"score: a number from 0 to 1 is required (Basic Outcomes scores are fractions)."))
		return
	}
	if len(in.Text) > maxOutcomeText {
		httpapi.WriteError(w, httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, "text: at most 4096 bytes."))
		return
	}
	t.outcome(w, r, pox.OpReplace, pox.Outcome{Score: *in.Score, Text: in.Text})
}

// DeleteOutcome serves DELETE /api/outcomes: deleteResult.
func (t *Tool) DeleteOutcome(w http.ResponseWriter, r *http.Request) {
	t.outcome(w, r, pox.OpDelete, pox.Outcome{})
}

func (t *Tool) outcome(w http.ResponseWriter, r *http.Request, op string, o pox.Outcome) {
	g := grantFrom(r.Context())
	if g.OutcomeURL == "" || g.SourcedID == "" {
		httpapi.WriteError(w, notAvailable("Basic Outcomes are not available in this launch (no lis_outcome_service_url and lis_result_sourcedid)."))
		return
	}
	p, herr := t.auth.platformOf(g)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	key, secret, ok := t.outcomesKey(p)
	if !ok {
		httpapi.WriteError(w, notAvailable("The registration has no readable LTI 1.1 shared secret (spec.lti11) to sign Basic Outcomes with."))
		return
	}
	answer, err := t.services.BasicOutcome(r.Context(), advantage.OutcomeCall{
		ServiceURL: g.OutcomeURL, SourcedID: g.SourcedID, ConsumerKey: key, Secret: secret, Op: op, Outcome: o,
	})
	if refused, ok := advantage.IsOutcomeRefused(err); ok {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusBadGateway, Code: CodeOutcomeRefused,
			Description: "The LMS refused the outcome (imsx_codeMajor " + refused.CodeMajor + ").",
			Upstream:    &httpapi.Upstream{Status: http.StatusOK, Body: truncateText(refused.CodeMajor+": "+refused.Description, 1024)}})
		return
	}
	if err != nil {
		e := upstreamError(err)
		if e.Code == httpapi.CodeURLNotAllowed {
			log.FromContext(r.Context()).Info("outcome service URL refused by the outbound policy", "platform", p.ID, "error", err.Error())
		}
		httpapi.WriteError(w, e)
		return
	}
	if op != pox.OpRead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	out := Outcome{Text: answer.Text}
	if answer.HasScore {
		out.Score = &answer.Score
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func truncateText(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
