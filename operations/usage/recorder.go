package usage

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/store"
)

// Store is where a Recorder flushes its sums (the store package's SQL
// store implements it).
type Store interface {
	// AddUsage adds counts (an upsert that increments), keeping at most
	// limits distinct rows per merchant and kind.
	AddUsage(ctx context.Context, counts []store.UsageCount, limits store.UsageLimits) error
	// UsageMerchants are every merchant's totals, with the last call seen
	// by any replica.
	UsageMerchants(ctx context.Context) ([]store.UsageMerchant, error)
}

// Config configures a Recorder.
type Config struct {
	Store Store
	// Every is how often the sums are flushed into the store
	// (DefaultFlushInterval when zero). A crash loses at most one interval.
	Every time.Duration
	// Known reports whether goid is a configured merchant; events of other
	// goids are dropped (goid 0, calls naming no merchant, is always kept),
	// so a client sending made-up goids cannot grow the record. ctx is the
	// call's (Record: a call is judged by the merchants it was served
	// with, whatever a reload put in force since) or context.Background()
	// (LastCalls: the merchants in force). Nil: every goid, up to
	// MaxMerchants per interval.
	Known  func(ctx context.Context, goid int64) bool
	Logger *zap.Logger
	// Now is the clock of events without At (default time.Now).
	Now func() time.Time
}

// Bounds of what one merchant's record may hold. Client-supplied text (a
// User-Agent's version, an unknown channel code) is also bounded in length
// (MaxVersion, MaxRetiredText). Past a bound, counts go to an "other" row
// (store.UsageOther): nothing is lost but the detail.
const (
	DefaultFlushInterval = time.Minute
	MaxClients           = 16  // distinct client family and version pairs
	MaxRetired           = 16  // distinct retired things
	MaxFeatures          = 128 // distinct features (the bridge's own names; a guard only)
	MaxCalls             = 128 // distinct operation and result pairs (the bridge's own names; a guard only)
	MaxMerchants         = 10000
	MaxRetiredText       = 48 // bytes of a retired thing's name
	maxOperation         = 40 // bytes of an operation name
)

// limits are the store's bounds: the same as in memory, so that the
// replicas together keep no more than one does.
var limits = store.UsageLimits{store.UsageClient: MaxClients, store.UsageRetired: MaxRetired,
	store.UsageFeature: MaxFeatures, store.UsageCall: MaxCalls, store.UsageDay: maxDays}

// maxDays bounds a merchant's day counts between two flushes (two per day).
const maxDays = 2 * (store.DaysKept + 1)

// Recorder adds events up in memory, per merchant, and flushes the sums
// into the store every interval and when Run ends. Record takes one of
// several locks by goid and touches a few map entries: no I/O, no
// allocation once a merchant's rows exist in the interval. A nil
// *Recorder records nothing, so the record can be switched off.
type Recorder struct {
	st    Store
	every time.Duration
	known func(context.Context, int64) bool
	log   *zap.Logger
	now   func() time.Time

	shards [16]shard

	flushMu sync.Mutex // one flush at a time

	lastMu sync.RWMutex
	last   map[int64]time.Time // every replica's last call per goid, as of the last flush

	dropped atomic.Int64 // events refused since the last flush
}

type shard struct {
	mu sync.Mutex
	m  map[int64]*merchantSums
}

type key struct {
	kind         store.UsageKind
	name, detail string
}

type sums struct {
	n           int64
	first, last time.Time
}

// merchantSums is one merchant's record since the last flush.
type merchantSums struct {
	rows  map[key]*sums
	kinds map[store.UsageKind]int // distinct non-overflow rows per kind
	last  time.Time
}

// New returns a Recorder; call Run to flush it.
func New(cfg Config) (*Recorder, error) {
	if cfg.Store == nil {
		return nil, errors.New("usage: no store")
	}
	r := &Recorder{st: cfg.Store, every: cfg.Every, known: cfg.Known, log: cfg.Logger, now: cfg.Now,
		last: map[int64]time.Time{}}
	if r.every <= 0 {
		r.every = DefaultFlushInterval
	}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if r.now == nil {
		r.now = time.Now
	}
	for i := range r.shards {
		r.shards[i].m = map[int64]*merchantSums{}
	}
	return r, nil
}

