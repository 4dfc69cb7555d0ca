package operations

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/store"
)

// The legacy browser flows: the customer's redirects to the gateway
// (pay-full-v2, pay-base-v2), the return from the gateway to the e-shop,
// the gateway's notifications forwarded to the e-shop through the outbox,
// and the statement download.

// Paths the flows serve. The gateway-facing ones are the legacy paths; the
// callbacks are the bridge's own (given to the REST gateway per payment).
const (
	PathPayFull      = "/gw/pay-full-v2"
	PathPayBase      = "/gw/pay-base-v2"
	PathStatement    = "/gw/services/get-account-statement"
	PathReturn       = "/callback/return"
	PathNotify       = "/callback/notify"
	PathOutboxCounts = "/outbox"
)

// maxFormBytes bounds a posted legacy form (pay-base-v2 carries a few
// hundred bytes).
const maxFormBytes = 64 << 10

//go:embed templates/*.html
var flowTemplates embed.FS

var flowPages = template.Must(template.ParseFS(flowTemplates, "templates/*.html"))

// FlowsConfig configures the browser flows.
type FlowsConfig struct {
	// Outbox configures notification delivery; its Store and Logger default
	// to the service's.
	Outbox OutboxConfig
}

// Flows serves the legacy browser flows of a Service.
type Flows struct {
	svc *Service
	out *Outbox
	log *zap.Logger
}

// NewFlows returns the flows of svc.
func NewFlows(svc *Service, cfg FlowsConfig) *Flows {
	if cfg.Outbox.Store == nil {
		cfg.Outbox.Store = svc.store
	}
	if cfg.Outbox.Logger == nil {
		cfg.Outbox.Logger = svc.log
	}
	return &Flows{svc: svc, out: NewOutbox(cfg.Outbox), log: svc.log}
}

// Register adds the flows' routes to e.
func (f *Flows) Register(e *echo.Echo) {
	e.GET(PathPayFull, f.payFull, f.requestLog)
	e.POST(PathPayFull, f.payFull, f.requestLog)
	e.GET(PathPayBase, f.payBase, f.requestLog)
	e.POST(PathPayBase, f.payBase, f.requestLog)
	e.GET(PathReturn, f.returnFromGateway, f.requestLog)
	e.GET(PathNotify, f.notify, f.requestLog)
	e.POST(PathNotify, f.notify, f.requestLog)
	e.GET(PathStatement, f.statement, f.requestLog)
	e.GET(PathOutboxCounts, f.outboxCounts, f.requestLog)
}

// requestLog gives the request's context a logger carrying the request id
// of the access log line (set by the server's RequestID middleware), as the
// SOAP handler does, so a flow's log lines can be matched with its request.
func (f *Flows) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		l := f.log.With(zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
		c.SetRequest(r.WithContext(withLogger(r.Context(), l)))
		return next(c)
	}
}

// logFor is the logger of the flow request behind ctx, or the flows' own.
func (f *Flows) logFor(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*zap.Logger); ok {
		return l
	}
	return f.log
}

// RunOutbox delivers notifications until ctx ends.
func (f *Flows) RunOutbox(ctx context.Context) { f.out.Run(ctx) }

// Outbox is the flows' notification outbox.
func (f *Flows) Outbox() *Outbox { return f.out }

// pageError is an error shown to the customer's browser, in Czech and
// English (the legacy gateway's two languages).
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

// page writes err as the HTML error page.
func (f *Flows) page(c echo.Context, err error) error {
	var pe *pageError
	if !errors.As(err, &pe) {
		f.logFor(c.Request().Context()).Error("flow failed", zap.String("path", c.Path()), zap.Error(err))
		pe = pageInternal()
	} else if pe.Status >= 500 {
		f.logFor(c.Request().Context()).Warn("flow failed", zap.String("path", c.Path()), zap.Int("status", pe.Status))
	}
	var b strings.Builder
	if err := flowPages.ExecuteTemplate(&b, "error.html", pe); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	return c.HTML(pe.Status, b.String())
}

// flowForm returns the query and, for a POST, the posted form fields.
func flowForm(c echo.Context) (func(string) string, error) {
	r := c.Request()
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBytes)
	}
	if err := r.ParseForm(); err != nil {
		return nil, &pageError{http.StatusBadRequest,
			"Formulář nelze přečíst.", "The form cannot be read."}
	}
	return r.Form.Get, nil
}

