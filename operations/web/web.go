// Package web puts the legacy browser flows of the core (package
// operations) on HTTP: the customer's redirects to the gateway
// (pay-full-v2, pay-base-v2), the return from the gateway, the gateway's
// notifications and the statement download. It parses
// the HTTP input, calls the core and renders its answer as a redirect, an
// error page (Czech and English, the legacy gateway's languages) or plain
// text; the decisions are the core's.
package web

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/logctx"
	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/operations/usage"
)

// Paths the flows serve. The gateway-facing ones are the legacy paths; the
// callbacks are the bridge's own (given to the REST gateway per payment).
const (
	PathPayFull   = "/gw/pay-full-v2"
	PathPayBase   = "/gw/pay-base-v2"
	PathStatement = "/gw/services/get-account-statement"
	PathReturn    = "/callback/return"
	PathNotify    = "/callback/notify"
)

// maxFormBytes bounds a posted legacy form (pay-base-v2 carries a few
// hundred bytes).
const maxFormBytes = 64 << 10

//go:embed templates/*.html
var flowTemplates embed.FS

var flowPages = template.Must(template.ParseFS(flowTemplates, "templates/*.html"))

// Flows serves the legacy browser flows of a core Service.
type Flows struct {
	svc *operations.Service
	log *zap.Logger
}

// New returns the flows of svc; log is the logger of their requests.
func New(svc *operations.Service, log *zap.Logger) *Flows {
	if log == nil {
		log = zap.NewNop()
	}
	return &Flows{svc: svc, log: log}
}

// withWire is the request's context carrying what only the adapter sees
// of the request, for the core's usage record of the call (which counts
// it only once the call is verified): the client, by its User-Agent, and
// how a form was encoded.
func withWire(c echo.Context, cs formCharset) context.Context {
	ctx := c.Request().Context()
	cl, ok := usage.ParseUserAgent(c.Request().Header.Get("User-Agent"))
	if !ok {
		cl = usage.Client{Family: usage.FamilyUnknown}
	}
	ctx = usage.WithClient(ctx, cl)
	if cs == formWindows1250 {
		ctx = usage.WithFeatures(ctx, usage.FeatureWindows1250)
	}
	return ctx
}

// Register adds the flows' routes to e.
func (f *Flows) Register(e Router) {
	e.GET(PathPayFull, f.payFull, f.requestLog)
	e.POST(PathPayFull, f.payFull, f.requestLog)
	e.GET(PathPayBase, f.payBase, f.requestLog)
	e.POST(PathPayBase, f.payBase, f.requestLog)
	e.GET(PathReturn, f.returnFromGateway, f.requestLog)
	e.GET(PathNotify, f.notify, f.requestLog)
	e.POST(PathNotify, f.notify, f.requestLog)
	e.GET(PathStatement, f.statement, f.requestLog)
}

// Router is where Register adds the routes: an *echo.Echo or *echo.Group.
type Router interface {
	GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route
	POST(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route
}

// requestLog gives the request's context a logger carrying the request id
// of the access log line (set by the server's RequestID middleware), as the
// SOAP handler does, so a flow's log lines can be matched with its request.
func (f *Flows) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		id := c.Response().Header().Get(echo.HeaderXRequestID)
		c.SetRequest(r.WithContext(logctx.WithRequestID(r.Context(), f.log, id)))
		return next(c)
	}
}

func (f *Flows) logOf(c echo.Context) *zap.Logger { return logctx.From(c.Request().Context(), f.log) }

// pageError is an error shown to the customer's browser, in Czech and
// English.
type pageError struct {
	Status int
	CS, EN string
}

func (e *pageError) Error() string { return strconv.Itoa(e.Status) + " " + e.EN }

func pageBadParam(name string) *pageError {
	return &pageError{http.StatusBadRequest,
		"Parametr " + name + " chybí nebo má chybný tvar.",
		"Parameter " + name + " is missing or malformed."}
}

func pageBadSignature() *pageError {
	return &pageError{http.StatusForbidden,
		"Podpis požadavku (encryptedSignature) nesouhlasí.",
		"The request's signature (encryptedSignature) does not verify."}
}

