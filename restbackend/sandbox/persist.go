package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Payment ids. With Options.SeedIDsFromClock the first id comes from the clock:
// idBase plus the tenths of a second since idEpoch, ten digits until 2047.
// A restart therefore starts above every id the previous run handed out as
// long as that run averaged fewer than ten payments a second, so a bridge
// database kept across restarts never sees an id twice. With a state file
// the saved counter continues (and the clock seed still applies when it is
// higher). Two runs within one tenth would still meet, so a bridge also
// passes Options.IDsAbove, the highest id its database holds.
const idBase = 3000000000

// firstTestID is the first id without Options.SeedIDsFromClock: fixed ids
// keep golden files stable.
const firstTestID = idBase + 1

var idEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func clockSeed(now time.Time) int64 {
	ds := now.Sub(idEpoch) / (100 * time.Millisecond)
	if ds < 0 {
		ds = 0
	}
	return idBase + 1 + int64(ds)
}

// newID hands out the next payment id. Caller holds g.mu.
func (g *Gateway) newID() int64 {
	id := g.nextID
	g.nextID++
	g.dirty = true
	return id
}

// The state file is JSON: the sandbox's state is small (a developer's
// payments), a person can read and edit it, and it needs no schema or
// migration. It is written whole to a temporary file beside it and renamed
// over it, so a crash leaves the old or the new state, never half of one.
// Tokens are not kept (clients fetch a new one on 401) and neither are
// pending notification retries.
const stateVersion = 1

type stateFile struct {
	Version  int                  `json:"version"`
	NextID   int64                `json:"next_id"`
	Payments []paymentRecord      `json:"payments"`
	Cards    map[string]cardSaved `json:"cards"`
}

type cardSaved struct {
	GoID int64                   `json:"goid"`
	Card restbackend.PaymentCard `json:"card"`
	PAN  string                  `json:"pan"`
}

type refundRecord struct {
	Amount  int64     `json:"amount"`
	State   string    `json:"state"`
	At      time.Time `json:"at"`
	Changed time.Time `json:"changed"`
}

type moveRecord struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Amount int64     `json:"amount"`
}

type paymentRecord struct {
	ID           int64                         `json:"id"`
	ParentID     int64                         `json:"parent_id,omitempty"`
	GoID         int64                         `json:"goid"`
	GwToken      string                        `json:"gw_token,omitempty"`
	GwURL        string                        `json:"gw_url,omitempty"`
	Req          restbackend.PaymentRequest    `json:"request"`
	State        string                        `json:"state"`
	SubState     string                        `json:"sub_state,omitempty"`
	Instrument   string                        `json:"instrument,omitempty"`
	Swift        string                        `json:"swift,omitempty"`
	Amount       int64                         `json:"amount"`
	Authorized   int64                         `json:"authorized,omitempty"`
	Refunded     int64                         `json:"refunded,omitempty"`
	Created      time.Time                     `json:"created"`
	AuthorizedAt time.Time                     `json:"authorized_at"`
	Card         *restbackend.PaymentCard      `json:"card,omitempty"`
	Bank         *restbackend.BankAccount      `json:"bank,omitempty"`
	Preauth      *restbackend.Preauthorization `json:"preauth,omitempty"`
	Recurrence   *restbackend.Recurrence       `json:"recurrence,omitempty"`
	RecurStart   time.Time                     `json:"recur_start"`
	RecurCount   int                           `json:"recur_count,omitempty"`
	ChargeAt     time.Time                     `json:"charge_at"`
	ChargeSub    string                        `json:"charge_sub,omitempty"`
	CaptureAt    time.Time                     `json:"capture_at"`
	CaptureAmt   int64                         `json:"capture_amount,omitempty"`
	RequestToken bool                          `json:"request_card_token,omitempty"`
	Voided       bool                          `json:"voided,omitempty"`
	Refunds      []refundRecord                `json:"refunds,omitempty"`
	Moves        []moveRecord                  `json:"moves,omitempty"`
}

