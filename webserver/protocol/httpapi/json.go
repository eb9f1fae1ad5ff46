package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// DecodeJSON reads the request body into v. It demands a JSON content type, stops at the
// body limit set by the LimitBody middleware (413), and refuses unknown fields and
// trailing data, naming what is wrong.
func DecodeJSON(r *http.Request, v any) *Error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || (mediaType != "application/json" && !strings.HasSuffix(mediaType, "+json")) {
		return Errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
			"The request body must be JSON, sent with Content-Type: application/json.")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	// Anything after the value, even valid JSON, is an error of the body as a whole.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return decodeError(err)
		}
		return Errorf(http.StatusBadRequest, CodeInvalidBody, "The request body must hold a single JSON value.")
	}
	return nil
}

// ReadJSON is DecodeJSON for a handler: it reads the body into v, or answers the error and
// returns false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if herr := DecodeJSON(r, v); herr != nil {
		WriteError(w, herr)
		return false
	}
	return true
}

func decodeError(err error) *Error {
	var tooLarge *http.MaxBytesError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return Errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			fmt.Sprintf("The request body is larger than %d bytes.", tooLarge.Limit))
	case errors.Is(err, io.EOF):
		return Errorf(http.StatusBadRequest, CodeInvalidBody, "The request body is empty; a JSON object is required.")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(http.StatusBadRequest, CodeInvalidBody, "The request body is not valid JSON: "+err.Error()+".")
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return Errorf(http.StatusBadRequest, CodeInvalidParameters,
			fmt.Sprintf("%s: must be a JSON %s, not %s.", field, jsonType(typeErr.Type.Kind().String()), typeErr.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return Errorf(http.StatusBadRequest, CodeInvalidParameters,
			strings.TrimPrefix(err.Error(), "json: unknown field ")+": unknown field.")
	default:
		return Errorf(http.StatusBadRequest, CodeInvalidBody, "The request body could not be read: "+err.Error()+".")
	}
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "struct", "map", "ptr":
		return "object"
	default:
		return "number"
	}
}

// LimitBody caps every request body at maxBytes bytes.
func LimitBody(maxBytes int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > maxBytes {
				WriteError(w, Errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
					fmt.Sprintf("The request body is larger than %d bytes.", maxBytes)))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
			next.ServeHTTP(w, r)
		})
	}
}
