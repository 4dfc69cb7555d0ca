package sandbox

import (
	"fmt"
	"net/http"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Error codes the sandbox answers with (a subset of the real service's).
const (
	codeSystem            = 100
	codeMandatory         = 110
	codeWrongFormat       = 111
	codeInvalidRequest    = 116
	codeUnauthorized      = 200
	codeWrongCredentials  = 202
	codeWrongState        = 303
	codeNotFound          = 304
	codeRecurrenceFailed  = 330
	codeCaptureFailed     = 340
	codeVoidAuthFailed    = 350
	nameRefundUnsupported = "PAYMENT_REFUND_NOT_SUPPORTED"
)

var codeNames = map[int]string{
	codeSystem:           "SYSTEM_ERROR",
	codeMandatory:        "MANDATORY",
	codeWrongFormat:      "WRONG_FORMAT",
	codeInvalidRequest:   "INVALID_REQUEST",
	codeUnauthorized:     "UNAUTHORIZED_ACCESS",
	codeWrongCredentials: "WRONG_ACCESS_CREDENTIALS",
	codeWrongState:       "PAYMENT_WRONG_STATE",
	codeNotFound:         "PAYMENT_NOT_FOUND",
	codeRecurrenceFailed: "RECURRENCE_FAILED",
	codeCaptureFailed:    "PAYMENT_CAPTURE_FAILED",
	codeVoidAuthFailed:   "PAYMENT_AUTH_VOID_FAILED",
}

// apiError is a refusal: an HTTP status and the error list of the body.
type apiError struct {
	status int
	items  []restbackend.ErrorItem
}

func (e *apiError) Error() string {
	if len(e.items) == 0 {
		return http.StatusText(e.status)
	}
	it := e.items[0]
	if it.Field != "" {
		return fmt.Sprintf("%s (%s): %s", it.ErrorName, it.Field, it.Message)
	}
	return it.ErrorName + ": " + it.Message
}

// fieldErr is one field-scoped entry.
func fieldErr(code int, field, msg string) restbackend.ErrorItem {
	return restbackend.ErrorItem{Scope: "F", Field: field, ErrorCode: code, ErrorName: codeNames[code], Message: msg, Description: msg}
}

// globalErr is one global entry.
func globalErr(code int, msg string) restbackend.ErrorItem {
	return restbackend.ErrorItem{Scope: "G", ErrorCode: code, ErrorName: codeNames[code], Message: msg, Description: msg}
}

func refuse(status int, items ...restbackend.ErrorItem) *apiError {
	return &apiError{status: status, items: items}
}

func errNotFound(id int64) *apiError {
	return refuse(http.StatusNotFound, globalErr(codeNotFound, fmt.Sprintf("payment %d not found", id)))
}

func errWrongState(state, what string) *apiError {
	return refuse(http.StatusConflict, globalErr(codeWrongState, fmt.Sprintf("payment in state %s: %s", state, what)))
}

func errForbidden(msg string) *apiError {
	return refuse(http.StatusForbidden, globalErr(codeUnauthorized, msg))
}

func errField(code int, field, msg string) *apiError {
	return refuse(http.StatusConflict, fieldErr(code, field, msg))
}
