package sandbox

import (
	"fmt"
	"net/http"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Error codes and names the sandbox answers with, from the gateway's
// published list (../shared/reference/rest-facts.md). Where the facts give
// a code but no name, the name is the sandbox's own wording of the code.
const (
	codeSystem               = 100
	codeMandatory            = 110
	codeWrongFormat          = 111
	codeInvalidRequest       = 116
	codeUnauthorized         = 200
	codeWrongCredentials     = 202
	codeCreateFailed         = 301
	codeWrongState           = 303
	codeNotFound             = 304
	codeRefundNotSupported   = 330 // the payment cannot be refunded (state)
	codeRefundFailed         = 331 // the refund was refused (nothing left, scenario)
	codeRefundWrongAmount    = 332
	codeRefundNoFunds        = 333
	codeRecurrenceFailed     = 340
	codeRecurrenceNotAllowed = 341
	codeRecurrenceStopped    = 342
	codeCaptureFailed        = 350
	codeCaptureDone          = 351
	codeVoidAuthFailed       = 352
	codeVoidAuthDone         = 353
	codeItemsMismatch        = 360
)

var codeNames = map[int]string{
	codeSystem:               "SYSTEM_ERROR",
	codeMandatory:            "MANDATORY",
	codeWrongFormat:          "WRONG_FORMAT",
	codeInvalidRequest:       "INVALID_REQUEST",
	codeUnauthorized:         "UNAUTHORIZED_ACCESS",
	codeWrongCredentials:     "WRONG_ACCESS_CREDENTIALS",
	codeCreateFailed:         "PAYMENT_CREATE_FAILED",
	codeWrongState:           "PAYMENT_WRONG_STATE",
	codeNotFound:             "PAYMENT_NOT_FOUND",
	codeRefundNotSupported:   "PAYMENT_REFUND_NOT_SUPPORTED",
	codeRefundFailed:         "PAYMENT_REFUND_NOT_SUPPORTED",
	codeRefundWrongAmount:    "PAYMENT_REFUND_WRONG_AMOUNT",
	codeRefundNoFunds:        "PAYMENT_REFUND_NOT_ENOUGH_FUNDS",
	codeRecurrenceFailed:     "PAYMENT_RECURRENCE_FAILED",
	codeRecurrenceNotAllowed: "PAYMENT_RECURRENCE_NOT_SUPPORTED",
	codeRecurrenceStopped:    "PAYMENT_RECURRENCE_STOPPED",
	codeCaptureFailed:        "PAYMENT_CAPTURE_FAILED",
	codeCaptureDone:          "PAYMENT_CAPTURE_DONE",
	codeVoidAuthFailed:       "PAYMENT_AUTH_VOID_FAILED",
	codeVoidAuthDone:         "PAYMENT_AUTH_VOID_DONE",
	codeItemsMismatch:        "PAYMENT_ITEMS_AMOUNT_MISMATCH",
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

// errConflict is a global 409 refusal with code.
func errConflict(code int, format string, args ...any) *apiError {
	return refuse(http.StatusConflict, globalErr(code, fmt.Sprintf(format, args...)))
}
