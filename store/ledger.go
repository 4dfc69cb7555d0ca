package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Ledger records the calls that move money (capture, voids, refunds,
// create recurrence, create payment), so that a legacy e-shop repeating a
// call after a fault never makes the gateway act twice.
//
// A call is keyed by merchant, operation and a hash of its signed request
// fields (CallKey). Its entry goes through:
//
//	ClaimCall → pending ──CallDone────→ done      (replayed to repeats)
//	   (SetBaseline: a refund's baseline before the POST)
//	                    ├─CallInDoubt─→ in_doubt  (repeats reconcile; then CallDone or CallNotDone)
//	                    └─CallNotDone─→ (deleted: a repeat may act)
//
// Claims are atomic across processes (a unique key, INSERT … ON CONFLICT
// DO NOTHING; a conditional UPDATE to take over an entry older than the
// replay window), and each claim has a random fencing token: a caller can
// only finish the entry it claimed.
type Ledger interface {
	// ClaimCall records a pending call for key at now and reports
	// claimed=true, unless an entry for key exists: then it returns that
	// entry and claimed=false. A done entry created more than window
	// before now counts as a different, earlier call and is replaced; a
	// pending or in-doubt entry is never replaced, whatever its age (its
	// outcome must be reconciled first, then released with CallNotDone).
	// Of concurrent claimers of one key, in any process, one wins.
	ClaimCall(ctx context.Context, key CallKey, now time.Time, window time.Duration) (call Call, claimed bool, err error)
	// SetBaseline records b on a pending call held by claim, before its
	// gateway call: what a refund's reconciliation compares the refund
	// history with survives a lost reply, an expired context or a crash.
	SetBaseline(ctx context.Context, key CallKey, claim string, b RefundBaseline, now time.Time) error
	// LookupCall returns the entry of key, or ErrNotFound; it claims
	// nothing.
	LookupCall(ctx context.Context, key CallKey) (Call, error)
	// UnsettledRefunds lists the refunds of payment paymentID of goid,
	// other than except, that recorded a baseline (their POST may have been
	// sent) and are still pending or in doubt, oldest first.
	UnsettledRefunds(ctx context.Context, goid, paymentID int64, except CallKey) ([]Call, error)
	// CallDone records the result of a pending or in-doubt call held by
	// claim; repeats within the window get rec.
	CallDone(ctx context.Context, key CallKey, claim string, rec CallRecord, now time.Time) error
	// CallInDoubt marks a pending call held by claim whose outcome could not
	// be told; note (clipped to MaxNote) says why.
	CallInDoubt(ctx context.Context, key CallKey, claim, note string, now time.Time) error
	// CallNotDone deletes a pending or in-doubt call held by claim that
	// certainly did not happen, so that a retry may act.
	CallNotDone(ctx context.Context, key CallKey, claim string) error
	// ReleaseCall deletes a done call held by claim whose result may no
	// longer be replayed (a created payment that is no longer CREATED), so
	// that the same request acts again.
	ReleaseCall(ctx context.Context, key CallKey, claim string) error
	// LedgerCounts reports the entries not done (ledger_counts.go).
	LedgerCounts(ctx context.Context) (LedgerCounts, error)
	// TryLock takes the lock called name for every process sharing the
	// store, or reports ok=false at once when another holder has it. The
	// lock ends with unlock, or with the holder: on PostgreSQL it is an
	// advisory lock of the holder's connection; on SQLite a row that
	// expires ttl after it was taken.
	TryLock(ctx context.Context, name string, ttl time.Duration) (unlock func(), ok bool, err error)
}

// RefundBaseline is what a refund's reconciliation compares the refund
// history with: the ids of the refunds of Amount that existed before the
// refund's POST of payment PaymentID. Exactly one new refund of Amount
// afterwards is this one (no other refund of the payment runs while one is
// unsettled: UnsettledRefunds).
type RefundBaseline struct {
	PaymentID int64
	Amount    int64
	RefundIDs []int64
}

// LegacyRefundLock is the ledger operation of the refund lock of releases
// up to schema version 3: a pending entry keyed by the payment id
// (decimal) per payment being refunded, released by deleting it, taken
// over once older than their call deadline + 30 s. This release takes it
// too, beside its own lock (TryLock), while such a release may run beside
// it; it is not a call: LedgerCounts leaves it out.
const LegacyRefundLock = "refund-lock"

// MaxNote bounds the note of a ledger entry.
const MaxNote = 8 << 10

// CallKey identifies one money-moving call.
type CallKey struct {
	GoID      int64
	Operation string // the legacy operation, e.g. "partiallyRefundPayment"
	Hash      string // RequestHash of the signed request fields
	// Legacy, when set, is the hash the previous release keys the same
	// call by (expand and contract, docs/money-safety.md): the entry is
	// written under both hashes with one claim, the second row marked as
	// an alias, so that a previous-release replica serving beside this one
	// finds the call, and the claim fails while the previous release holds
	// an entry under Legacy. Every write of the entry goes to both rows.
	Legacy string
}

// legacy is the key of the alias row of k.
func (k CallKey) legacy() CallKey {
	return CallKey{GoID: k.GoID, Operation: k.Operation, Hash: k.Legacy}
}

// RequestHash is the hex SHA-256 of fields, each length-prefixed so that
// ("ab","c") and ("a","bc") differ.
func RequestHash(fields ...string) string {
	// The same bytes hashed at once from a stack buffer when they fit
	// (they do for the ledger's fields): one allocation, the hex.
	var buf [1024]byte
	b := buf[:0]
	for _, f := range fields {
		b = binary.BigEndian.AppendUint64(b, uint64(len(f)))
		b = append(b, f...)
	}
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// CallState is the state of a ledger entry.
type CallState string

const (
	CallPending CallState = "pending"  // claimed, the gateway call may be under way
	CallDone    CallState = "done"     // the result is known and recorded
	CallInDoubt CallState = "in_doubt" // sent, outcome unknown
)

// Call is a ledger entry.
type Call struct {
	Key   CallKey
	State CallState
	Claim string // fencing token of the holder
	CallRecord
	Note string // why in doubt
	// Baseline is the refund baseline recorded before the POST; nil when
	// none was (not a refund, or the POST was never reached).
	Baseline  *RefundBaseline
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CallRecord is what a done call replays: the legacy result and whatever
// else the caller needs to rebuild its answer (Reply, in the caller's own
// encoding).
type CallRecord struct {
	PaymentID   int64
	Result      string
	Description string
	Reply       string
}

// maxLedgerReply bounds what one entry stores for replay.
const maxLedgerReply = 64 << 10

func newClaim() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

type ledgerQueries struct {
	insert, takeOver, get, baseline, done, inDoubt, notDone, release string
	// insertAlias writes the alias row of a call (CallKey.Legacy);
	// legacyBaseline records a refund's baseline on it in the form the
	// previous release reads (its note), not in the columns, so that the
	// call's baseline is listed once (UnsettledRefunds).
	insertAlias, takeOverAlias, legacyBaseline string
}

const ledgerCols = `goid, operation, request_hash, claim, state, payment_id, result, description, reply, note, created_at, updated_at`

// ledgerRead is what a read of an entry selects: its columns and its baseline.
const ledgerRead = ledgerCols + `, baseline_amount, baseline_refund_ids`

// baselineNote is the note of an entry whose baseline is recorded. It
// keeps the " baseline=" mark that versions before the baseline columns
// looked for in the note, with a value they cannot parse: one of them
// meeting this entry during a rolling upgrade reconciles it (outcome
// unknown at worst) instead of taking it for a call that never reached the
// gateway and refunding again.
const baselineNote = "before the gateway call baseline=recorded"

// legacyBaselineMark precedes the baseline in the note of entries written
// by versions before the baseline columns ("ids:AMOUNT:ID,ID").
const legacyBaselineMark = " baseline=ids:"

func (d *dialect) ledgerQueries() ledgerQueries {
	key := ` goid = ? AND operation = ? AND request_hash = ?`
	return ledgerQueries{
		insert: d.rebind(`INSERT INTO ledger (` + ledgerCols + `)
			VALUES (?, ?, ?, ?, 'pending', 0, '', '', '', '', ?, ?)
			ON CONFLICT (goid, operation, request_hash) DO NOTHING`),
		// One conditional statement: of two replicas taking over the same
		// old entry, the second finds created_at already new. Only a done
		// entry: a pending or in-doubt one may have moved money.
		takeOver: d.rebind(`UPDATE ledger SET claim = ?, state = 'pending', payment_id = 0, result = '',
				description = '', reply = '', note = '', baseline_amount = NULL, baseline_refund_ids = '[]',
				created_at = ?, updated_at = ?
			WHERE` + key + ` AND created_at < ? AND state = 'done'`),
		insertAlias: d.rebind(`INSERT INTO ledger (` + ledgerCols + `, alias)
			VALUES (?, ?, ?, ?, 'pending', 0, '', '', '', '', ?, ?, TRUE)
			ON CONFLICT (goid, operation, request_hash) DO NOTHING`),
		takeOverAlias: d.rebind(`UPDATE ledger SET claim = ?, state = 'pending', payment_id = 0, result = '',
				description = '', reply = '', note = '', baseline_amount = NULL, baseline_refund_ids = '[]',
				created_at = ?, updated_at = ?, alias = TRUE
			WHERE` + key + ` AND created_at < ? AND state = 'done'`),
		legacyBaseline: d.rebind(`UPDATE ledger SET note = ?, updated_at = ?
			WHERE` + key + ` AND claim = ? AND state = 'pending'`),
		get: d.rebind(`SELECT ` + ledgerRead + ` FROM ledger WHERE` + key),
		baseline: d.rebind(`UPDATE ledger SET payment_id = ?, baseline_amount = ?, baseline_refund_ids = ?, note = ?, updated_at = ?
			WHERE` + key + ` AND claim = ? AND state = 'pending'`),
		done: d.rebind(`UPDATE ledger SET state = 'done', payment_id = ?, result = ?, description = ?, reply = ?,
				note = '', updated_at = ?
			WHERE` + key + ` AND claim = ? AND state IN ('pending', 'in_doubt')`),
		inDoubt: d.rebind(`UPDATE ledger SET state = 'in_doubt', note = ?, updated_at = ?
			WHERE` + key + ` AND claim = ? AND state = 'pending'`),
		notDone: d.rebind(`DELETE FROM ledger
			WHERE` + key + ` AND claim = ? AND state IN ('pending', 'in_doubt')`),
		release: d.rebind(`DELETE FROM ledger
			WHERE` + key + ` AND claim = ? AND state = 'done'`),
	}
}

func (k CallKey) valid() error {
	if k.Operation == "" || k.Hash == "" {
		return fmt.Errorf("store: ledger key needs an operation and a hash")
	}
	return nil
}

func (k CallKey) String() string {
	h := k.Hash
	if len(h) > 12 {
		h = h[:12]
	}
	return fmt.Sprintf("%d/%s/%s", k.GoID, k.Operation, h)
}

func (s *sqlStore) ClaimCall(ctx context.Context, key CallKey, now time.Time, window time.Duration) (Call, bool, error) {
	c, claimed, err := s.claimCall(ctx, key, now, window)
	if err == nil && !claimed {
		s.repeats.Add(key, struct{}{})
	}
	return c, claimed, err
}

func (s *sqlStore) claimCall(ctx context.Context, key CallKey, now time.Time, window time.Duration) (Call, bool, error) {
	if err := key.valid(); err != nil {
		return Call{}, false, err
	}
	if window <= 0 {
		return Call{}, false, fmt.Errorf("store: claim call %s: replay window %v is not positive", key, window)
	}
	if s.repeats.Contains(key) {
		if c, ok := s.heldEntry(ctx, key, now, window); ok {
			return c, false, nil
		}
	}
	claim, err := newClaim()
	if err != nil {
		return Call{}, false, fmt.Errorf("store: claim call %s: %w", key, err)
	}
	at := s.d.timeArg(now)
	mine := Call{Key: key, State: CallPending, Claim: claim, CreatedAt: utc(now), UpdatedAt: utc(now)}
	if key.Legacy != "" {
		return s.claimPair(ctx, key, claim, mine, now, window)
	}
	// An entry can vanish between the statements (purged, or released as
	// not done): then try again.
	for range 3 {
		n, err := s.exec(ctx, s.lq.insert, key.GoID, key.Operation, key.Hash, claim, at, at)
		if err != nil {
			return Call{}, false, fmt.Errorf("store: claim call %s: %w", key, err)
		}
		if n == 1 {
			return mine, true, nil
		}
		n, err = s.exec(ctx, s.lq.takeOver, claim, at, at, key.GoID, key.Operation, key.Hash,
			s.d.timeArg(now.Add(-window)))
		if err != nil {
			return Call{}, false, fmt.Errorf("store: claim call %s: %w", key, err)
		}
		if n == 1 {
			return mine, true, nil
		}
		c, err := s.call(ctx, key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Call{}, false, err
		}
		return c, false, nil
	}
	return Call{}, false, fmt.Errorf("store: claim call %s: the entry keeps changing", key)
}

// heldEntry reads key's entry and reports ok when a claim would fail on
// it: pending or in doubt, or done less than window before now (what the
// insert and the take-over refuse). A key this process found held before
// (repeats) is read first, without the write lock and its transaction: a
// shop repeating a call after a fault, or a flood of them after an
// outage, is answered by a read. A new call goes straight to the atomic
// claim (a read first would cost it a query for nothing), and so does one
// whose entry may be taken over: the claim decides. A failed read decides
// nothing either.
func (s *sqlStore) heldEntry(ctx context.Context, key CallKey, now time.Time, window time.Duration) (Call, bool) {
	c, err := scanCall(s.rowR(ctx, s.lq.get, key.GoID, key.Operation, key.Hash))
	if err != nil || c.State == CallDone && c.CreatedAt.Before(utc(now.Add(-window))) {
		return Call{}, false
	}
	// As claimPair returns an entry under key: finishing it finishes both rows.
	c.Key.Legacy = key.Legacy
	return c, true
}

// errAliasHeld rolls back a pair's claim whose alias row is another
// call's (the previous release's).
var errAliasHeld = errors.New("store: the alias row is held")

// claimPair claims key and its alias row (key.Legacy) in one transaction:
// both or neither. An existing entry under key is returned as ClaimCall
// returns one (its Key keeps Legacy, so that finishing it finishes both
// rows); an entry under Legacy alone is the previous release's call, or
// this release's whose first row is gone: it is returned under its own
// key, without Legacy.
func (s *sqlStore) claimPair(ctx context.Context, key CallKey, claim string, mine Call, now time.Time, window time.Duration) (Call, bool, error) {
	at, old := s.d.timeArg(now), s.d.timeArg(now.Add(-window))
	for range 3 {
		var found Call
		var vanished bool
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			for i, k := range []CallKey{key, key.legacy()} {
				insert, takeOver := s.lq.insert, s.lq.takeOver
				if i == 1 {
					insert, takeOver = s.lq.insertAlias, s.lq.takeOverAlias
				}
				n, err := s.execTx(ctx, tx, insert, k.GoID, k.Operation, k.Hash, claim, at, at)
				if err == nil && n == 0 {
					n, err = s.execTx(ctx, tx, takeOver, claim, at, at, k.GoID, k.Operation, k.Hash, old)
				}
				if err != nil {
					return err
				}
				if n == 1 {
					continue
				}
				c, err := scanCall(s.rowIn(ctx, tx, s.lq.get, k.GoID, k.Operation, k.Hash))
				if errors.Is(err, sql.ErrNoRows) {
					vanished = true
					return errAliasHeld
				}
				if err != nil {
					return err
				}
				if i == 0 {
					c.Key.Legacy = key.Legacy
				}
				found = c
				return errAliasHeld
			}
			return nil
		})
		switch {
		case err == nil:
			return mine, true, nil
		case !errors.Is(err, errAliasHeld):
			return Call{}, false, fmt.Errorf("store: claim call %s: %w", key, err)
		case vanished:
			continue
		}
		return found, false, nil
	}
	return Call{}, false, fmt.Errorf("store: claim call %s: the entry keeps changing", key)
}

func (s *sqlStore) execTx(ctx context.Context, tx *sql.Tx, q string, args ...any) (int64, error) {
	res, err := s.execIn(ctx, tx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqlStore) LookupCall(ctx context.Context, key CallKey) (Call, error) {
	if err := key.valid(); err != nil {
		return Call{}, err
	}
	return s.call(ctx, key)
}

// call reads an entry from the writer, so it sees the claim just lost.
func (s *sqlStore) call(ctx context.Context, key CallKey) (Call, error) {
	c, err := scanCall(s.rowW(ctx, s.lq.get, key.GoID, key.Operation, key.Hash))
	if errors.Is(err, sql.ErrNoRows) {
		return Call{}, ErrNotFound
	}
	if err != nil {
		return Call{}, fmt.Errorf("store: read call %s: %w", key, err)
	}
	return c, nil
}

// scanCall reads an entry selected as ledgerRead.
func scanCall(row interface{ Scan(...any) error }) (Call, error) {
	var c Call
	var state, ids string
	var amount sql.NullInt64
	err := row.Scan(&c.Key.GoID, &c.Key.Operation, &c.Key.Hash, &c.Claim, &state, &c.PaymentID, &c.Result,
		&c.Description, &c.Reply, &c.Note, timeScan{&c.CreatedAt}, timeScan{&c.UpdatedAt}, &amount, &ids)
	if err != nil {
		return Call{}, err
	}
	c.State = CallState(state)
	switch {
	case amount.Valid:
		b := RefundBaseline{PaymentID: c.PaymentID, Amount: amount.Int64}
		if err := json.Unmarshal([]byte(ids), &b.RefundIDs); err != nil {
			return Call{}, fmt.Errorf("baseline refund ids of %s: %w", c.Key, err)
		}
		c.Baseline = &b
	case strings.Contains(c.Note, legacyBaselineMark):
		c.Baseline = legacyBaseline(c.Note)
	}
	return c, nil
}

// legacyBaseline reads the baseline an older version wrote into the note
// ("… baseline=ids:AMOUNT:ID,ID"). One that does not parse is still a
// baseline (the POST may have been sent), with an amount no refund has, so
// reconciliation finds its outcome unknown rather than "not done".
func legacyBaseline(note string) *RefundBaseline {
	text := note[strings.LastIndex(note, legacyBaselineMark)+len(legacyBaselineMark):]
	amountText, idsText, _ := strings.Cut(text, ":")
	amount, err := strconv.ParseInt(amountText, 10, 64)
	if err != nil {
		return &RefundBaseline{Amount: -1}
	}
	b := &RefundBaseline{Amount: amount}
	for _, f := range strings.Split(idsText, ",") {
		if f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return &RefundBaseline{Amount: -1}
		}
		b.RefundIDs = append(b.RefundIDs, id)
	}
	return b
}

func (s *sqlStore) SetBaseline(ctx context.Context, key CallKey, claim string, b RefundBaseline, now time.Time) error {
	ids := b.RefundIDs
	if ids == nil {
		ids = []int64{}
	}
	text, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("store: call %s baseline: %w", key, err)
	}
	if key.Legacy != "" {
		// The alias row carries the baseline as the previous release wrote
		// it (legacyBaselineMark), so that it reconciles this call.
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = strconv.FormatInt(id, 10)
		}
		note := "before the gateway call" + legacyBaselineMark + strconv.FormatInt(b.Amount, 10) + ":" + strings.Join(parts, ",")
		return s.finishPair(ctx, "baseline", key,
			s.lq.baseline, []any{b.PaymentID, b.Amount, string(text), baselineNote, s.d.timeArg(now), key.GoID, key.Operation, key.Hash, claim},
			s.lq.legacyBaseline, []any{note, s.d.timeArg(now), key.GoID, key.Operation, key.Legacy, claim})
	}
	return s.finishCall(ctx, "baseline", key, s.lq.baseline, b.PaymentID, b.Amount, string(text), baselineNote, s.d.timeArg(now),
		key.GoID, key.Operation, key.Hash, claim)
}

