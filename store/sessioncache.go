package store

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Sessions are read on every paymentStatus, return and notification, and
// nearly always in the minutes after the payment was created; the row read
// is most of the store's share of such a call. So each process keeps the
// sessions it read in a bounded LRU.
//
// Why a cached row is right on every replica: a session is written once,
// by the createPayment (or recurrence) that got its id from the gateway,
// and committed before the reply that tells anyone the id. So no replica
// can ask for it before it exists, and what it reads does not change
// afterwards: every field (product name, order number, amount, currency,
// URLs, token, created) is fixed at creation. Misses are never cached: a
// session another replica is about to write must be read from the database.
//
// The two exceptions, and why they are bounded by sessionCacheTTL:
//   - a payment id handed out again (only the sandbox gateway does that,
//     restarted on a kept bridge database) replaces the row: this process
//     drops its entry when it saves, another replica may keep serving the
//     old row until its entry is sessionCacheTTL old;
//   - the retention purge deletes sessions over a year old: this process
//     empties its cache when it purged any, another replica may serve a
//     purged row for at most sessionCacheTTL.
const (
	sessionCacheSize = 10000 // some 300 bytes each
	sessionCacheTTL  = 5 * time.Minute
)

type sessionCache struct {
	c   *lru.Cache[int64, cachedSession]
	now func() time.Time

	// saves counts the saves that ended; a row read while one ended may
	// be the row it replaced, so it is not cached (see add).
	mu    sync.Mutex
	saves uint64
}

type cachedSession struct {
	s      Session
	loaded time.Time
}

func newSessionCache() *sessionCache {
	c, err := lru.New[int64, cachedSession](sessionCacheSize)
	if err != nil {
		panic(err) // only for a size under 1
	}
	return &sessionCache{c: c, now: time.Now}
}

func (sc *sessionCache) get(id int64) (Session, bool) {
	e, ok := sc.c.Get(id)
	if !ok {
		return Session{}, false
	}
	if sc.now().Sub(e.loaded) >= sessionCacheTTL {
		sc.c.Remove(id)
		return Session{}, false
	}
	return e.s, true
}

// before is taken before a database read: the time its entry counts its
// TTL from, and the saves that had ended by then.
func (sc *sessionCache) before() (time.Time, uint64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.now(), sc.saves
}

// add records s as read after before() returned loaded and saves, unless
// a save ended meanwhile.
func (sc *sessionCache) add(s Session, loaded time.Time, saves uint64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.saves == saves {
		sc.c.Add(s.PaymentID, cachedSession{s: s, loaded: loaded})
	}
}

// saved drops the entry of a session that was (or may have been) written.
func (sc *sessionCache) saved(id int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.saves++
	sc.c.Remove(id)
}

func (sc *sessionCache) clear() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.saves++
	sc.c.Purge()
}
