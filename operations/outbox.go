package operations

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/reqid"
	"github.com/legacybridge/soapbridge/store"

	"github.com/legacybridge/soapbridge/internal/backoff"
)

// The outbox delivers legacy notifications to e-shops. A notification is
// written to the store before the gateway's call is answered, so a crash
// loses nothing; workers claim due rows with a lease, so a row whose worker
// died is claimed again once the lease ends, and several processes sharing
// one PostgreSQL store each get distinct rows. Delivery is therefore at
// least once (twice only if a worker outlives its lease or dies between the
// e-shop's 200 and marking the row).

// OutboxConfig configures an Outbox. Zero fields take the defaults below.
type OutboxConfig struct {
	Store  Outbox
	Logger *zap.Logger
	// HTTPClient makes the deliveries; a client with Timeout when nil.
	HTTPClient *http.Client
	// Timeout bounds one delivery (default 10s).
	Timeout time.Duration
	// Poll is how often the store is asked for due rows when nothing woke
	// the worker (default 500ms).
	Poll time.Duration
	// Lease is how long a claimed row stays with its worker (default 2m);
	// it must exceed Timeout, or a slow delivery could be repeated.
	Lease time.Duration
	// Batch is the number of rows claimed and delivered at once (default 8).
	Batch int
	// MaxAge is how long failed deliveries are retried, counted from the
	// notification's creation; a failure after it makes the row dead
	// (default 24h).
	MaxAge time.Duration
	// Backoff is the delay before attempt n+1 after n failed attempts
	// (default defaultBackoff).
	Backoff func(failed int) time.Duration
	// Now is the clock of due times (default time.Now).
	Now func() time.Time
	// OnFailure, when set, is told of every failed delivery attempt
	// (status page); it must not block.
	OnFailure func(DeliveryFailure)
	// OnAttempt, when set, is told of every delivery attempt's outcome:
	// "delivered", "retry" or "dead" (metrics).
	OnAttempt func(outcome string)
}

// Outbox defaults.
const (
	defaultOutboxTimeout = 10 * time.Second
	defaultOutboxPoll    = 500 * time.Millisecond
	defaultOutboxLease   = 2 * time.Minute
	defaultOutboxBatch   = 8
	defaultOutboxMaxAge  = 24 * time.Hour
)

// defaultBackoff doubles from 2s up to 10 minutes and takes a random point
// in the upper half of that, so e-shops coming back after an outage are not
// hit by every bridge process at the same instant.
func defaultBackoff(failed int) time.Duration { return outboxBackoff.Delay(failed) }

var outboxBackoff = backoff.Policy{Base: 2 * time.Second, Max: 10 * time.Minute, Jitter: 0.5}

// DeliveryFailure is a failed delivery attempt, without the notification
// URL's path and query (they carry the e-shop's parameters and signature).
type DeliveryFailure struct {
	At        time.Time
	GoID      int64
	PaymentID int64
	Target    string // scheme://host of the notification URL
	Status    string // "HTTP 503", "timeout" or "no reply"
	Dead      bool   // no more attempts will be made
	RequestID string // of the call that enqueued it
}

// outbox delivers the notifications of a store.
type outbox struct {
	cfg  OutboxConfig
	log  *zap.Logger
	hc   *http.Client
	wake chan struct{}
	// sign gives the URL of a notification queued unsigned.
	sign func(ctx context.Context, n store.Notification) (string, error)
}

// newOutbox returns an Outbox for cfg.
func newOutbox(cfg OutboxConfig) *outbox {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultOutboxTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = defaultOutboxPoll
	}
	if cfg.Lease <= 0 {
		cfg.Lease = defaultOutboxLease
	}
	if cfg.Batch <= 0 {
		cfg.Batch = defaultOutboxBatch
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = defaultOutboxMaxAge
	}
	if cfg.Backoff == nil {
		cfg.Backoff = defaultBackoff
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	o := &outbox{cfg: cfg, log: cfg.Logger, hc: cfg.HTTPClient, wake: make(chan struct{}, 1)}
	if o.log == nil {
		o.log = zap.NewNop()
	}
	if o.hc == nil {
		// No redirects: an e-shop answering 3xx has not taken the
		// notification, and following it could leave the e-shop's host.
		o.hc = &http.Client{Timeout: cfg.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	return o
}

// Enqueue stores n durably (a repeat of the same Key is dropped) and wakes
// this process's worker.
func (o *outbox) Enqueue(ctx context.Context, n store.Notification) (added bool, err error) {
	if n.RequestID == "" {
		n.RequestID = reqid.From(ctx)
	}
	if n.CreatedAt.IsZero() {
		n.CreatedAt = o.cfg.Now()
	}
	if n.NextAttempt.IsZero() {
		n.NextAttempt = n.CreatedAt
	}
	added, err = o.cfg.Store.Enqueue(ctx, n)
	if err != nil {
		return false, err
	}
	if added {
		o.Wake()
	}
	return added, nil
}

// Wake makes a waiting worker look for due rows now.
func (o *outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Counts reports the outbox by state.
func (o *outbox) Counts(ctx context.Context) (store.OutboxCounts, error) {
	return o.cfg.Store.Counts(ctx)
}

// Run delivers until ctx ends. Store errors are logged and retried at the
// next poll.
func (o *outbox) Run(ctx context.Context) {
	t := time.NewTicker(o.cfg.Poll)
	defer t.Stop()
	for ctx.Err() == nil {
		n, err := o.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			o.log.Warn("outbox: claim failed", zap.Error(err))
		}
		if n == o.cfg.Batch {
			continue // probably more due
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-o.wake:
		}
	}
}

// RunOnce claims one batch of due rows, delivers them in parallel and
// records each outcome; it returns how many rows it claimed.
func (o *outbox) RunOnce(ctx context.Context) (int, error) {
	batch, err := o.cfg.Store.Claim(ctx, o.cfg.Now(), o.cfg.Batch, o.cfg.Lease)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, n := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.deliver(ctx, n)
		}()
	}
	wg.Wait()
	return len(batch), nil
}

