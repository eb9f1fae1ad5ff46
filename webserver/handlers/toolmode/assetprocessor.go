package toolmode

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/ltiop/ltiop/api/ltiwire"
	"io"
	"net/http"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/webserver/clients/advantage"
	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
	"github.com/ltiop/ltiop/webserver/protocol/lti"
)

// Codes of the Asset Processor endpoints.
const (
	CodeAssetNotFound = "ASSET_NOT_FOUND" // 404: not an asset of this launch or notice
	CodeAssetTooLarge = "ASSET_TOO_LARGE" // 502: larger than assetProcessor.maxAssetBytes
)

// DefaultMaxAssetBytes bounds an asset download when Options.MaxAssetBytes is zero.
const DefaultMaxAssetBytes = 100 << 20

// assetClient is the client of asset downloads: its own, with a longer timeout, when set.
func (t *Tool) assetClient() *advantage.Client {
	if t.opts.AssetClient != nil {
		return t.opts.AssetClient
	}
	return t.services
}

// DownloadAsset serves GET /api/assets/{assetId}: the asset streamed from the platform's
// Asset Service, its content type kept. The asset must be one the launch or notice named;
// with ?url= (an asset URL the platform gave elsewhere), the URL must be on the host of the
// grant's asset URLs. Larger than the limit: refused before streaming when the platform
// announces the size, else the stream is cut (the response ends without its last chunk).
func (t *Tool) DownloadAsset(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	if len(g.AssetURLs) == 0 {
		httpapi.WriteError(w, notAvailable("The launch or notice has no assets (Asset Service)."))
		return
	}
	if g.AssetScope == "" {
		httpapi.WriteError(w, notAvailable("The platform did not grant the asset.readonly scope."))
		return
	}
	target, herr := g.assetURL(r)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	cred, _, herr := t.credentials(g)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	limit := t.opts.MaxAssetBytes
	if limit <= 0 {
		limit = DefaultMaxAssetBytes
	}
	dl, err := t.assetClient().DownloadAsset(r.Context(), cred, target, g.AssetScope, limit)
	if err != nil {
		if errors.Is(err, advantage.ErrAssetTooLarge) {
			httpapi.WriteError(w, tooLarge(limit))
			return
		}
		t.writeUpstream(w, r, cred.PlatformID, err)
		return
	}
	defer dl.Body.Close()
	h := w.Header()
	h.Set("Content-Type", dl.ContentType)
	if dl.ContentType == "" {
		h.Set("Content-Type", "application/octet-stream")
	}
	if dl.ContentDisposition != "" {
		h.Set("Content-Disposition", dl.ContentDisposition)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if dl.Length >= 0 {
		h.Set("Content-Length", itoa64(dl.Length))
	}
	if d := t.opts.AssetTimeout; d > 0 {
		// The server's write timeout is for small answers; a large asset gets the time its
		// download is allowed.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + 5*time.Second))
	}
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, dl.Body); err != nil {
		// Headers are gone: the only way left to say "incomplete" is to cut the response.
		log.FromContext(r.Context()).Info("asset download stopped", "platform", cred.PlatformID,
			"tooLarge", errors.Is(err, advantage.ErrAssetTooLarge), "error", err.Error())
		panic(http.ErrAbortHandler)
	}
}

func tooLarge(limit int64) *httpapi.Error {
	return httpapi.Errorf(http.StatusBadGateway, CodeAssetTooLarge,
		"The asset is larger than "+itoa64(limit)+" bytes, the limit of this service (setting assetProcessor.maxAssetBytes).")
}

// assetURL is the URL of the asset {assetId}, or the ?url= one, pinned to the grant's hosts.
func (g *grant) assetURL(r *http.Request) (string, *httpapi.Error) {
	if raw := r.URL.Query().Get("url"); raw != "" {
		urls := make([]string, 0, len(g.AssetURLs))
		for _, u := range g.AssetURLs {
			urls = append(urls, u)
		}
		if !advantage.AssetURLOn(raw, urls) {
			return "", httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters,
				"url: not on the host of this launch's or notice's Asset Service; only asset URLs the platform gave can be used.")
		}
		return raw, nil
	}
	u, ok := g.AssetURLs[r.PathValue("assetId")]
	if !ok {
		return "", httpapi.Errorf(http.StatusNotFound, CodeAssetNotFound, "The launch or notice names no asset with this id.")
	}
	return u, nil
}

// PostReport serves POST /api/reports: an asset report in the simplified shape, validated
// field by field (400 names the field), sent to the platform's Asset Report Service.
func (t *Tool) PostReport(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	if g.ReportURL == "" {
		httpapi.WriteError(w, notAvailable("The launch or notice has no Asset Report Service."))
		return
	}
	if g.ReportScope == "" {
		httpapi.WriteError(w, notAvailable("The platform did not grant the report scope."))
		return
	}
	var rep advantage.Report
	herr := decodeValid(r, &rep, func() *advantage.FieldError { return advantage.ValidateReport(&rep, t.now()) })
	if herr == nil && len(g.AssetURLs) > 0 {
		if _, ok := g.AssetURLs[rep.AssetID]; !ok {
			herr = httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, "assetId: not an asset of this launch or notice.")
		}
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusCreated, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		if _, err := t.services.PostReport(ctx, cred, g.ReportURL, g.ReportScope, &rep); err != nil {
			return nil, err
		}
		return &rep, nil
	})
}

