package operations

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/soapenc"
)

// refusal is a request the bridge or the gateway refused; it becomes a
// CALL_FAILED / FAILED reply carrying the description, never a fault.
type refusal struct{ desc string }

func (r *refusal) Error() string { return r.desc }

func refuse(format string, args ...any) *refusal {
	return &refusal{desc: fmt.Sprintf(format, args...)}
}

// fields reads the members of one input struct, keeping the first problem.
// Values are read exactly as sent, so signatures are checked over what the
// client signed.
type fields struct {
	v    *soapenc.Value
	part string
	err  *refusal
}

func readPart(call *soapenc.Call, part string) *fields {
	v := call.Param(part)
	f := &fields{v: v, part: part}
	if v.IsAbsent() {
		f.err = refuse("missing %s", part)
	}
	return f
}

// str returns the text of name ("" when absent).
func (f *fields) str(name string) string {
	s, _ := f.v.Field(name).String()
	return s
}

// optStr returns the text of name, nil when absent.
func (f *fields) optStr(name string) *string {
	s, ok := f.v.Field(name).String()
	if !ok {
		return nil
	}
	return &s
}

// long reads an optional integer.
func (f *fields) long(name string) *int64 {
	n, ok, err := f.v.Field(name).Int64()
	if err != nil {
		f.fail("%s.%s is not a number", f.part, name)
		return nil
	}
	if !ok {
		return nil
	}
	return &n
}

// boolean reads an optional boolean.
func (f *fields) boolean(name string) *bool {
	b, ok, err := f.v.Field(name).Bool()
	if err != nil {
		f.fail("%s.%s is not a boolean", f.part, name)
		return nil
	}
	if !ok {
		return nil
	}
	return &b
}

// need reports a missing required value.
func (f *fields) need(name string, present bool) {
	if !present {
		f.fail("missing %s.%s", f.part, name)
	}
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = refuse(format, args...)
	}
}

// gatewayError sorts a failed REST call: a refusal of the gateway (4xx)
// becomes a refusal with its code, name, field and message; everything else
// (unreachable, malformed, 5xx, a timed out POST whose outcome is unknown)
// is a Server fault that tells nothing of the internals.
func gatewayError(err error) error {
	var api *restbackend.APIError
	if errors.As(err, &api) && api.Status >= 400 && api.Status < 500 {
		return &refusal{desc: describeAPIError(api)}
	}
	return serverFault("payment gateway unavailable")
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
