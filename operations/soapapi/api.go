// Package soapapi puts the legacy core (package operations) on SOAP: it
// decodes a SOAP call into the core's typed request, calls the core and
// encodes the typed result as the SOAP reply, both driven by the WSDL table
// of package wsdl. It also serves the WSDL document and the service's HTML
// page over HTTP.
package soapapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/internal/header"
	"github.com/legacybridge/soapbridge/internal/logctx"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/wsdl"
)

// Config configures an API.
type Config struct {
	Service *operations.Service
	Logger  *zap.Logger
	// ServiceNamespace is the output body namespace;
	// wsdl.DefaultServiceNamespace when empty.
	ServiceNamespace string
	// Limits bound the requests Handler reads; soapenc.DefaultLimits() when
	// zero.
	Limits soapenc.Limits
	// Guard, when set, decides whether a call for a goid may proceed: its
	// access rules once the call's goid is decoded and before the core
	// runs, so a refused call costs no gateway call; its rate only once
	// the core has verified the call's signature (operations.Admission),
	// so a forged call spends none of the merchant's rate. Calls without a
	// goid (touch, paymentMethodList) move no money and are not asked
	// about.
	Guard Guard
	// Usage, when set, is the usage record: every call's context carries
	// the client library recognised from the wire (ClientOf) and the
	// features only the wire shows (a charset), for the core's record of
	// the call (operations.Service records every call, also those this
	// adapter ends: Service.Unserved).
	Usage *usage.Recorder
}

// Guard admits or refuses a call for goid; a refusal is an error whose
// text the caller may see (it names no secret).
type Guard interface {
	// Admit checks the access rules (networks, credentials) of a call
	// arriving as req, before the core looks at it.
	Admit(req *http.Request, goid int64) error
	// Spend takes the call from goid's rate, once the core verified it.
	Spend(ctx context.Context, goid int64) error
}

// API serves the legacy operations over SOAP.
type API struct {
	svc    *operations.Service
	log    *zap.Logger
	codec  codec
	limits soapenc.Limits
	guard  Guard
	// spend is guard.Spend, bound once: a method value of an interface is
	// a closure, which binding it per call would allocate (issue 28).
	spend operations.Admission
	usage *usage.Recorder
	ops   map[string][]binding // by operation name; overloads in WSDL order
}

// binding is one operation of the WSDL table and the core's row serving it.
type binding struct {
	op   wsdl.Operation
	row  operations.Operation
	in   reflect.Type // the request type; nil when the operation takes none
	goid []int        // index of the request's goid field (targetGoId, eshopGoId); nil if none
}

// goidField finds the goid field of a request type: the one whose legacy
// name is targetGoId or eshopGoId.
func goidField(t reflect.Type) []int {
	if t == nil {
		return nil
	}
	for i := range t.NumField() {
		switch t.Field(i).Tag.Get("legacy") {
		case "targetGoId", "eshopGoId":
			return []int{i}
		}
	}
	return nil
}

// goidOf is the decoded goid of a request (0 when absent).
func (b binding) goidOf(in any) int64 {
	if b.goid == nil || in == nil {
		return 0
	}
	f := reflect.ValueOf(in).Elem().FieldByIndex(b.goid)
	if f.IsNil() {
		return 0
	}
	return f.Elem().Int()
}