// merchantOf parses the goid parameter and finds its merchant.
func (f *Flows) merchantOf(name, raw string) (Merchant, error) {
	goid, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || goid <= 0 {
		return Merchant{}, pageBadParam(name)
	}
	m, ok := f.svc.Merchant(goid)
	if !ok {
		return Merchant{}, pageUnknownGoID(goid)
	}
	return m, nil
}

func flowParseID(name, raw string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || id <= 0 {
		return 0, pageBadParam(name)
	}
	return id, nil
}

// status reads payment id of m from the gateway. A payment the gateway
// does not know, or that belongs to another e-shop, is pageUnknownPayment;
// other failures pageGateway (the cause is logged).
func (f *Flows) status(ctx context.Context, m Merchant, id int64) (*restbackend.Payment, error) {
	p, err := f.svc.gw.PaymentStatus(ctx, m.Credentials(), id)
	if err != nil {
		var ae *restbackend.APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusForbidden) {
			return nil, pageUnknownPayment(id)
		}
		f.logFor(ctx).Warn("payment status failed", zap.Int64("goid", m.GoID), zap.Int64("payment", id), zap.Error(err))
		return nil, pageGateway()
	}
	if p.Target != nil && p.Target.GoID != 0 && p.Target.GoID != m.GoID {
		return nil, pageUnknownPayment(id)
	}
	return p, nil
}

// sessionOf returns the legacy session of p. A recurring payment charged by
// the gateway itself (DAY/WEEK/MONTH cycles) has none until first seen: it
// gets one derived from its parent's, so that returns, notifications and
// paymentStatus treat it like any other payment. ErrNotFound when neither
// exists.
func (f *Flows) sessionOf(ctx context.Context, m Merchant, p *restbackend.Payment) (store.Session, error) {
	s, err := f.svc.store.Session(ctx, p.ID)
	if err == nil || !errors.Is(err, store.ErrNotFound) || p.ParentID == 0 {
		if err == nil && s.GoID != m.GoID {
			return store.Session{}, store.ErrNotFound
		}
		return s, err
	}
	parent, err := f.svc.store.Session(ctx, p.ParentID)
	if err != nil {
		return store.Session{}, err
	}
	if parent.GoID != m.GoID {
		return store.Session{}, store.ErrNotFound
	}
	child := store.Session{
		PaymentID:   p.ID,
		ParentID:    p.ParentID,
		GoID:        m.GoID,
		ProductName: parent.ProductName,
		OrderNumber: p.OrderNumber,
		Amount:      p.Amount,
		Currency:    p.Currency,
		SuccessURL:  parent.SuccessURL,
		FailedURL:   parent.FailedURL,
	}
	if child.OrderNumber == "" {
		child.OrderNumber = parent.OrderNumber
	}
	if child.Currency == "" {
		child.Currency = parent.Currency
	}
	if err := f.svc.store.SaveSession(ctx, child); err != nil {
		return store.Session{}, err
	}
	f.logFor(ctx).Info("recurring child payment recorded", zap.Int64("goid", m.GoID),
		zap.Int64("payment", p.ID), zap.Int64("parent", p.ParentID))
	return child, nil
}

// flowIdentity is what the return redirect and the notification tell the
// e-shop (the paymentIdentity message).
type flowIdentity struct {
	GoID, PaymentID, ParentID int64
	OrderNumber               string
}

// flowIdentityOf takes the identity from the payment and, where the payment
// lacks them, its session (sess may be zero).
func flowIdentityOf(m Merchant, p *restbackend.Payment, sess store.Session) flowIdentity {
	id := flowIdentity{GoID: m.GoID, PaymentID: p.ID, ParentID: p.ParentID, OrderNumber: sess.OrderNumber}
	if id.ParentID == 0 {
		id.ParentID = sess.ParentID
	}
	if id.OrderNumber == "" {
		id.OrderNumber = p.OrderNumber
	}
	return id
}