func pageUnknownGoID(goid int64) *pageError {
	g := strconv.FormatInt(goid, 10)
	return &pageError{http.StatusNotFound,
		"Obchod s GoID " + g + " není znám.",
		"No e-shop with GoID " + g + " is known."}
}

func pageUnknownPayment(id int64) *pageError {
	p := strconv.FormatInt(id, 10)
	return &pageError{http.StatusNotFound,
		"Platba " + p + " tohoto obchodu neexistuje.",
		"Payment " + p + " of this e-shop does not exist."}
}

func pageNoReturnURL(id int64) *pageError {
	p := strconv.FormatInt(id, 10)
	return &pageError{http.StatusNotFound,
		"U platby " + p + " není známa adresa návratu do obchodu.",
		"The e-shop's return address of payment " + p + " is not known."}
}

func pageGateway() *pageError {
	return &pageError{http.StatusBadGateway,
		"Platební brána teď neodpovídá. Zkuste to prosím za chvíli znovu.",
		"The payment gateway does not answer now. Please try again in a while."}
}

func pageUnavailable() *pageError {
	return &pageError{http.StatusServiceUnavailable,
		"Platbu teď nelze založit. Zkuste to prosím za chvíli znovu.",
		"The payment cannot be created now. Please try again in a while."}
}

func pageInternal() *pageError {
	return &pageError{http.StatusInternalServerError,
		"Došlo k vnitřní chybě. Zkuste to prosím za chvíli znovu.",
		"An internal error occurred. Please try again in a while."}
}

// pageOf turns an error of the core about payment id into its page; nil
// when the error is not one the pages know.
func pageOf(err error, id int64) *pageError {
	var (
		pe  *pageError
		bp  *operations.BadParamError
		um  *operations.UnknownMerchantError
		re  *operations.RequestError
		ref *operations.RefusedError
	)
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &bp):
		return pageBadParam(bp.Name)
	case errors.As(err, &um):
		return pageUnknownGoID(um.GoID)
	case errors.As(err, &re):
		return &pageError{http.StatusBadRequest, "Chybný požadavek: " + re.Msg + ".", "Bad request: " + re.Msg + "."}
	case errors.As(err, &ref):
		return &pageError{http.StatusBadRequest, "Platbu nelze založit: " + ref.Desc + ".", "The payment cannot be created: " + ref.Desc + "."}
	case errors.Is(err, operations.ErrBadSignature):
		return pageBadSignature()
	case errors.Is(err, operations.ErrUnknownPayment):
		return pageUnknownPayment(id)
	case errors.Is(err, operations.ErrNoReturnURL):
		return pageNoReturnURL(id)
	case errors.Is(err, operations.ErrGatewayDown):
		return pageGateway()
	case errors.Is(err, operations.ErrNotCreated):
		return pageUnavailable()
	}
	return nil
}

// page writes err (about payment id, 0 if none) as the HTML error page.
func (f *Flows) page(c echo.Context, err error, id int64) error {
	pe := pageOf(err, id)
	if pe == nil {
		f.logOf(c).Error("flow failed", zap.String("path", c.Path()), zap.Error(err))
		pe = pageInternal()
	} else if pe.Status >= 500 {
		f.logOf(c).Warn("flow failed", zap.String("path", c.Path()), zap.Int("status", pe.Status))
	}
	var b strings.Builder
	if err := flowPages.ExecuteTemplate(&b, "error.html", pe); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTML(pe.Status, b.String())
}

// pendingRetryAfter is the Retry-After of the pending page, in seconds.
const pendingRetryAfter = "10"

// pendingPage tells a returning customer whose payment's status cannot be
// read now that the payment may already have gone through, not to pay
// again, and links to this same return URL (token included: the customer
// has it already) to finish the return once the gateway answers.
func (f *Flows) pendingPage(c echo.Context, id int64) error {
	f.logOf(c).Warn("return: payment status not available; pending page shown", zap.Int64("payment", id))
	var b strings.Builder
	data := struct {
		Payment string
		Reload  string
	}{operations.FormatInt(id), c.Request().URL.RequestURI()}
	if err := flowPages.ExecuteTemplate(&b, "pending.html", data); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Retry-After", pendingRetryAfter)
	return c.HTML(http.StatusServiceUnavailable, b.String())
}

