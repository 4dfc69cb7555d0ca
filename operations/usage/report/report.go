// Package report turns the usage record (package usage, kept in the store)
// into the migration report: per merchant, what it still uses of the
// legacy interface, what replaces each in REST (from the one mapping table,
// mapping.go) and what the shop changes in its own code, with examples in
// the shop's language. The same Report is written as JSON (a stable,
// versioned shape, docs/migration.md), text and HTML.
package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/legacybridge/soapbridge/operations/usage"
	"github.com/legacybridge/soapbridge/store"
	"github.com/legacybridge/soapbridge/wsdl"
)

// Version is the JSON shape's version: fields are only ever added within
// one version.
const Version = 1

// Store is what the report reads (the store package's SQL store).
type Store interface {
	Usage(ctx context.Context, goids ...int64) ([]store.UsageCount, error)
	UsageMerchants(ctx context.Context) ([]store.UsageMerchant, error)
}

// Report is the migration report.
type Report struct {
	Version     int       `json:"version"`
	GeneratedAt time.Time `json:"generated_at"`
	// Since is the window of -since: rows last seen before it are left out
	// (counts are totals since first seen). Nil: everything.
	Since *time.Time `json:"since,omitempty"`
	// Stale is set when the store could not be read and this is the last
	// report that could be made; StaleReason says why.
	Stale       bool       `json:"stale,omitempty"`
	StaleReason string     `json:"stale_reason,omitempty"`
	Merchants   []Merchant `json:"merchants"`
}

// Merchant is one merchant's part of the report. GoID 0 holds the calls
// that name no merchant (touch, paymentMethodList).
type Merchant struct {
	GoID int64 `json:"goid"`
	// Configured says whether the bridge serves the merchant now (a
	// merchant removed from the configuration keeps its record).
	Configured bool       `json:"configured"`
	Calls      int64      `json:"calls"`
	FirstSeen  *time.Time `json:"first_seen"`
	LastSeen   *time.Time `json:"last_seen"`
	// DaysSinceLastCall is whole days since the last legacy call or flow
	// of any replica; nil when there never was one.
	DaysSinceLastCall *int `json:"days_since_last_call"`
	// Languages are those of the client families seen, for the examples.
	Languages  []string     `json:"languages"`
	Operations []Operation  `json:"operations"`
	Clients    []ClientUse  `json:"clients"`
	Features   []FeatureUse `json:"features"`
	Retired    []RetiredUse `json:"retired"`
	// Days are the last 30 days' legacy calls answered and refused, for
	// the page's chart (not in the JSON shape of version 1); nil for goid 0
	// and when the store keeps no days.
	Days []Day `json:"-"`
}

// Operation is one legacy operation or flow a merchant uses.
type Operation struct {
	Name string `json:"name"`
	// Kind is "soap" for an operation, "flow" for a browser flow or HTTP
	// service of the legacy integration.
	Kind           string           `json:"kind"`
	Calls          int64            `json:"calls"`
	Failures       int64            `json:"failures"`
	FailuresByKind map[string]int64 `json:"failures_by_kind"`
	// FirstSeen and LastSeen are the merchant's own calls' (not those
	// refused before verification or by the access rules, which a
	// stranger may have sent: store.MerchantsCall); zero when it has none.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	Replacement
}

// Replacement says what replaces a legacy thing in REST.
type Replacement struct {
	// REST is the endpoint or field that replaces it, or "none".
	REST       string    `json:"rest"`
	RESTFields []string  `json:"rest_fields,omitempty"`
	Change     string    `json:"change"`
	Examples   []Example `json:"examples,omitempty"`
}

// ClientUse is one client library (and version) a merchant's calls came from.
type ClientUse struct {
	Family    string    `json:"family"`
	Version   string    `json:"version"`
	Language  string    `json:"language,omitempty"`
	Calls     int64     `json:"calls"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// FeatureUse is one legacy feature a merchant uses.
type FeatureUse struct {
	Name      string    `json:"name"`
	Calls     int64     `json:"calls"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	Replacement
}

