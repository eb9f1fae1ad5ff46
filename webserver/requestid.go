package webserver

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

// maxRequestIDLen bounds an incoming X-Request-Id: it is echoed and logged on every line
// of the request, so a client must not be able to make it large.
const maxRequestIDLen = 128

// requestID is the id of r: its X-Request-Id when that is one value of 1 to 128 visible
// ASCII characters; else the trace id of a valid W3C traceparent; else a new random one
// (32 hex digits, the shape of a trace id). What a client sent otherwise is dropped, not
// cleaned: a log line never holds control characters or a header of unbounded length.
func requestID(r *http.Request) string {
	if ids := r.Header.Values("X-Request-Id"); len(ids) == 1 && validRequestID(ids[0]) {
		return ids[0]
	}
	if tps := r.Header.Values("Traceparent"); len(tps) == 1 {
		if traceID, ok := traceIDOf(tps[0]); ok {
			return traceID
		}
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// traceIDOf returns the trace id of a W3C Trace Context traceparent header
// (version-traceid-parentid-flags, lowercase hex), if the header is valid.
func traceIDOf(tp string) (string, bool) {
	// Version 00 is exactly 55 characters; later versions may append fields after a "-".
	if len(tp) < 55 || (len(tp) > 55 && tp[55] != '-') || len(tp) > 512 {
		return "", false
	}
	version, traceID, parentID, flags := tp[0:2], tp[3:35], tp[36:52], tp[53:55]
	if tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return "", false
	}
	if !lowerHex(version) || !lowerHex(traceID) || !lowerHex(parentID) || !lowerHex(flags) {
		return "", false
	}
	if version == "ff" || (version == "00" && len(tp) != 55) ||
		traceID == strings.Repeat("0", 32) || parentID == strings.Repeat("0", 16) {
		return "", false
	}
	return traceID, true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