// redirect sends the browser to loc.
func redirect(c echo.Context, loc string) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(http.StatusFound, loc)
}

// flowForm returns the query and, for a POST, the posted form fields, and
// how they were encoded.
func flowForm(c echo.Context) (url.Values, formCharset, error) {
	r := c.Request()
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBytes)
	}
	if err := r.ParseForm(); err != nil {
		return nil, formUnreadable, &pageError{http.StatusBadRequest, "Formulář nelze přečíst.", "The form cannot be read."}
	}
	form, cs := toUTF8Form(r.Form, r.Header.Get(echo.HeaderContentType))
	if cs == formUnreadable {
		return nil, cs, &pageError{http.StatusBadRequest, "Formulář není v kódování UTF-8 ani windows-1250.",
			"The form is neither UTF-8 nor windows-1250."}
	}
	return form, cs, nil
}

// payFull sends the customer of a payment created by createPayment to the
// gateway: /gw/pay-full-v2?sessionInfo.targetGoId=G&sessionInfo.paymentSessionId=P&sessionInfo.encryptedSignature=S.
func (f *Flows) payFull(c echo.Context) error {
	form, cs, err := flowForm(c)
	if err != nil {
		return f.page(c, err, 0)
	}
	loc, err := f.svc.PayFull(withWire(c, cs), operations.PayFullRequest{TargetGoID: form.Get("sessionInfo.targetGoId"),
		PaymentSessionID: form.Get("sessionInfo.paymentSessionId"), EncryptedSignature: form.Get("sessionInfo.encryptedSignature")})
	if err != nil {
		return f.page(c, err, pageID(form.Get("sessionInfo.paymentSessionId")))
	}
	return redirect(c, loc)
}

// pageID is the payment id a page names (0 when raw is none).
func pageID(raw string) int64 {
	id, _ := operations.FlowID("", raw)
	return id
}

// payBase serves the base integration: the e-shop's page posts (or links)
// the paymentCommand.* fields; the payment is created as createPayment
// would create it and the customer is sent to its gateway page.
func (f *Flows) payBase(c echo.Context) error {
	form, cs, err := flowForm(c)
	if err != nil {
		return f.page(c, err, 0)
	}
	loc, err := f.svc.PayBase(withWire(c, cs), form.Get("paymentCommand.targetGoId"), operations.PaymentCommandFromForm(form))
	if err != nil {
		return f.page(c, err, 0)
	}
	return redirect(c, loc)
}

// callbackOf is the query of a gateway callback.
func callbackOf(c echo.Context) operations.CallbackRequest {
	q := c.QueryParams()
	return operations.CallbackRequest{GoID: q.Get("goid"), PaymentID: q.Get("id"), Token: q.Get(operations.CallbackTokenParam)}
}

// returnFromGateway is where the gateway sends the customer back
// (return_url with ?goid=G&token=T, the gateway adds &id=P): it redirects
// to the e-shop's success or failed URL with the signed identity. A wrong
// or missing token is the unknown-payment page (404). When the status
// cannot be read now, the customer may well have paid: the pending page
// says so, warns against paying again and offers a reload of this URL.
func (f *Flows) returnFromGateway(c echo.Context) error {
	req := callbackOf(c)
	loc, err := f.svc.ReturnURL(withWire(c, formUTF8), req)
	id := pageID(req.PaymentID)
	if errors.Is(err, operations.ErrGatewayDown) || errors.Is(err, operations.ErrStoreDown) {
		return f.pendingPage(c, id)
	}
	if err != nil {
		return f.page(c, err, id)
	}
	return redirect(c, loc)
}

