package httpapi

import (
	"context"
	"sync/atomic"
)

// RequestInfo collects what handlers learn about a request that the request log line
// should carry (the platform it concerns), without the handlers logging it themselves.
type RequestInfo struct {
	platformID atomic.Pointer[string]
}

type requestInfoKey struct{}

// WithRequestInfo returns ctx carrying a fresh RequestInfo, and that RequestInfo.
func WithRequestInfo(ctx context.Context) (context.Context, *RequestInfo) {
	info := &RequestInfo{}
	return context.WithValue(ctx, requestInfoKey{}, info), info
}

// NotePlatform records the platform (registration name) the request concerns. It does
// nothing outside a request the web server observes.
func NotePlatform(ctx context.Context, platformID string) {
	if info, ok := ctx.Value(requestInfoKey{}).(*RequestInfo); ok && platformID != "" {
		info.platformID.Store(&platformID)
	}
}

// PlatformID is the platform noted for the request, or "".
func (i *RequestInfo) PlatformID() string {
	if p := i.platformID.Load(); p != nil {
		return *p
	}
	return ""
}
