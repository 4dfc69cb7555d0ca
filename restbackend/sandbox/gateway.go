package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Merchant is one selling point the sandbox knows, with its OAuth2 client.
type Merchant struct {
	restbackend.Account
	// Scopes the client may request; payment-create and payment-all when empty.
	Scopes []string
	// Name is the merchant's name the payment page shows (optional).
	Name string
}

// Options configure a Gateway.
type Options struct {
	Merchants []Merchant
	// Clock is the sandbox time; nil means real time (which
	// POST /sandbox/clock/advance can still move forward).
	Clock Clock
	// BaseURL is the public root used in gw_url and image URLs; empty means
	// derived from each request's Host (and X-Forwarded-Proto).
	BaseURL string
	Logger  *zap.Logger
	// NotifyClient calls the merchants' notification URLs; a client with a
	// 10 s timeout when nil.
	NotifyClient *http.Client
	// NotifyBackoff is the wait after failed notification attempt n (1-based);
	// 30 s doubling up to 2 h when nil.
	NotifyBackoff func(attempt int) time.Duration
	// StateFile, when set, is a JSON file the sandbox keeps its payments and
	// stored cards in (see persist.go), so a restart loses nothing. Use Open
	// to learn whether it could be read.
	StateFile string
	// SeedIDsFromClock makes the first payment id come from the clock
	// (persist.go), so that a restarted sandbox never hands out an id an
	// earlier run did. Off, ids start at 3000000001, as tests with fixed ids
	// expect. Binaries that a bridge with a kept database talks to set it.
	SeedIDsFromClock bool
	// IDsAbove, when set, keeps every payment id above it: the highest id
	// a bridge's kept database already holds. The clock seed alone repeats
	// ids when two runs start within one of its tenths of a second.
	IDsAbove int64
	// StatementFormats are the statement formats the merchant accounts
	// offer; nil means CSV_A and CSV_B, what earlier sandboxes made.
	// AllStatementFormats lists every format the facts name.
	StatementFormats []string
}

const (
	tokenLifetime   = 1800 * time.Second
	unpaidTimeout   = 7 * 24 * time.Hour // CREATED / PAYMENT_METHOD_CHOSEN → TIMEOUTED
	authorizationTT = 4 * 24 * time.Hour // AUTHORIZED → CANCELED
	maxBody         = 1 << 20
)

// Gateway is the sandbox payment gateway; it implements http.Handler.
type Gateway struct {
	opts   Options
	clock  Clock
	log    *zap.Logger
	e      *echo.Echo
	client *http.Client

	// realNow measures token lifetimes: real time, so that advancing the
	// sandbox clock by days does not expire tokens that clients cache by
	// wall time. Tests replace it.
	realNow func() time.Time

	mu        sync.Mutex
	merchants map[string]*Merchant // by client id
	byGoID    map[int64]*Merchant
	tokens    map[string]*accessToken
	payments  map[int64]*payment
	byGwToken map[string]*payment
	order     []*payment // creation order
	nextID    int64
	cards     map[string]cardRecord // card token → card
	closed    bool
	dirty     bool // state changed since the state file was written
	faults    []*Fault
	posts     map[string]int // REST POSTs received, by path
	acted     map[string]int // REST POSTs answered 2xx, by path

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	unsub  func()
	kick   chan struct{} // wakes the real-time scheduler (nil with a ManualClock)
}

type accessToken struct {
	goid    int64
	scopes  map[string]bool
	expires time.Time
}

// New returns a running sandbox gateway; Close stops its background work. A
// state file that cannot be read is logged and then left alone: the gateway
// runs in memory and does not overwrite it. Open reports that error instead.
func New(opts Options) *Gateway {
	g, err := Open(opts)
	if err != nil {
		g.log.Error("sandbox: state file not used", zap.Error(err))
	}
	return g
}

// Open is New that reports a state file it cannot read; the gateway it
// returns then runs in memory (and must still be closed).
func Open(opts Options) (*Gateway, error) {
	g := &Gateway{
		opts:      opts,
		clock:     opts.Clock,
		log:       opts.Logger,
		client:    opts.NotifyClient,
		realNow:   time.Now,
		merchants: map[string]*Merchant{},
		byGoID:    map[int64]*Merchant{},
		tokens:    map[string]*accessToken{},
		payments:  map[int64]*payment{},
		byGwToken: map[string]*payment{},
		cards:     map[string]cardRecord{},
		posts:     map[string]int{},
		acted:     map[string]int{},
	}
	if g.clock == nil {
		g.clock = &offsetClock{}
	}
	if g.log == nil {
		g.log = zap.NewNop()
	}
	if g.client == nil {
		g.client = &http.Client{Timeout: 10 * time.Second}
	}
	if g.opts.NotifyBackoff == nil {
		g.opts.NotifyBackoff = defaultBackoff
	}
	g.opts.BaseURL = strings.TrimRight(g.opts.BaseURL, "/")
	g.Register(opts.Merchants...)
	g.nextID = firstTestID
	if g.opts.SeedIDsFromClock {
		g.nextID = clockSeed(g.clock.Now())
	}
	g.nextID = max(g.nextID, g.opts.IDsAbove+1)
	if g.opts.StatementFormats == nil {
		g.opts.StatementFormats = []string{"CSV_A", "CSV_B"}
	}
	var loadErr error
	if g.opts.StateFile != "" {
		if loadErr = g.load(); loadErr != nil {
			g.opts.StateFile = ""
		}
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	if mc, ok := g.clock.(*ManualClock); ok {
		g.unsub = mc.subscribe(g.RunDue)
	} else {
		// Real time: look for due work every second, and at once when kicked.
		g.kick = make(chan struct{}, 1)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-g.ctx.Done():
					return
				case <-t.C:
					g.RunDue()
				case <-g.kick:
					g.RunDue()
				}
			}
		}()
	}
	g.e = g.routes()
	return g, loadErr
}

