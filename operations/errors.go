package operations

import (
	"errors"
	"fmt"
)

// ServerError means an operation could not be performed on the bridge's or
// the gateway's side (gateway unreachable, store down); Msg is safe to show
// to the client and tells nothing of the internals. The SOAP adapter sends
// it as a Server fault.
type ServerError struct{ Msg string }

func (e *ServerError) Error() string { return e.Msg }

func serverError(msg string) *ServerError { return &ServerError{Msg: msg} }

// refusal is a request the bridge or the gateway refused; the core answers
// it with a CALL_FAILED / FAILED reply carrying the description, never an
// error.
type refusal struct {
	desc   string
	badSig bool // the request's signature does not verify (counted)
	// code is the refusal's reason code when its stage sets one (see
	// RefusalReasons); signed, of a bad signature, what it was sent over,
	// for its diagnosis (diagnose.go).
	code   string
	signed *signedRequest
}

func (r *refusal) Error() string { return r.desc }

func refuse(format string, args ...any) *refusal {
	return &refusal{desc: fmt.Sprintf(format, args...)}
}

// Errors of the browser flows; the web adapter turns each into its page or
// plain answer.
var (
	// ErrBadSignature: the request's encryptedSignature does not verify.
	ErrBadSignature = errors.New("the request's signature does not verify")
	// ErrUnknownPayment: the gateway does not know the payment, or it is
	// another e-shop's.
	ErrUnknownPayment = errors.New("unknown payment")
	// ErrNoReturnURL: the bridge knows no return URL of the payment.
	ErrNoReturnURL = errors.New("no return URL known")
	// ErrGatewayDown: the gateway did not answer usefully (logged).
	ErrGatewayDown = errors.New("payment gateway unavailable")
	// ErrStoreDown: the bridge's store failed (logged).
	ErrStoreDown = errors.New("store unavailable")
	// ErrNotCreated: pay-base-v2 could not create the payment now.
	ErrNotCreated = errors.New("payment not created")
)

// RequestError is a malformed or refused browser-flow request; Msg
// describes it for the caller.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// RefusedError is a payment (pay-base-v2) or statement that the bridge or
// the gateway refused; Desc says why.
type RefusedError struct{ Desc string }

func (e *RefusedError) Error() string { return e.Desc }
