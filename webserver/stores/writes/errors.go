package writes

import (
	"context"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ltiop/ltiop/webserver/protocol/httpapi"
)

// APIServerError turns an API-server failure into an API error without leaking internals.
func APIServerError(ctx context.Context, err error) *httpapi.Error {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err):
		return httpapi.Errorf(http.StatusNotFound, httpapi.CodePlatformNotFound, "The platform does not exist (any more).")
	case apierrors.IsInvalid(err) && errors.As(err, &status):
		var msgs []string
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				msgs = append(msgs, strings.TrimPrefix(c.Field, "spec.")+": "+c.Message)
			}
		}
		if len(msgs) == 0 {
			msgs = append(msgs, status.Status().Message)
		}
		return httpapi.Errorf(http.StatusBadRequest, httpapi.CodeInvalidParameters, strings.Join(msgs, "; ")+".")
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return httpapi.Errorf(http.StatusConflict, httpapi.CodeConflict, "The platform was changed meanwhile; read it and try again.")
	default:
		log.FromContext(ctx).Error(err, "API server call failed")
		return httpapi.Errorf(http.StatusServiceUnavailable, httpapi.CodeAPIServerUnavailable, "The Kubernetes API server could not be reached; try again.")
	}
}