// IdentityQuery is the query of the legacy return and notification: the
// five parameters in the legacy order, signed as paymentIdentity.
func IdentityQuery(secureKey string, goid, paymentID, parentID int64, orderNumber string) (string, error) {
	g, p, parent := FormatInt(goid), FormatInt(paymentID), ""
	if parentID != 0 {
		parent = FormatInt(parentID)
	}
	sig, err := Sign(secureKey, PaymentIdentityFields(g, p, parent, orderNumber)...)
	if err != nil {
		return "", err
	}
	return "targetGoId=" + g +
		"&paymentSessionId=" + p +
		"&parentPaymentSessionId=" + parent +
		"&orderNumber=" + url.QueryEscape(orderNumber) +
		"&encryptedSignature=" + sig, nil
}

// AppendQuery adds query to rawURL, keeping the query the URL already has
// and its fragment exactly as written.
func AppendQuery(rawURL, query string) string {
	base, frag, hasFrag := strings.Cut(rawURL, "#")
	switch {
	case !strings.Contains(base, "?"):
		base += "?"
	case strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&"):
	default:
		base += "&"
	}
	base += query
	if hasFrag {
		base += "#" + frag
	}
	return base
}

func (f *Flows) identityURL(m Merchant, target string, id flowIdentity) (string, error) {
	q, err := IdentityQuery(m.SecureKey, id.GoID, id.PaymentID, id.ParentID, id.OrderNumber)
	if err != nil {
		return "", err
	}
	return AppendQuery(target, q), nil
}

// returnsToSuccess decides which of the e-shop's URLs the customer returns
// to: the success URL when the payment is paid, authorized or waiting for a
// method already chosen to finish (sub-state 101 online, 102 offline
// transfer); the failed URL otherwise (canceled, timed out, declined, or
// still CREATED: the customer left the gateway without choosing).
func returnsToSuccess(p *restbackend.Payment) bool {
	switch p.State {
	case restbackend.StatePaid, restbackend.StateAuthorized,
		restbackend.StateRefunded, restbackend.StatePartiallyRefunded:
		return true
	case restbackend.StatePaymentMethodChosen:
		sub := strings.TrimPrefix(p.SubState, "_")
		return sub == "101" || sub == "102"
	}
	return false
}

// returnFromGateway is where the gateway sends the customer back
// (return_url with ?goid=G, the gateway adds &id=P): it reads the state and
// redirects to the e-shop's success or failed URL with the signed identity.
func (f *Flows) returnFromGateway(c echo.Context) error {
	q := c.QueryParams()
	m, err := f.merchantOf("goid", q.Get("goid"))
	if err != nil {
		return f.page(c, err)
	}
	id, err := flowParseID("id", q.Get("id"))
	if err != nil {
		return f.page(c, err)
	}
	ctx := c.Request().Context()
	p, err := f.status(ctx, m, id)
	if err != nil {
		return f.page(c, err)
	}
	sess, err := f.sessionOf(ctx, m, p)
	if errors.Is(err, store.ErrNotFound) {
		return f.page(c, pageNoReturnURL(id))
	}
	if err != nil {
		return f.page(c, err)
	}
	target := sess.FailedURL
	if returnsToSuccess(p) {
		target = sess.SuccessURL
	}
	if target == "" {
		return f.page(c, pageNoReturnURL(id))
	}
	loc, err := f.identityURL(m, target, flowIdentityOf(m, p, sess))
	if err != nil {
		return f.page(c, err)
	}
	f.logFor(ctx).Info("customer returned", zap.Int64("goid", m.GoID), zap.Int64("payment", id),
		zap.String("state", p.State), zap.Bool("success", target == sess.SuccessURL))
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(http.StatusFound, loc)
}

// NotificationKey identifies one change of a payment: repeated
// notifications of the same change collapse into one delivery.
func NotificationKey(goid int64, p *restbackend.Payment) string {
	return FormatInt(goid) + ":" + FormatInt(p.ID) + ":" + p.State + ":" + p.SubState
}

