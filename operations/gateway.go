package operations

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/legacybridge/soapbridge/restbackend"
)

// gatewayError sorts a failed REST call: a refusal of the gateway (4xx)
// becomes a refusal with its code, name, field and message; everything else
// (unreachable, malformed, 5xx, a timed out POST whose outcome is unknown)
// is a ServerError that tells nothing of the internals.
func gatewayError(err error) error {
	var api *restbackend.APIError
	if errors.As(err, &api) && api.Status >= 400 && api.Status < 500 {
		return &refusal{desc: describeAPIError(api), code: ReasonGatewayRefused}
	}
	return serverError("payment gateway unavailable")
}

func describeAPIError(e *restbackend.APIError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "payment gateway refused the request (HTTP %d %s)", e.Status, http.StatusText(e.Status))
	for i, it := range e.Body.Errors {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Body.Errors)-i)
			break
		}
		b.WriteString("; error ")
		fmt.Fprintf(&b, "%d", it.ErrorCode)
		if it.ErrorName != "" {
			b.WriteString(" " + it.ErrorName)
		}
		if it.Field != "" {
			b.WriteString(" field " + it.Field)
		}
		if it.Message != "" {
			b.WriteString(": " + it.Message)
		}
	}
	return b.String()
}