// deliver makes one attempt and records it.
func (o *outbox) deliver(ctx context.Context, n store.Notification) {
	target, err := n.URL, error(nil)
	if n.Unsigned {
		target, err = o.sign(ctx, n)
	}
	status := "not signed"
	if err == nil {
		status, err = o.get(ctx, target)
	}
	log := o.log.With(zap.Int64("id", n.ID), zap.Int64("goid", n.GoID),
		zap.Int64("payment", n.PaymentID), zap.String("key", n.Key), zap.Int("attempt", n.Attempts+1),
		zap.String("request_id", n.RequestID))
	// The marks outlive a cancelled worker context (shutdown) but not a
	// stuck store.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err == nil {
		if err := o.cfg.Store.Delivered(mctx, n.ID); err != nil {
			log.Error("outbox: delivered but not marked; it will be delivered again", zap.Error(err))
			return
		}
		log.Info("notification delivered")
		o.attempted("delivered")
		return
	}
	now := o.cfg.Now()
	if ctx.Err() != nil {
		// Shutting down mid-delivery: hand the row back at once rather
		// than leave it leased (a crashed process leaves it leased, and
		// the lease ends later).
		if err := o.cfg.Store.Retry(mctx, n.ID, now, "delivery interrupted by shutdown"); err != nil {
			log.Warn("outbox: interrupted delivery not released; it waits for its lease", zap.Error(err))
		}
		return
	}
	if now.Sub(n.CreatedAt) >= o.cfg.MaxAge {
		if err2 := o.cfg.Store.Dead(mctx, n.ID, err.Error()); err2 != nil {
			log.Error("outbox: cannot mark dead", zap.Error(err2))
			return
		}
		log.Error("notification dead: e-shop did not take it", zap.Duration("tried_for", now.Sub(n.CreatedAt)), zap.Error(err))
		o.attempted("dead")
		if o.cfg.OnFailure != nil {
			o.cfg.OnFailure(DeliveryFailure{At: now, GoID: n.GoID, PaymentID: n.PaymentID, Target: outboxHost(n.URL),
				Status: status, Dead: true, RequestID: n.RequestID})
		}
		return
	}
	next := now.Add(o.cfg.Backoff(n.Attempts + 1))
	if err2 := o.cfg.Store.Retry(mctx, n.ID, next, err.Error()); err2 != nil {
		log.Error("outbox: cannot schedule retry", zap.Error(err2))
		return
	}
	log.Warn("notification not delivered; will retry", zap.Time("next", next), zap.Error(err))
	o.attempted("retry")
	if o.cfg.OnFailure != nil {
		o.cfg.OnFailure(DeliveryFailure{At: now, GoID: n.GoID, PaymentID: n.PaymentID, Target: outboxHost(n.URL),
			Status: status, RequestID: n.RequestID})
	}
}

func (o *outbox) attempted(outcome string) {
	if o.cfg.OnAttempt != nil {
		o.cfg.OnAttempt(outcome)
	}
}

// get makes the delivery request; only a 2xx answer counts. status says
// in a few words what came back, for the status page.
func (o *outbox) get(ctx context.Context, rawURL string) (status string, err error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "bad URL", fmt.Errorf("bad notification URL: %w", err)
	}
	req.Header.Set("User-Agent", "soapbridge-notify/1.0")
	resp, err := o.hc.Do(req)
	if err != nil {
		status = "no reply"
		var ue *url.Error
		if errors.As(err, &ue) {
			if ue.Timeout() {
				status = "timeout"
			}
			err = ue.Err // the URL carries the signature; the key fields say which row
		}
		return status, fmt.Errorf("GET %s: %w", outboxTarget(rawURL), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "HTTP " + strconv.Itoa(resp.StatusCode), fmt.Errorf("GET %s: HTTP %d", outboxTarget(rawURL), resp.StatusCode)
	}
	return "", nil
}

// outboxHost is the scheme and host of a notification URL: all the status
// page may show of it.
func outboxHost(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host
}

func outboxTarget(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}