// Close stops the scheduler and pending notification retries.
func (g *Gateway) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	if g.unsub != nil {
		g.unsub()
	}
	g.cancel()
	g.wg.Wait()
}

// kickScheduler makes the real-time scheduler run what is due now. With a
// ManualClock it does nothing: the test decides when (Advance, RunDue).
func (g *Gateway) kickScheduler() {
	if g.kick == nil {
		return
	}
	select {
	case g.kick <- struct{}{}:
	default: // a run is already pending
	}
}

// ServeHTTP serves the REST interface, the payment page and the test
// helpers, counts REST POSTs and applies armed faults.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/") {
		g.mu.Lock()
		g.posts[r.URL.Path]++
		g.mu.Unlock()
	}
	if !strings.HasPrefix(r.URL.Path, "/sandbox/") {
		if f := g.takeFault(r.Method, r.URL.Path); f != nil {
			g.log.Info("sandbox: injected fault", zap.String("kind", string(f.Kind)), zap.String("method", r.Method), zap.String("path", r.URL.Path))
			g.serveFault(w, r, f)
			return
		}
	}
	g.serve(w, r)
}

// serve handles one call, then counts a performed POST and saves the state.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	g.e.ServeHTTP(sw, r)
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/") && sw.status >= 200 && sw.status < 300 {
		g.acted[r.URL.Path]++
	}
	g.persistLocked()
}

func (g *Gateway) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = g.errorHandler
	e.Use(middleware.Recover(), middleware.BodyLimit(strconv.Itoa(maxBody))) // bytes: echo's "1M" would be 10^6

	api := e.Group("/api")
	api.POST(route(restbackend.PathToken), g.handleToken)
	all := []string{restbackend.ScopePaymentAll}
	api.POST(route(restbackend.PathCreatePayment), g.handleCreate, g.auth(restbackend.ScopePaymentCreate, restbackend.ScopePaymentAll))
	api.GET(route(restbackend.PathPayment), g.handleStatus, g.auth(all...))
	api.POST(route(restbackend.PathRefund), g.handleRefund, g.auth(all...))
	api.GET(route(restbackend.PathRefunds), g.handleRefunds, g.auth(all...))
	api.POST(route(restbackend.PathCreateRecurrence), g.handleCreateRecurrence, g.auth(all...))
	api.POST(route(restbackend.PathVoidRecurrence), g.handleVoidRecurrence, g.auth(all...))
	api.POST(route(restbackend.PathCapture), g.handleCapture, g.auth(all...))
	api.POST(route(restbackend.PathVoidAuthorization), g.handleVoidAuthorization, g.auth(all...))
	api.GET(route(restbackend.PathInstruments), g.handleInstruments, g.auth(all...))
	api.GET(route(restbackend.PathAllInstruments), g.handleInstrumentsAll, g.auth(all...))
	api.GET(route(restbackend.PathCard), g.handleCardGet, g.auth(all...))
	api.DELETE(route(restbackend.PathCard), g.handleCardDelete, g.auth(all...))
	api.POST(route(restbackend.PathStatement), g.handleStatement, g.auth(all...))

	e.GET("/gw/v3/:token", g.handlePage)
	e.POST("/gw/v3/:token", g.handlePage)
	e.GET("/gp-gw/js/embed.js", g.handleEmbedJS)
	e.GET("/gp-gw/images/:file", g.handleImage)

	e.GET("/sandbox/payments/:id", g.handleHelperGet)
	e.POST("/sandbox/payments/:id/:action", g.handleHelperAct)
	e.POST("/sandbox/clock/advance", g.handleClockAdvance)
	e.GET("/sandbox/clock", g.handleClockGet)
	e.POST("/sandbox/faults", g.handleFaultAdd)
	e.GET("/sandbox/faults", g.handleFaultList)
	e.DELETE("/sandbox/faults", g.handleFaultClear)
	e.GET("/sandbox/stats", g.handleStats)
	return e
}

// route is a path of the REST table (restbackend.Path*) in echo's spelling:
// ":id" for "{id}".
func route(path string) string {
	return strings.NewReplacer("{", ":", "}", "").Replace(path)
}

