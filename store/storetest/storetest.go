// Package storetest provides store doubles for unit tests of the packages
// above the store (as net/http/httptest does for HTTP).
package storetest

import (
	"context"
	"sync"

	"github.com/legacybridge/soapbridge/store"
)

// Sessions keeps sessions in memory. Only SaveSession and Session are
// implemented; any other method of store.Store panics (nil embedded
// interface), so a test relying on more says so at once. The zero value is
// ready to use.
type Sessions struct {
	store.Store
	mu       sync.Mutex
	sessions map[int64]store.Session
}

// SaveSession stores s under its payment id.
func (m *Sessions) SaveSession(_ context.Context, s store.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = map[int64]store.Session{}
	}
	m.sessions[s.PaymentID] = s
	return nil
}

// Session returns the session of payment id, or store.ErrNotFound.
func (m *Sessions) Session(_ context.Context, id int64) (store.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return store.Session{}, store.ErrNotFound
	}
	return s, nil
}
