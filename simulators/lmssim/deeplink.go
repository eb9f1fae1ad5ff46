package lmssim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"
)

const (
	maxDLRequests  = 1000
	maxDLResponses = 100
)

// dlRequest is what the platform remembers of a deep-linking request it issued.
type dlRequest struct {
	hasData        bool
	data           string // the data claim, JSON-encoded
	acceptTypes    []string
	acceptMultiple bool
}

// rememberDeepLinking records the settings of claims when they are a deep-linking request.
func (l *LMS) rememberDeepLinking(claims map[string]any) {
	if claims[claimMessageType] != "LtiDeepLinkingRequest" {
		return
	}
	settings, ok := claims[claimDLSettings].(map[string]any)
	if !ok {
		return
	}
	var rec dlRequest
	if d, ok := settings["data"]; ok {
		b, err := json.Marshal(d)
		if err != nil {
			return
		}
		rec.hasData, rec.data = true, string(b)
	}
	switch t := settings["accept_types"].(type) {
	case []string:
		rec.acceptTypes = slices.Clone(t)
	case []any:
		for _, v := range t {
			if s, ok := v.(string); ok {
				rec.acceptTypes = append(rec.acceptTypes, s)
			}
		}
	}
	rec.acceptMultiple = settings["accept_multiple"] == true || settings["accept_multiple"] == "true"
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dl = slices.DeleteFunc(l.dl, func(o dlRequest) bool { return o.hasData == rec.hasData && o.data == rec.data })
	l.dl = append(l.dl, rec)
	if len(l.dl) > maxDLRequests {
		l.dl = slices.Delete(l.dl, 0, len(l.dl)-maxDLRequests)
	}
}

// DeepLinkResponses returns the claims of the deep-linking responses the platform accepted.
func (l *LMS) DeepLinkResponses() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return nil
	}
	out := make([]map[string]any, len(l.svc.dlResponses))
	for i, c := range l.svc.dlResponses {
		out[i] = maps.Clone(c)
	}
	return out
}

// deepLinkReturn is the deep_link_return_url: it verifies the LtiDeepLinkingResponse a
// tool posts (SEC §5.2.3, DL §4.5, P-DLR rules) and stores it.
func (l *LMS) deepLinkReturn(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("course") != "42" || q.Get("sesskey") != "abc" {
		http.Error(w, "invalid sesskey: post to the deep_link_return_url verbatim, with its query", http.StatusBadRequest)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if !hasContentType(r, "application/x-www-form-urlencoded") {
		http.Error(w, "the response must be a form (application/x-www-form-urlencoded)", http.StatusBadRequest)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "unreadable form", http.StatusBadRequest)
		return
	}
	raw := r.PostForm.Get("JWT")
	if raw == "" {
		http.Error(w, "the form field JWT is missing", http.StatusBadRequest)
		return
	}
	claims, kid, err := parseToolJWT(raw)
	if err == nil {
		err = l.verifyToolSignature(r.Context(), raw, kid)
	}
	var items []any
	if err == nil {
		items, err = l.checkDeepLinkResponse(claims, time.Now())
	}
	if err != nil {
		http.Error(w, "deep-linking response refused: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html>\n<html><body><p>Received %d items</p></body></html>\n", len(items)) //nolint:gosec // G705: writes only an integer
}

// checkDeepLinkResponse checks the claims of a deep-linking response, records its nonce
// and stores it. It returns the content items.
func (l *LMS) checkDeepLinkResponse(c map[string]any, now time.Time) ([]any, error) {
	if iss, _ := c["iss"].(string); iss != l.ClientID {
		return nil, fmt.Errorf("iss %q is not the client_id %q", iss, l.ClientID)
	}
	if !audienceContains(c["aud"], l.Issuer) {
		return nil, fmt.Errorf("aud %v does not contain the platform issuer %q", c["aud"], l.Issuer)
	}
	if v := c[claimMessageType]; v != "LtiDeepLinkingResponse" {
		return nil, fmt.Errorf("message_type %v is not LtiDeepLinkingResponse", v)
	}
	if v := c[claimVersion]; v != "1.3.0" {
		return nil, fmt.Errorf("version %v is not 1.3.0", v)
	}
	if v := c[claimDeploymentID]; v != l.DeploymentID {
		return nil, fmt.Errorf("deployment_id %v is not %q", v, l.DeploymentID)
	}
	nonce, _ := c["nonce"].(string)
	if nonce == "" {
		return nil, errors.New("nonce is required")
	}
	exp, err := checkLifetime(c, now, maxDLLifetime)
	if err != nil {
		return nil, err
	}
	var items []any
	if v, ok := c[claimDLItems]; ok && v != nil {
		if items, ok = v.([]any); !ok {
			return nil, errors.New("content_items must be an array")
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	data, hasData := c[claimDLData]
	var enc []byte
	if hasData {
		enc, _ = json.Marshal(data)
	}
	i := slices.IndexFunc(l.dl, func(d dlRequest) bool { return d.hasData == hasData && d.data == string(enc) })
	if i < 0 {
		if hasData {
			return nil, fmt.Errorf("data %s was not sent in any deep-linking request", enc)
		}
		return nil, errors.New("data is missing: the deep-linking request carried data")
	}
	req := l.dl[i]
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			return nil, errors.New("a content item is not an object")
		}
		typ, _ := obj["type"].(string)
		if typ == "" {
			return nil, errors.New("a content item has no type")
		}
		if req.acceptTypes != nil && !slices.Contains(req.acceptTypes, typ) {
			return nil, fmt.Errorf("content item type %q is not in accept_types %v", typ, req.acceptTypes)
		}
	}
	if len(items) > 1 && !req.acceptMultiple {
		return nil, fmt.Errorf("%d content items, but the request did not accept multiple", len(items))
	}
	pruneExpired(l.svc.dlNonces, now)
	if _, seen := l.svc.dlNonces[nonce]; seen {
		return nil, errors.New("nonce was already used")
	}
	l.svc.dlNonces[nonce] = exp
	l.svc.dlResponses = append(l.svc.dlResponses, c)
	if len(l.svc.dlResponses) > maxDLResponses {
		l.svc.dlResponses = slices.Delete(l.svc.dlResponses, 0, len(l.svc.dlResponses)-maxDLResponses)
	}
	return items, nil
}