func (p *payment) record() paymentRecord {
	r := paymentRecord{ID: p.id, ParentID: p.parentID, GoID: p.goid, GwToken: p.gwToken, GwURL: p.gwURL, Req: p.req,
		State: p.state, SubState: p.subState, Instrument: p.instrument, Swift: p.swift, Amount: p.amount,
		Authorized: p.authorized, Refunded: p.refunded, Created: p.created, AuthorizedAt: p.authorizedAt,
		Card: p.card, Bank: p.bank, Preauth: p.preauth, Recurrence: p.recurrence, RecurStart: p.recurStart,
		RecurCount: p.recurCount, ChargeAt: p.chargeAt, ChargeSub: p.chargeSub, CaptureAt: p.captureAt,
		CaptureAmt: p.captureAmt, RequestToken: p.requestToken, Voided: p.voided}
	for _, x := range p.refunds {
		r.Refunds = append(r.Refunds, refundRecord{Amount: x.amount, State: x.state, At: x.at, Changed: x.changed})
	}
	for _, m := range p.moves {
		r.Moves = append(r.Moves, moveRecord{At: m.at, Kind: m.kind, Amount: m.amount})
	}
	return r
}

func (r *paymentRecord) payment() *payment {
	p := &payment{id: r.ID, parentID: r.ParentID, goid: r.GoID, gwToken: r.GwToken, gwURL: r.GwURL, req: r.Req,
		state: r.State, subState: r.SubState, instrument: r.Instrument, swift: r.Swift, amount: r.Amount,
		authorized: r.Authorized, refunded: r.Refunded, created: r.Created, authorizedAt: r.AuthorizedAt,
		card: r.Card, bank: r.Bank, preauth: r.Preauth, recurrence: r.Recurrence, recurStart: r.RecurStart,
		recurCount: r.RecurCount, chargeAt: r.ChargeAt, chargeSub: r.ChargeSub, captureAt: r.CaptureAt,
		captureAmt: r.CaptureAmt, requestToken: r.RequestToken, voided: r.Voided}
	for _, x := range r.Refunds {
		p.refunds = append(p.refunds, refund{amount: x.Amount, state: x.State, at: x.At, changed: x.Changed})
	}
	for _, m := range r.Moves {
		p.moves = append(p.moves, movement{at: m.At, kind: m.Kind, amount: m.Amount})
	}
	return p
}

// load restores the state file, if there is one. Called before serving.
func (g *Gateway) load() error {
	b, err := os.ReadFile(g.opts.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox state: %w", err)
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("sandbox state %s: %w", g.opts.StateFile, err)
	}
	if st.Version != stateVersion {
		return fmt.Errorf("sandbox state %s: version %d, this sandbox reads %d", g.opts.StateFile, st.Version, stateVersion)
	}
	for i := range st.Payments {
		p := st.Payments[i].payment()
		g.payments[p.id] = p
		if p.gwToken != "" {
			g.byGwToken[p.gwToken] = p
		}
		g.order = append(g.order, p)
		g.nextID = max(g.nextID, p.id+1)
	}
	for tok, c := range st.Cards {
		g.cards[tok] = cardRecord{goid: c.GoID, card: c.Card, pan: c.PAN}
	}
	g.nextID = max(g.nextID, st.NextID)
	return nil
}

// persistLocked writes the state file when something changed. Caller holds g.mu.
func (g *Gateway) persistLocked() {
	if g.opts.StateFile == "" || !g.dirty {
		return
	}
	st := stateFile{Version: stateVersion, NextID: g.nextID, Cards: map[string]cardSaved{}}
	for _, p := range g.order {
		st.Payments = append(st.Payments, p.record())
	}
	for tok, c := range g.cards {
		st.Cards[tok] = cardSaved{GoID: c.goid, Card: c.card, PAN: c.pan}
	}
	b, err := json.MarshalIndent(st, "", " ")
	if err == nil {
		err = writeAtomic(g.opts.StateFile, b)
	}
	if err != nil {
		g.log.Error("sandbox: cannot save the state file", zap.String("file", g.opts.StateFile), zap.Error(err))
		return
	}
	g.dirty = false
}

func writeAtomic(name string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}