// notify is the gateway's notification (notification_url with ?goid=G, the
// gateway adds &id=P). The notification for the e-shop is stored in the
// outbox before the gateway gets its 200; any failure before that answers
// 5xx so that the gateway repeats the call.
func (f *Flows) notify(c echo.Context) error {
	q := c.QueryParams()
	plain := func(status int, msg string) error { return c.String(status, msg+"\n") }
	m, err := f.merchantOf("goid", q.Get("goid"))
	if err != nil {
		return plain(err.(*pageError).Status, err.(*pageError).EN)
	}
	id, err := flowParseID("id", q.Get("id"))
	if err != nil {
		return plain(http.StatusBadRequest, err.(*pageError).EN)
	}
	ctx := c.Request().Context()
	p, err := f.status(ctx, m, id)
	if err != nil {
		var pe *pageError
		if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
			return plain(http.StatusNotFound, pe.EN)
		}
		return plain(http.StatusServiceUnavailable, "payment status not available; repeat later")
	}
	sess, err := f.sessionOf(ctx, m, p)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		f.logFor(ctx).Error("notification: session read failed", zap.Int64("payment", id), zap.Error(err))
		return plain(http.StatusServiceUnavailable, "store not available; repeat later")
	}
	if m.NotificationURL == "" {
		f.logFor(ctx).Info("notification not forwarded: e-shop has no notification URL",
			zap.Int64("goid", m.GoID), zap.Int64("payment", id), zap.String("state", p.State))
		return plain(http.StatusOK, "OK")
	}
	target, err := f.identityURL(m, m.NotificationURL, flowIdentityOf(m, p, sess))
	if err != nil {
		return plain(http.StatusInternalServerError, "cannot sign")
	}
	key := NotificationKey(m.GoID, p)
	added, err := f.out.Enqueue(ctx, store.Notification{GoID: m.GoID, PaymentID: p.ID, Key: key, URL: target})
	if err != nil {
		f.logFor(ctx).Error("notification: enqueue failed", zap.String("key", key), zap.Error(err))
		return plain(http.StatusServiceUnavailable, "store not available; repeat later")
	}
	f.logFor(ctx).Info("notification accepted", zap.String("key", key), zap.Bool("new", added))
	return plain(http.StatusOK, "OK")
}

// outboxCounts shows the outbox by state as JSON; dead notifications are
// those the e-shop never took within the retry period.
func (f *Flows) outboxCounts(c echo.Context) error {
	n, err := f.out.Counts(c.Request().Context())
	if err != nil {
		f.logFor(c.Request().Context()).Error("outbox counts failed", zap.Error(err))
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": "store not available"})
	}
	return c.JSON(http.StatusOK, map[string]int{"pending": n.Pending, "delivered": n.Delivered, "dead": n.Dead})
}

// payFull sends the customer of a payment created by createPayment to the
// gateway: /gw/pay-full-v2?sessionInfo.targetGoId=G&sessionInfo.paymentSessionId=P&sessionInfo.encryptedSignature=S.
func (f *Flows) payFull(c echo.Context) error {
	get, err := flowForm(c)
	if err != nil {
		return f.page(c, err)
	}
	m, err := f.merchantOf("sessionInfo.targetGoId", get("sessionInfo.targetGoId"))
	if err != nil {
		return f.page(c, err)
	}
	id, err := flowParseID("sessionInfo.paymentSessionId", get("sessionInfo.paymentSessionId"))
	if err != nil {
		return f.page(c, err)
	}
	if !Verify(m.SecureKey, get("sessionInfo.encryptedSignature"), PaymentSessionFields(FormatInt(m.GoID), FormatInt(id))...) {
		return f.page(c, pageBadSignature())
	}
	p, err := f.status(c.Request().Context(), m, id)
	if err != nil {
		return f.page(c, err)
	}
	return f.toGateway(c, p)
}

// toGateway redirects to the payment's gateway page.
func (f *Flows) toGateway(c echo.Context, p *restbackend.Payment) error {
	if p.GwURL == "" {
		f.logFor(c.Request().Context()).Warn("gateway gave no gw_url", zap.Int64("payment", p.ID))
		return f.page(c, pageGateway())
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Redirect(http.StatusFound, p.GwURL)
}

// PayFullURL is the URL a legacy e-shop sends its customer to after
// createPayment (what the legacy client library builds).
func PayFullURL(bridgeURL, secureKey string, goid, paymentID int64) (string, error) {
	g, p := FormatInt(goid), FormatInt(paymentID)
	sig, err := Sign(secureKey, PaymentSessionFields(g, p)...)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(bridgeURL, "/") + PathPayFull + "?sessionInfo.targetGoId=" + g +
		"&sessionInfo.paymentSessionId=" + p + "&sessionInfo.encryptedSignature=" + sig, nil
}