// Every is the flush interval.
func (r *Recorder) Every() time.Duration { return r.every }

// Record adds one call: ev says all of it (ctx is read only by Known). It
// never blocks on I/O.
func (r *Recorder) Record(ctx context.Context, ev Event) {
	if r == nil {
		return
	}
	if ev.GoID != 0 && r.known != nil && !r.known(ctx, ev.GoID) || ev.GoID < 0 || ev.Operation == "" {
		r.dropped.Add(1)
		return
	}
	if ev.At.IsZero() {
		ev.At = r.now()
	}
	if !knownFamily(ev.Client.Family) && ev.Client.Family != FamilyNone {
		ev.Client = Client{Family: FamilyUnknown}
	}
	if !ev.Result.valid() {
		ev.Result = ResultServerFault
	}
	sh := &r.shards[uint64(ev.GoID)%uint64(len(r.shards))]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.m[ev.GoID]
	if m == nil {
		if len(sh.m) >= MaxMerchants/len(r.shards) {
			r.dropped.Add(1)
			return
		}
		m = &merchantSums{rows: map[key]*sums{}, kinds: map[store.UsageKind]int{}}
		sh.m[ev.GoID] = m
	}
	if store.MerchantsCall(string(ev.Result)) && ev.At.After(m.last) {
		m.last = ev.At // a stranger's call (unverified, denied) moves no merchant's last call
	}
	one := sums{1, ev.At, ev.At}
	m.add(key{store.UsageCall, store.Clip(ev.Operation, maxOperation), string(ev.Result)}, one)
	if d := dayDetail(ev.Result); d != "" && ev.GoID != 0 {
		m.add(key{store.UsageDay, dayText(ev.At), d}, one)
	}
	if ev.Client.Family != FamilyNone {
		m.add(key{store.UsageClient, string(ev.Client.Family), CleanVersion(ev.Client.Version)}, one)
	}
	for _, f := range ev.Features {
		m.add(key{store.UsageFeature, store.Clip(string(f), MaxRetiredText), ""}, one)
	}
	for _, x := range ev.Retired {
		m.add(key{store.UsageRetired, cleanText(x, MaxRetiredText), ""}, one)
	}
}

// dayText is t's day in UTC as time.DateOnly writes it. The text of the
// last day asked for is kept: a call's record needs it, and formatting it
// for every call cost a string and some 100 ns (issue 28).
func dayText(t time.Time) string {
	y, m, d := t.UTC().Date()
	if l := lastDay.Load(); l != nil && l.y == y && l.m == m && l.d == d {
		return l.text
	}
	l := &day{y: y, m: m, d: d, text: t.UTC().Format(time.DateOnly)}
	lastDay.Store(l)
	return l.text
}

// day is one day's text (dayText).
type day struct {
	y    int
	m    time.Month
	d    int
	text string
}

var lastDay atomic.Pointer[day]

// dayDetail is what a call of result counts as in its merchant's day
// (store.DayCalls, store.DayRefused); "" for an unreadable request.
func dayDetail(r Result) string {
	switch r {
	case ResultOK, ResultServerFault:
		return store.DayCalls
	case ResultRefused, ResultDenied, ResultUnverified:
		return store.DayRefused
	}
	return ""
}

// add counts s under k, or under k's overflow row when k is new and its
// kind is full.
func (m *merchantSums) add(k key, s sums) {
	row := m.rows[k]
	if row == nil {
		if !isOverflow(k) {
			if m.kinds[k.kind] >= limits[k.kind] {
				k = overflow(k)
				row = m.rows[k]
			} else {
				m.kinds[k.kind]++
			}
		}
		if row == nil {
			// The key's strings may point into a request: keep copies.
			k.name, k.detail = clone(k.name), clone(k.detail)
			row = &sums{first: s.first, last: s.last}
			m.rows[k] = row
		}
	}
	row.n += s.n
	if s.first.Before(row.first) {
		row.first = s.first
	}
	if s.last.After(row.last) {
		row.last = s.last
	}
}

func overflow(k key) key {
	if k.kind == store.UsageClient {
		return key{k.kind, k.name, store.UsageOther}
	}
	return key{k.kind, store.UsageOther, ""}
}

func isOverflow(k key) bool { return overflow(k) == k }