// notify is the gateway's notification (notification_url with
// ?goid=G&token=T, the gateway adds &id=P). It answers 200 only once the
// notification for the e-shop is stored; 5xx makes the gateway repeat the
// call; a wrong or missing token is 404.
func (f *Flows) notify(c echo.Context) error {
	req := callbackOf(c)
	plain := func(status int, msg string) error { return c.String(status, msg+"\n") }
	// The gateway calls here, not the shop: the shop's part is the legacy
	// notification this becomes.
	ctx := usage.WithClient(c.Request().Context(), usage.Client{Family: usage.FamilyNone})
	err := f.svc.AcceptNotification(ctx, req)
	id := pageID(req.PaymentID)
	var (
		bp *operations.BadParamError
		um *operations.UnknownMerchantError
	)
	switch {
	case err == nil:
		return plain(http.StatusOK, "OK")
	case errors.As(err, &bp), errors.As(err, &um):
		pe := pageOf(err, 0)
		return plain(pe.Status, pe.EN)
	case errors.Is(err, operations.ErrUnknownPayment):
		return plain(http.StatusNotFound, pageUnknownPayment(id).EN)
	case errors.Is(err, operations.ErrGatewayDown):
		return plain(http.StatusServiceUnavailable, "payment status not available; repeat later")
	case errors.Is(err, operations.ErrStoreDown):
		return plain(http.StatusServiceUnavailable, "store not available; repeat later")
	}
	f.logOf(c).Error("notification: not accepted", zap.Int64("payment", id), zap.Error(err))
	return plain(http.StatusInternalServerError, "cannot sign")
}

// statement serves GET /gw/services/get-account-statement: the legacy
// statementRequest.* query answered with the statement file. Errors are
// plain text (scripts call it).
func (f *Flows) statement(c echo.Context) error {
	q := c.QueryParams()
	get := func(name string) string { return q.Get("statementRequest." + name) }
	req := &operations.StatementRequest{
		DateFrom: get("dateFrom"), DateTo: get("dateTo"), TargetGoID: get("targetGoId"),
		Currency: get("currency"), ContentType: get("contentType"), EncryptedSignature: get("encryptedSignature"),
	}
	file, err := f.svc.Statement(withWire(c, formUTF8), req)
	if err != nil {
		fail := func(status int, msg string) error { return c.String(status, msg+"\n") }
		var (
			re  *operations.RequestError
			ref *operations.RefusedError
		)
		switch {
		case errors.As(err, &re):
			return fail(http.StatusBadRequest, re.Msg)
		case errors.As(err, &ref):
			return fail(http.StatusBadRequest, ref.Desc)
		case errors.Is(err, operations.ErrBadSignature):
			return fail(http.StatusForbidden, "statementRequest.encryptedSignature does not verify")
		case errors.Is(err, operations.ErrGatewayDown):
			return fail(http.StatusBadGateway, "the payment gateway did not deliver the statement; try again later")
		}
		if pe := pageOf(err, 0); pe != nil {
			return fail(pe.Status, pe.EN)
		}
		return err
	}
	defer file.Body.Close()
	h := c.Response().Header()
	h.Set("Content-Disposition", `attachment; filename="`+file.Name+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set(echo.HeaderContentType, file.ContentType)
	c.Response().WriteHeader(http.StatusOK)
	if _, err := io.Copy(c.Response(), file.Body); err != nil {
		// The status is out already: abort the response so the client
		// sees a broken transfer, never a shorter file that looks whole.
		f.logOf(c).Warn("statement cut short", zap.Error(err))
		panic(http.ErrAbortHandler)
	}
	return nil
}

// PayFullURL is the URL a legacy e-shop sends its customer to after
// createPayment (what the legacy client library builds).
func PayFullURL(bridgeURL, secureKey string, goid, paymentID int64) (string, error) {
	g, p := operations.FormatInt(goid), operations.FormatInt(paymentID)
	sig, err := operations.Sign(secureKey, operations.PaymentSessionFields(g, p)...)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(bridgeURL, "/") + PathPayFull + "?sessionInfo.targetGoId=" + g +
		"&sessionInfo.paymentSessionId=" + p + "&sessionInfo.encryptedSignature=" + sig, nil
}