// New binds every operation of the WSDL table to the core's row of the
// same name and input type, checks the WSDL's types against the core's,
// and returns the API.
func New(cfg Config) (*API, error) {
	if cfg.Service == nil {
		return nil, errors.New("soapapi: no service")
	}
	if err := checkTypes(); err != nil {
		return nil, fmt.Errorf("soapapi: %w", err)
	}
	a := &API{svc: cfg.Service, log: cfg.Logger, codec: codec{ns: cfg.ServiceNamespace}, limits: cfg.Limits,
		guard: cfg.Guard, usage: cfg.Usage}
	if a.guard != nil {
		a.spend = a.guard.Spend
	}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	if a.codec.ns == "" {
		a.codec.ns = wsdl.DefaultServiceNamespace
	}
	if a.limits == (soapenc.Limits{}) {
		a.limits = soapenc.DefaultLimits()
	}
	a.ops = map[string][]binding{}
	unbound := map[operations.Operation]bool{}
	for _, r := range operations.Operations() {
		unbound[r] = true
	}
	for _, op := range wsdl.Operations {
		in := inputType(op)
		var row operations.Operation
		for r := range unbound {
			if r.Name() == op.Name && r.Input() == in {
				row = r
			}
		}
		if row == nil {
			return nil, fmt.Errorf("soapapi: operation %s (%s, input %v) has no row in the core's table", op.Name, op.Input, in)
		}
		if out := goTypes[localName(op.Return.Type)]; out != nil && row.Output() != reflect.PointerTo(out) {
			return nil, fmt.Errorf("soapapi: %s returns %s but its row answers %v", op.Name, op.Return.Type, row.Output())
		}
		delete(unbound, row)
		a.ops[op.Name] = append(a.ops[op.Name], binding{op: op, row: row, in: in, goid: goidField(in)})
	}
	for r := range unbound {
		return nil, fmt.Errorf("soapapi: the core's row %s (input %v) is not in the WSDL table", r.Name(), r.Input())
	}
	return a, nil
}

// inputType is the Go type of an operation's input part; nil when it
// takes none.
func inputType(op wsdl.Operation) reflect.Type {
	if op.Param == nil {
		return nil
	}
	return goTypes[localName(op.Param.Type)]
}

// localName is a qualified name without its prefix.
func localName(qname string) string {
	_, local, _ := strings.Cut(qname, ":")
	return local
}

// Invoke performs one decoded call. The operation is chosen by the RPC
// element's local name; its namespace is expected to be wsdl.NSInput but
// any is accepted (clients of that era were lax; the Java 2.4 stubs qualify
// everything with http://gate.gopay.cz/ws). The part is found by its WSDL
// name or as the call's only part, and an overload is told by the part's
// type or members (chooseOverload). A returned error is always a
// *soapenc.Fault.
func (a *API) Invoke(ctx context.Context, call *soapenc.Call) (*soapenc.Response, error) {
	return a.invoke(ctx, call, nil, nil)
}

// invoke is Invoke with the HTTP request the call came in (nil: no Guard
// check). rv is the SOAP handler's (nil for Invoke): then the Call is
// released once admit has made the typed request of it, before the
// operation waits for the gateway, and the reply's Values come from
// replyPool, in *rv for the handler to release once the reply is written.
// Every call ends in the core: served (Service.Invoke), or, when this
// adapter ends it first, told as unserved (Service.Unserved).
func (a *API) invoke(ctx context.Context, call *soapenc.Call, req *http.Request, rv **replyValues) (*soapenc.Response, error) {
	ctx, b, in, goid, err := a.admit(ctx, call, req)
	var op string
	if call != nil {
		op = call.Operation.Local
	}
	if rv != nil {
		// The typed request holds copies of what it read (strings of the
		// body), and so does the usage record: a call in flight holds no
		// Values while it waits.
		call.Release()
	}
	if err != nil {
		return nil, err
	}
	out, err := a.svc.Invoke(ctx, b.row, in)
	if err != nil {
		return nil, a.failed(ctx, op, goid, err)
	}
	return a.response(b, op, out, rv), nil
}

// response is the reply of a call served; with rv (the SOAP handler's),
// its Values come from replyPool, in *rv for the handler to release once
// the reply is written. Apart from invoke, whose frame is held under the
// wait for the gateway (issue 28).
//
//go:noinline
func (a *API) response(b *binding, op string, out any, rv **replyValues) *soapenc.Response {
	if rv == nil {
		ret := a.codec.encode(b.op.Return.Name, b.op.Return.Type, reflect.ValueOf(out))
		return &soapenc.Response{Namespace: a.codec.ns, Operation: op, Return: ret}
	}
	r := replyPool.Get().(*replyValues)
	*rv = r
	ret := a.codec.encodeWith(r, b.op.Return.Name, b.op.Return.Type, reflect.ValueOf(out))
	r.resp = soapenc.Response{Namespace: a.codec.ns, Operation: op, Return: ret}
	return &r.resp
}