// Run flushes every interval until ctx ends, then once more (bounded by
// five seconds), so a graceful shutdown loses nothing. It first loads the
// merchants' last calls, so the cut-over metric survives restarts.
func (r *Recorder) Run(ctx context.Context) {
	if r == nil {
		return
	}
	r.refreshLast(ctx)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := r.Flush(fctx); err != nil {
				r.log.Warn("usage record: last flush at shutdown failed; this interval's counts are lost", zap.Error(err))
			}
			cancel()
			return
		case <-t.C:
			if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("usage record: flush failed; the counts are kept for the next one", zap.Error(err))
			}
		}
	}
}

// Flush writes the sums since the last flush into the store. On failure
// they are kept (within the same bounds) for the next flush.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	taken := map[int64]*merchantSums{}
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for g, m := range sh.m {
			taken[g] = m
		}
		if len(sh.m) > 0 {
			sh.m = map[int64]*merchantSums{}
		}
		sh.mu.Unlock()
	}
	if d := r.dropped.Swap(0); d > 0 {
		r.log.Debug("usage record: events of unknown merchants dropped", zap.Int64("events", d))
	}
	if len(taken) > 0 {
		counts := make([]store.UsageCount, 0, 8*len(taken))
		for g, m := range taken {
			for k, s := range m.rows {
				counts = append(counts, store.UsageCount{GoID: g, Kind: k.kind, Name: k.name, Detail: k.detail,
					Calls: s.n, First: s.first, Last: s.last})
			}
		}
		if err := r.st.AddUsage(ctx, counts, limits); err != nil {
			r.putBack(taken)
			return err
		}
		r.lastMu.Lock()
		for g, m := range taken {
			if m.last.After(r.last[g]) {
				r.last[g] = m.last
			}
		}
		r.lastMu.Unlock()
	}
	return r.refreshLast(ctx)
}

// putBack adds sums that could not be flushed to the current interval's.
func (r *Recorder) putBack(taken map[int64]*merchantSums) {
	for g, old := range taken {
		sh := &r.shards[uint64(g)%uint64(len(r.shards))]
		sh.mu.Lock()
		m := sh.m[g]
		if m == nil {
			sh.m[g] = old
		} else {
			for k, s := range old.rows {
				m.add(k, *s)
			}
			if old.last.After(m.last) {
				m.last = old.last
			}
		}
		sh.mu.Unlock()
	}
}

// refreshLast reads every replica's last call per merchant.
func (r *Recorder) refreshLast(ctx context.Context) error {
	ms, err := r.st.UsageMerchants(ctx)
	if err != nil {
		return err
	}
	r.lastMu.Lock()
	defer r.lastMu.Unlock()
	for _, m := range ms {
		if m.Last.After(r.last[m.GoID]) {
			r.last[m.GoID] = m.Last
		}
	}
	return nil
}

// LastCalls is each merchant's last legacy call known here: the store's as
// of the last flush, or a later one of this replica not flushed yet. Goid
// 0 (calls naming no merchant) is left out; so are goids Known refuses
// (merchants removed from the configuration), so the set stays bounded by
// the merchants configured. It never reads the store (metric scrapes).
func (r *Recorder) LastCalls() map[int64]time.Time {
	if r == nil {
		return nil
	}
	out := map[int64]time.Time{}
	r.lastMu.RLock()
	for g, t := range r.last {
		out[g] = t
	}
	r.lastMu.RUnlock()
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.Lock()
		for g, m := range sh.m {
			if m.last.After(out[g]) {
				out[g] = m.last
			}
		}
		sh.mu.Unlock()
	}
	for g := range out {
		if g == 0 || r.known != nil && !r.known(context.Background(), g) {
			delete(out, g)
		}
	}
	return out
}

func knownFamily(f Family) bool {
	for _, x := range Families {
		if f == x {
			return true
		}
	}
	return false
}

// cleanText bounds client-supplied text: printable characters only (others
// become '?'), at most n bytes.
func cleanText(s string, n int) string {
	s = store.Clip(s, n)
	for _, c := range s {
		if !unicode.IsPrint(c) {
			b := []rune(s)
			for i, c := range b {
				if !unicode.IsPrint(c) {
					b[i] = '?'
				}
			}
			return string(b)
		}
	}
	return s
}

func clone(s string) string {
	if s == "" {
		return ""
	}
	return string([]byte(s))
}