// eulaScope is the platform's spelling of want, or a 403 when the launch lacks it.
func (g *grant) eulaScope(want string) (string, *httpapi.Error) {
	if g.EulaURL == "" {
		return "", notAvailable("The launch has no EULA service.")
	}
	s, ok := lti.HasScope(g.EulaScopes, want)
	if !ok {
		return "", notAvailable("The platform did not grant the " + want + " scope.")
	}
	return s, nil
}

// GetEula serves GET /api/eula: the deployment's EULA requirement, as the platform says.
func (t *Tool) GetEula(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	scope, herr := g.eulaScope(ltiwire.ScopeEulaDeployment)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		out, err := t.services.GetEulaDeployment(ctx, cred, g.EulaURL, scope)
		if err == nil && out == nil {
			out = json.RawMessage(`{}`)
		}
		return out, err
	})
}

// eulaRequirement is the body of PUT /api/eula.
type eulaRequirement struct {
	EulaRequired *bool `json:"eulaRequired"`
}

// PutEula serves PUT /api/eula: whether the deployment's users must accept the EULA.
func (t *Tool) PutEula(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	scope, herr := g.eulaScope(ltiwire.ScopeEulaDeployment)
	var body eulaRequirement
	if herr == nil {
		herr = decodeValid(r, &body, func() *advantage.FieldError {
			if body.EulaRequired == nil {
				return &advantage.FieldError{Field: "eulaRequired", Message: "is required (true or false)"}
			}
			return nil
		})
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	d := advantage.EulaDeployment{EulaRequired: *body.EulaRequired}
	t.respond(w, r, http.StatusOK, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		if _, err := t.services.PutEulaDeployment(ctx, cred, g.EulaURL, scope, d); err != nil {
			return nil, err
		}
		return d, nil
	})
}

// eulaAnswer is the body of POST /api/eula/acceptance.
type eulaAnswer struct {
	UserID    string `json:"userId"`
	Accepted  *bool  `json:"accepted"`
	Timestamp string `json:"timestamp"`
}

// PostEulaAcceptance serves POST /api/eula/acceptance: a user's acceptance (or refusal) of
// the EULA. userId defaults to the launching user, timestamp to now; the answer is what was
// sent.
func (t *Tool) PostEulaAcceptance(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	scope, herr := g.eulaScope(ltiwire.ScopeEulaUser)
	var body eulaAnswer
	if herr == nil {
		herr = decodeValid(r, &body, func() *advantage.FieldError {
			if body.UserID == "" && g.claims != nil {
				body.UserID = g.claims.Subject
			}
			switch {
			case body.UserID == "":
				return &advantage.FieldError{Field: "userId", Message: "is required (a service key has no launching user)"}
			case len(body.UserID) > lti.MaxIdentifierLength:
				return &advantage.FieldError{Field: "userId", Message: "must be at most 255 bytes"}
			case body.Accepted == nil:
				return &advantage.FieldError{Field: "accepted", Message: "is required (true or false)"}
			}
			return advantage.ValidateDateTime("timestamp", body.Timestamp)
		})
	}
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	a := advantage.EulaAcceptance{UserID: body.UserID, Accepted: *body.Accepted, Timestamp: body.Timestamp}
	if a.Timestamp == "" {
		a.Timestamp = t.now().UTC().Format(time.RFC3339Nano)
	}
	t.respond(w, r, http.StatusCreated, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		if _, err := t.services.PostEulaAcceptance(ctx, cred, g.EulaURL, scope, a); err != nil {
			return nil, err
		}
		return a, nil
	})
}

// DeleteEulaAcceptances serves DELETE /api/eula/acceptance: every user must accept again.
func (t *Tool) DeleteEulaAcceptances(w http.ResponseWriter, r *http.Request) {
	g := grantFrom(r.Context())
	scope, herr := g.eulaScope(ltiwire.ScopeEulaUser)
	if herr != nil {
		httpapi.WriteError(w, herr)
		return
	}
	t.respond(w, r, http.StatusNoContent, func(ctx context.Context, cred advantage.Credentials) (any, error) {
		return nil, t.services.DeleteEulaAcceptances(ctx, cred, g.EulaURL, scope)
	})
}

// writeUpstream writes a failed platform call, logging a refused URL for the operator.
func (t *Tool) writeUpstream(w http.ResponseWriter, r *http.Request, platformID string, err error) {
	e := upstreamError(err)
	if e.Code == httpapi.CodeURLNotAllowed {
		log.FromContext(r.Context()).Info("platform URL refused by the outbound policy", "platform", platformID, "error", err.Error())
	}
	httpapi.WriteError(w, e)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