// admit finds the call's operation, decodes its input and applies the
// access rules. invoke's steps before and after the operation are
// functions of their own so that invoke's frame, under the wait for the
// gateway, stays small: its bytes are held per call in flight (issue 28).
//
//go:noinline
func (a *API) admit(ctx context.Context, call *soapenc.Call, req *http.Request) (context.Context, *binding, any, int64, error) {
	if call == nil {
		a.svc.Unserved(ctx, operations.UnknownOperation, 0, operations.ResultClientFault)
		return ctx, nil, nil, 0, clientFault("empty request")
	}
	name := call.Operation.Local
	bs, ok := a.ops[name]
	if !ok {
		a.svc.Unserved(ctx, operations.UnknownOperation, 0, operations.ResultClientFault)
		return ctx, nil, nil, 0, clientFault("unknown operation " + soapenc.QuoteName(name) + " (namespace " + soapenc.QuoteName(call.Operation.Space) + ")")
	}
	if call.Operation.Space != wsdl.NSInput {
		logctx.From(ctx, a.log).Debug("operation in unexpected namespace", zap.String("op", name), zap.String("ns", call.Operation.Space))
	}
	part := inputPart(call, bs)
	b := chooseOverload(bs, part)
	var in any
	if b.in != nil {
		p := reflect.New(b.in)
		decode(b.op.Param.Name, b.op.Param.Type, part, p)
		in = p.Interface()
	}
	goid := b.goidOf(in)
	if a.guard != nil && req != nil && goid != 0 {
		// Access rules first; the rate once the core has verified the call
		// (operations.Admission), so a forged call spends none of it.
		if err := a.guard.Admit(req, goid); err != nil {
			result := operations.ResultDenied
			if d, ok := access.IsDenied(err); ok && d.RateLimit {
				result = operations.ResultRateLimited
			}
			a.svc.Unserved(ctx, name, goid, result)
			return ctx, nil, nil, 0, a.refused(ctx, name, goid, err)
		}
		ctx = operations.WithAdmission(ctx, a.spend)
	}
	return ctx, b, in, goid, nil
}

// failed is the fault of an operation that returned err.
//
//go:noinline
func (a *API) failed(ctx context.Context, name string, goid int64, err error) error {
	if _, ok := access.IsDenied(err); ok {
		return a.refused(ctx, name, goid, err) // the core recorded it (ResultRateLimited)
	}
	var se *operations.ServerError
	if errors.As(err, &se) {
		return serverFault(se.Msg)
	}
	logctx.From(ctx, a.log).Error("operation failed", zap.String("op", name), zap.Error(err))
	return serverFault("internal error")
}

// refused logs and notes a call the access rules refused; its fault.
func (a *API) refused(ctx context.Context, name string, goid int64, err error) *soapenc.Fault {
	reason := access.ReasonNetwork
	if d, ok := access.IsDenied(err); ok {
		reason = d.Reason
	}
	logctx.From(ctx, a.log).Warn("call refused", zap.String("op", name), zap.Int64("goid", goid), zap.String("reason", err.Error()),
		zap.String("reason_code", reason))
	a.svc.NoteRefusal(ctx, name, goid, reason, "")
	return clientFault(err.Error())
}

// inputPart is the part of a call: the one named as in the WSDL (any
// overload), else the call's only part. Client libraries name parts their
// own way (the Java 2.4 stubs call the refund part "request"), so the name
// only helps to find it.
func inputPart(call *soapenc.Call, bs []binding) *soapenc.Value {
	for _, b := range bs {
		if b.op.Param != nil {
			if v := call.Param(b.op.Param.Name); v != nil {
				return v
			}
		}
	}
	if len(call.Params) == 1 {
		return call.Params[0]
	}
	return nil
}