func (s *sqlStore) UnsettledRefunds(ctx context.Context, goid, paymentID int64, except CallKey) ([]Call, error) {
	rows, err := s.w.QueryContext(ctx, s.d.rebind(`SELECT `+ledgerRead+` FROM ledger
		WHERE goid = ? AND payment_id = ? AND state IN ('pending', 'in_doubt') AND baseline_amount IS NOT NULL
			AND NOT (operation = ? AND request_hash = ?)
		ORDER BY created_at`), goid, paymentID, except.Operation, except.Hash)
	if err != nil {
		return nil, fmt.Errorf("store: unsettled refunds of payment %d: %w", paymentID, err)
	}
	defer rows.Close()
	var out []Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, fmt.Errorf("store: unsettled refunds of payment %d: %w", paymentID, err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: unsettled refunds of payment %d: %w", paymentID, err)
	}
	return out, nil
}

func (s *sqlStore) CallDone(ctx context.Context, key CallKey, claim string, rec CallRecord, now time.Time) error {
	if len(rec.Reply) > maxLedgerReply {
		return fmt.Errorf("store: call %s done: reply of %d bytes is over %d", key, len(rec.Reply), maxLedgerReply)
	}
	return s.finishCall(ctx, "done", key, s.lq.done, rec.PaymentID, rec.Result, rec.Description, rec.Reply,
		s.d.timeArg(now), key.GoID, key.Operation, key.Hash, claim)
}