// RetiredUse is one retired thing a merchant still uses.
type RetiredUse struct {
	What      string    `json:"what"`
	Calls     int64     `json:"calls"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	Change    string    `json:"change"`
}

// Options select what Build reports.
type Options struct {
	// Configured are the merchants the bridge serves: each is reported,
	// with or without usage.
	Configured []int64
	// GoID, when not 0, reports that merchant alone; one neither
	// configured nor in the record is ErrUnknownMerchant.
	GoID int64
	// Since, when positive, leaves out what was last seen longer ago.
	Since time.Duration
	// Now is the report's time (default time.Now).
	Now time.Time
}

// ErrUnknownMerchant: the goid asked for is neither configured nor in the
// usage record.
var ErrUnknownMerchant = errors.New("unknown merchant")

// Build reads the usage record and makes the report.
func Build(ctx context.Context, st Store, opt Options) (*Report, error) {
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	totals, err := st.UsageMerchants(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the usage record: %w", err)
	}
	var rows []store.UsageCount
	if opt.GoID != 0 {
		rows, err = st.Usage(ctx, opt.GoID)
	} else {
		rows, err = st.Usage(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("read the usage record: %w", err)
	}
	r := &Report{Version: Version, GeneratedAt: now.Truncate(time.Second)}
	var cutoff time.Time
	if opt.Since > 0 {
		cutoff = now.Add(-opt.Since)
		r.Since = &cutoff
	}

	byGoID := map[int64]*Merchant{}
	merchant := func(g int64) *Merchant {
		m := byGoID[g]
		if m == nil {
			m = &Merchant{GoID: g, Languages: []string{}, Operations: []Operation{}, Clients: []ClientUse{},
				Features: []FeatureUse{}, Retired: []RetiredUse{}}
			byGoID[g] = m
		}
		return m
	}
	for _, g := range opt.Configured {
		if opt.GoID == 0 || g == opt.GoID {
			merchant(g).Configured = true
		}
	}
	for _, t := range totals {
		if opt.GoID != 0 && t.GoID != opt.GoID {
			continue
		}
		m := merchant(t.GoID)
		m.Calls = t.Calls
		first, last := t.First.UTC(), t.Last.UTC()
		m.FirstSeen, m.LastSeen = &first, &last
		days := int(now.Sub(last) / (24 * time.Hour))
		m.DaysSinceLastCall = &days
	}
	if opt.GoID != 0 && byGoID[opt.GoID] == nil {
		return nil, fmt.Errorf("goid %d: %w: it is not configured and has no usage recorded", opt.GoID, ErrUnknownMerchant)
	}
	ops := map[int64]map[string]*Operation{}
	for _, row := range rows {
		if !cutoff.IsZero() && row.Last.Before(cutoff) {
			continue
		}
		m := merchant(row.GoID)
		first, last := row.First.UTC(), row.Last.UTC()
		switch row.Kind {
		case store.UsageCall:
			if ops[row.GoID] == nil {
				ops[row.GoID] = map[string]*Operation{}
			}
			op := ops[row.GoID][row.Name]
			if op == nil {
				op = &Operation{Name: row.Name, Kind: "soap", FailuresByKind: map[string]int64{}}
				if slices.Contains(usage.Flows, row.Name) {
					op.Kind = "flow"
				}
				ops[row.GoID][row.Name] = op
			}
			op.Calls += row.Calls
			if row.Detail != string(usage.ResultOK) {
				op.Failures += row.Calls
				op.FailuresByKind[row.Detail] += row.Calls
			}
			if !store.MerchantsCall(row.Detail) {
				break // a stranger's calls move no first or last seen
			}
			if op.FirstSeen.IsZero() || first.Before(op.FirstSeen) {
				op.FirstSeen = first
			}
			if last.After(op.LastSeen) {
				op.LastSeen = last
			}
		case store.UsageClient:
			c := ClientUse{Family: row.Name, Version: row.Detail, Language: usage.Family(row.Name).Language(),
				Calls: row.Calls, FirstSeen: first, LastSeen: last}
			m.Clients = append(m.Clients, c)
			if c.Language != "" && !slices.Contains(m.Languages, c.Language) {
				m.Languages = append(m.Languages, c.Language)
			}
		case store.UsageFeature:
			m.Features = append(m.Features, FeatureUse{Name: row.Name, Calls: row.Calls, FirstSeen: first, LastSeen: last})
		case store.UsageRetired:
			m.Retired = append(m.Retired, RetiredUse{What: row.Name, Calls: row.Calls, FirstSeen: first, LastSeen: last,
				Change: retiredRow(row.Name).Change})
		}
	}
	for g, byName := range ops {
		m := byGoID[g]
		for _, op := range byName {
			m.Operations = append(m.Operations, *op)
		}
	}
	for _, m := range byGoID {
		sort.Strings(m.Languages)
		langs := m.Languages
		if len(langs) == 0 {
			langs = []string{LangHTTP}
		}
		sort.Slice(m.Operations, func(i, j int) bool { return orderOf(m.Operations[i].Name) < orderOf(m.Operations[j].Name) })
		for i := range m.Operations {
			m.Operations[i].Replacement = replacement(m.Operations[i].Name, langs)
		}
		sort.Slice(m.Clients, func(i, j int) bool { return m.Clients[i].Calls > m.Clients[j].Calls })
		sort.SliceStable(m.Features, func(i, j int) bool { return featureOrder(m.Features[i].Name) < featureOrder(m.Features[j].Name) })
		for i := range m.Features {
			m.Features[i].Replacement = replacement(m.Features[i].Name, langs)
		}
		r.Merchants = append(r.Merchants, *m)
	}
	sort.Slice(r.Merchants, func(i, j int) bool { return r.Merchants[i].GoID < r.Merchants[j].GoID })
	if r.Merchants == nil {
		r.Merchants = []Merchant{}
	}
	if err := addDays(ctx, st, r, opt.GoID, now); err != nil {
		return nil, err
	}
	return r, nil
}

// replacement is the mapping row of name with examples in langs.
func replacement(name string, langs []string) Replacement {
	row, ok := Lookup(name)
	if !ok {
		return Replacement{REST: restNone, Change: "Not in the mapping table: see docs/mapping.md."}
	}
	rep := Replacement{REST: row.REST, RESTFields: row.Fields, Change: row.Change}
	for _, l := range langs {
		if e, ok := example(l, row); ok {
			rep.Examples = append(rep.Examples, e)
		}
	}
	return rep
}

// orderOf sorts operations as the WSDL table lists them, then the flows
// as the mapping table does.
func orderOf(name string) int {
	ops := wsdl.OperationNames()
	for i, n := range ops {
		if n == name {
			return i
		}
	}
	for i, r := range flowRows {
		if r.Name == name {
			return len(ops) + i
		}
	}
	return len(ops) + len(flowRows)
}

// featureOrder sorts features as the table lists them, channels last.
func featureOrder(name string) int {
	for i, r := range featureRows {
		if r.Name == name {
			return i
		}
	}
	return len(featureRows)
}

// Find is the part of r of goid, or nil.
func (r *Report) Find(goid int64) *Merchant {
	for i := range r.Merchants {
		if r.Merchants[i].GoID == goid {
			return &r.Merchants[i]
		}
	}
	return nil
}