// errorHandler answers every failure with the error-list body.
func (g *Gateway) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var ae *apiError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &he):
		msg := http.StatusText(he.Code)
		if he.Code == http.StatusNotFound {
			msg = "no such endpoint: " + c.Request().Method + " " + c.Request().URL.Path
		}
		ae = refuse(he.Code, globalErr(codeInvalidRequest, msg))
	default:
		g.log.Error("sandbox: internal error", zap.Error(err))
		ae = refuse(http.StatusInternalServerError, globalErr(codeSystem, "internal error"))
	}
	g.writeError(c.Response(), ae)
}

// writeError writes the error-list body of ae.
func (g *Gateway) writeError(w http.ResponseWriter, ae *apiError) {
	b, _ := json.Marshal(restbackend.ErrorBody{
		DateIssued: g.clock.Now().In(prague).Format("2006-01-02T15:04:05.000-0700"),
		Errors:     ae.items,
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ae.status)
	_, _ = w.Write(append(b, '\n'))
}

// Register adds merchants, or replaces the registration of their client
// id and goid (a changed secret), while the gateway serves.
func (g *Gateway) Register(ms ...Merchant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			g.log.Error("sandbox: merchant not registered", zap.Int64("goid", m.GoID), zap.Error(err))
			continue
		}
		if len(m.Scopes) == 0 {
			m.Scopes = []string{restbackend.ScopePaymentCreate, restbackend.ScopePaymentAll}
		}
		if old := g.byGoID[m.GoID]; old != nil && old.ClientID != m.ClientID {
			delete(g.merchants, old.ClientID)
		}
		g.merchants[m.ClientID] = &m
		g.byGoID[m.GoID] = &m
	}
}

// --- authentication ---

func (g *Gateway) handleToken(c echo.Context) error {
	id, secret, ok := c.Request().BasicAuth()
	g.mu.Lock()
	m := g.merchants[id]
	g.mu.Unlock()
	if !ok || m == nil || !constEq(secret, m.ClientSecret) {
		return refuse(http.StatusUnauthorized, globalErr(codeWrongCredentials, "wrong client id or client secret"))
	}
	if gt := c.FormValue("grant_type"); gt != "client_credentials" {
		if gt == "" {
			return errField(codeMandatory, "grant_type", "grant_type is required")
		}
		return errField(codeWrongFormat, "grant_type", "grant_type must be client_credentials")
	}
	scope := strings.Fields(c.FormValue("scope"))
	if len(scope) == 0 {
		return errField(codeMandatory, "scope", "scope is required (payment-create or payment-all)")
	}
	granted := map[string]bool{}
	for _, s := range scope {
		if s != restbackend.ScopePaymentCreate && s != restbackend.ScopePaymentAll {
			return errField(codeWrongFormat, "scope", "unknown scope "+s)
		}
		if !contains(m.Scopes, s) {
			return refuse(http.StatusForbidden, fieldErr(codeUnauthorized, "scope", "scope "+s+" is not allowed for this client"))
		}
		granted[s] = true
	}
	tok := randomToken(32)
	g.mu.Lock()
	now := g.realNow()
	for k, t := range g.tokens { // sweep expired ones; tokens are few
		if now.After(t.expires) {
			delete(g.tokens, k)
		}
	}
	g.tokens[tok] = &accessToken{goid: m.GoID, scopes: granted, expires: now.Add(tokenLifetime)}
	g.mu.Unlock()
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, restbackend.Token{
		TokenType:    "bearer",
		AccessToken:  tok,
		RefreshToken: randomToken(32),
		ExpiresIn:    int64(tokenLifetime / time.Second),
	})
}

// auth checks the bearer token and that it holds one of scopes; the
// merchant's goid is stored as "goid" in the context.
func (g *Gateway) auth(scopes ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header.Get("Authorization")
			const prefix = "bearer "
			if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
				return refuse(http.StatusUnauthorized, globalErr(codeUnauthorized, "missing bearer access token"))
			}
			g.mu.Lock()
			t := g.tokens[strings.TrimSpace(h[len(prefix):])]
			expired := t != nil && g.realNow().After(t.expires)
			g.mu.Unlock()
			if t == nil || expired {
				return refuse(http.StatusUnauthorized, globalErr(codeUnauthorized, "access token invalid or expired"))
			}
			okScope := false
			for _, s := range scopes {
				okScope = okScope || t.scopes[s]
			}
			if !okScope {
				return errForbidden("the token's scope does not allow this call (needs " + strings.Join(scopes, " or ") + ")")
			}
			c.Set("goid", t.goid)
			return next(c)
		}
	}
}

func goidOf(c echo.Context) int64 { v, _ := c.Get("goid").(int64); return v }

// pathID parses the :id path segment; anything unparsable is an unknown payment.
func pathID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, refuse(http.StatusNotFound, globalErr(codeNotFound, "payment "+c.Param("id")+" not found"))
	}
	return id, nil
}

// baseURL is the public root of the sandbox for links it hands out.
func (g *Gateway) baseURL(r *http.Request) string {
	if g.opts.BaseURL != "" {
		return g.opts.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func constEq(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