func (s *sqlStore) CallInDoubt(ctx context.Context, key CallKey, claim, note string, now time.Time) error {
	note = Clip(note, MaxNote)
	return s.finishCall(ctx, "in doubt", key, s.lq.inDoubt, note, s.d.timeArg(now),
		key.GoID, key.Operation, key.Hash, claim)
}

func (s *sqlStore) CallNotDone(ctx context.Context, key CallKey, claim string) error {
	return s.finishCall(ctx, "not done", key, s.lq.notDone, key.GoID, key.Operation, key.Hash, claim)
}

func (s *sqlStore) ReleaseCall(ctx context.Context, key CallKey, claim string) error {
	return s.finishCall(ctx, "release", key, s.lq.release, key.GoID, key.Operation, key.Hash, claim)
}

// finishCall runs the update q of key's entry; with key.Legacy, on both
// rows (finishPair). args end with key.GoID, key.Operation, key.Hash and
// the claim.
func (s *sqlStore) finishCall(ctx context.Context, what string, key CallKey, q string, args ...any) error {
	if key.Legacy != "" {
		alias := slices.Clone(args)
		alias[len(alias)-2] = key.Legacy // every update ends with the key and the claim
		return s.finishPair(ctx, what, key, q, args, q, alias)
	}
	if q != s.lq.baseline {
		// A key found without Legacy (UnsettledRefunds, a lookup) may still
		// be the first row of a pair: its alias row has the same claim.
		return s.finishPair(ctx, what, key, q, args, aliasesOf(q), args)
	}
	n, err := s.exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("store: call %s %s: %w", key, what, err)
	}
	if n == 0 {
		return fmt.Errorf("store: call %s %s: %w", key, what, ErrNotClaimed)
	}
	return nil
}

var hashArg = regexp.MustCompile(`request_hash = (\$\d+|\?)`)

// aliasesOf is the update q of an entry applied instead to the alias rows
// with the entry's claim (a claim is random: they are the entry's own).
func aliasesOf(q string) string { return hashArg.ReplaceAllString(q, "alias AND request_hash <> $1") }

// finishPair runs q on key's first row and aq on its alias row in one
// transaction. The first row must change; the alias row may not (the
// previous release may have settled or released it on its own: its row is
// then its own).
func (s *sqlStore) finishPair(ctx context.Context, what string, key CallKey, q string, args []any, aq string, aargs []any) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		n, err := s.execTx(ctx, tx, q, args...)
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotClaimed
		}
		_, err = s.execTx(ctx, tx, aq, aargs...)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: call %s %s: %w", key, what, err)
	}
	return nil
}

// exec runs a write and returns the rows it changed.
func (s *sqlStore) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.execW(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
