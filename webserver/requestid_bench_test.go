package webserver

import (
	"net/http/httptest"
	"testing"
)

// requestID runs on every request.
func BenchmarkRequestID(b *testing.B) {
	for _, bc := range []struct{ name, header, value string }{
		{"generated", "", ""},
		{"x-request-id", "X-Request-Id", "0f8e2b1c-5d4a-4e3b-9c2d-1a0b9c8d7e6f"},
		{"traceparent", "Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	} {
		r := httptest.NewRequest("GET", "/healthz", nil)
		if bc.header != "" {
			r.Header.Set(bc.header, bc.value)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = requestID(r)
			}
		})
	}
}