// chooseOverload picks the overload (refundPayment has two) whose part type
// the sent part has: its xsi:type (in any namespace) or, untyped, its
// members (amount, currency or description make an ERefundRequest).
func chooseOverload(bs []binding, part *soapenc.Value) *binding {
	if len(bs) == 1 || part == nil {
		return &bs[0]
	}
	typ := part.Type.Local
	if _, ok := goTypes[typ]; !ok {
		typ = ""
		for _, f := range []string{"amount", "currency", "description"} {
			if part.Field(f) != nil {
				typ = "ERefundRequest"
			}
		}
		if typ == "" && part.Field("paymentSessionId") != nil {
			typ = "EPaymentSessionInfo"
		}
	}
	for i := range bs {
		if p := bs[i].op.Param; p != nil {
			if _, local, _ := strings.Cut(p.Type, ":"); local == typ {
				return &bs[i]
			}
		}
	}
	// Unknown type, no telling members: the part's WSDL name decides.
	for i := range bs {
		if p := bs[i].op.Param; p != nil && p.Name == part.Name {
			return &bs[i]
		}
	}
	return &bs[0]
}

func clientFault(msg string) *soapenc.Fault {
	return &soapenc.Fault{Code: soapenc.FaultClient, String: msg}
}

func serverFault(msg string) *soapenc.Fault {
	return &soapenc.Fault{Code: soapenc.FaultServer, String: msg}
}

// Handler serves POST requests of the SOAP endpoint: it decodes the
// envelope, dispatches by the RPC element's local name (every operation has
// an empty SOAPAction) and writes the reply or a fault.
func (a *API) Handler() echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		// Log lines of this call carry the request id of the access log;
		// its duration counts from here (one context value for both).
		ctx := logctx.WithCall(req.Context(), a.log, header.Get(c.Response().Header(), header.XRequestID), time.Now())
		// Detached from the client's connection and bounded by the call
		// deadline from here on: the upload of the body, the wait for a
		// parse slot and every gateway call. No POST starts unless it can
		// end before it.
		cctx, cancel := a.svc.CallContext(ctx)
		defer cancel()
		call, err := soapenc.ReadRequestContext(cctx, req, a.limits)
		if err != nil {
			a.badRequest(ctx, c, err)
			return nil
		}
		if a.usage != nil {
			cctx = withUsage(cctx, req, call)
		}
		var rv *replyValues
		resp, err := a.invoke(cctx, call, req, &rv) // releases call
		if err != nil {
			writeFailure(c, err)
			return nil
		}
		soapenc.WriteResponse(c.Response(), resp)
		rv.release() // the reply is written: nothing keeps its Values
		return nil
	}
}

// The handler's steps off its main way are functions of their own, so
// that its frame, held under the wait for the gateway by every call in
// flight, stays small (issue 28).

// badRequest answers a request that is no SOAP call.
//
//go:noinline
func (a *API) badRequest(ctx context.Context, c echo.Context, err error) {
	var f *soapenc.Fault
	if !errors.As(err, &f) {
		f = clientFault("unreadable request")
	}
	logctx.From(ctx, a.log).Info("bad SOAP request", zap.String("fault", f.String))
	a.svc.Unserved(ctx, operations.UnknownOperation, 0, operations.ResultClientFault)
	soapenc.WriteFault(c.Response(), f)
}

// withUsage adds what the usage record notes of the calling client.
//
//go:noinline
func withUsage(ctx context.Context, req *http.Request, call *soapenc.Call) context.Context {
	ctx = usage.WithClient(ctx, ClientOf(req, call.Wire))
	if f, ok := charsetFeature(call.Wire.Charset); ok {
		ctx = usage.WithFeatures(ctx, f)
	}
	return ctx
}

// writeFailure answers with the fault of err, a server fault unless err is
// a fault.
//
//go:noinline
func writeFailure(c echo.Context, err error) {
	var f *soapenc.Fault
	if !errors.As(err, &f) {
		f = serverFault("internal error")
	}
	soapenc.WriteFault(c.Response(), f)
}
