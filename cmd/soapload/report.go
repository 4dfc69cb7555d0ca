package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// report is the outcome of a harness run, ratios first.
type report struct {
	Started   time.Time        `json:"started"`
	Machine   string           `json:"machine"`
	Settings  map[string]any   `json:"settings"`
	Ratios    []headline       `json:"ratios"`
	Scenarios []scenarioReport `json:"scenarios"`
	Notes     []string         `json:"notes,omitempty"`
}

// headline is one figure of the table: a ratio of a subject to its
// baseline in the same round (the median over rounds), or a plain figure.
type headline struct {
	Name   string    `json:"name"`
	Value  float64   `json:"value"`
	Unit   string    `json:"unit"` // "×" for a ratio
	Goal   string    `json:"goal,omitempty"`
	Rounds []float64 `json:"rounds"`
}

type scenarioReport struct {
	Name    string `json:"name"`
	What    string `json:"what"`
	Clients int    `json:"clients,omitempty"`
	Rate    int    `json:"rate_per_s,omitempty"`
	// Medians over rounds.
	Throughput float64 `json:"throughput_per_s"`
	P50        float64 `json:"p50_s"`
	P99        float64 `json:"p99_s"`
	P999       float64 `json:"p999_s"`
	// Sums over rounds.
	OK     int `json:"ok"`
	Bad    int `json:"bad"`
	Errors int `json:"errors"`
	// Refused: 503 replies (an overloaded server refusing at once),
	// apart from errors; NeverSent: open-loop calls due while the client's
	// in-flight bound was full.
	Refused   int `json:"refused"`
	NeverSent int `json:"never_sent"`
	// The most connections the client had open, and (cold scenarios) the
	// most descriptors the fresh bridge had open; the largest round.
	PeakClientConns int64 `json:"peak_client_connections,omitempty"`
	PeakBridgeFDs   int64 `json:"peak_bridge_fds,omitempty"`
	// CPU seconds per 1000 good replies of every process that used any,
	// over all rounds; "server" sums the scenario's server-side processes.
	CPUPer1000 map[string]float64 `json:"cpu_s_per_1000_calls"`
	// Peak resident memory (VmHWM) during the scenario, the largest round.
	PeakRSS          map[string]int64 `json:"peak_rss_bytes"`
	ThroughputRounds []float64        `json:"throughput_rounds"`
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (b *bench) report(samples map[string][]sample, groups []procGroup) *report {
	c := b.cfg
	r := &report{
		Started: time.Now(),
		Machine: machine(),
		Settings: map[string]any{
			"duration": c.dur.String(), "rounds": c.rounds, "clients": c.clients, "slow_clients": c.slowClients,
			"slow_delay": c.slowDelay.String(), "open_loop_rate": c.rate, "php_workers": c.phpWorkers, "quick": c.quick,
			"max_conns": c.maxConns, "cold_rates": c.coldRates, "cold_limits": c.coldLimits,
		},
		Notes: b.notes,
	}
	if c.only != nil {
		r.Settings["only"] = c.only.String() // a partial run: ratios of absent scenarios are left out
	}
	serverCPU := func(s scenario, smp sample) float64 { // seconds per call
		var t int64
		for _, g := range s.server {
			t += smp.cpu[g]
		}
		return float64(t) / clockTicks / float64(max(smp.res.ok, 1))
	}
	byName := map[string]scenario{}
	for _, s := range b.scen {
		byName[s.name] = s
		smps := samples[s.name]
		sr := scenarioReport{Name: s.name, What: s.what, Clients: s.clients, Rate: s.rate,
			CPUPer1000: map[string]float64{}, PeakRSS: map[string]int64{}}
		if s.rate > 0 {
			sr.Clients = 0
		}
		var p50, p99, p999 []float64
		ticks := map[string]int64{}
		for _, smp := range smps {
			sr.ThroughputRounds = append(sr.ThroughputRounds, smp.res.rps())
			p50 = append(p50, smp.res.pct(0.5).Seconds())
			p99 = append(p99, smp.res.pct(0.99).Seconds())
			p999 = append(p999, smp.res.pct(0.999).Seconds())
			sr.OK, sr.Bad, sr.Errors = sr.OK+smp.res.ok, sr.Bad+smp.res.bad, sr.Errors+smp.res.errs
			sr.Refused, sr.NeverSent = sr.Refused+smp.res.refused, sr.NeverSent+smp.res.unsent
			sr.PeakClientConns, sr.PeakBridgeFDs = max(sr.PeakClientConns, smp.res.peakConns), max(sr.PeakBridgeFDs, smp.serverFDs)
			for g, t := range smp.cpu {
				ticks[g] += t
			}
			for _, g := range append(slices.Clone(s.server), "client") {
				sr.PeakRSS[g] = max(sr.PeakRSS[g], smp.peak[g])
			}
		}
		sr.Throughput, sr.P50, sr.P99, sr.P999 = median(sr.ThroughputRounds), median(p50), median(p99), median(p999)
		var server int64
		all := slices.Clone(groups)
		if _, ok := ticks["bridge-cold"]; ok {
			all = append(all, procGroup{name: "bridge-cold"})
		}
		for _, g := range all {
			if ticks[g.name] > 0 || slices.Contains(s.server, g.name) || g.name == "client" {
				sr.CPUPer1000[g.name] = float64(ticks[g.name]) / clockTicks / float64(max(sr.OK, 1)) * 1000
			}
			if slices.Contains(s.server, g.name) {
				server += ticks[g.name]
			}
		}
		sr.CPUPer1000["server"] = float64(server) / clockTicks / float64(max(sr.OK, 1)) * 1000
		r.Scenarios = append(r.Scenarios, sr)
	}

	// perRound computes f on each round's samples of the named scenarios.
	perRound := func(name, unit, goal string, f func(s map[string]sample) (float64, bool), names ...string) {
		for _, n := range names {
			if _, ok := samples[n]; !ok {
				return
			}
		}
		h := headline{Name: name, Unit: unit, Goal: goal}
		for i := range c.rounds {
			m := map[string]sample{}
			for _, n := range names {
				m[n] = samples[n][i]
			}
			if v, ok := f(m); ok {
				h.Rounds = append(h.Rounds, v)
			}
		}
		if len(h.Rounds) == 0 {
			return
		}
		h.Value = median(h.Rounds)
		r.Ratios = append(r.Ratios, h)
	}
	tput := func(a, b string) func(map[string]sample) (float64, bool) {
		return func(m map[string]sample) (float64, bool) {
			x, y := m[a].res.rps(), m[b].res.rps()
			return x / y, y > 0
		}
	}
	cpu := func(a, b string) func(map[string]sample) (float64, bool) { // a's server CPU per call over b's
		return func(m map[string]sample) (float64, bool) {
			x, y := serverCPU(byName[a], m[a]), serverCPU(byName[b], m[b])
			return x / y, y > 0 && m[a].res.ok > 0
		}
	}
	perRound("touch / ceiling, throughput", "×", "≥ 0.60", tput("touch", "ceiling"), "touch", "ceiling")
	perRound("paymentStatus / ceiling, throughput", "×", "≥ 0.15", tput("paymentStatus", "ceiling"), "paymentStatus", "ceiling")
	perRound("createPayment / ceiling, throughput", "×", "", tput("createPayment", "ceiling"), "createPayment", "ceiling")
	perRound("bridge / PHP adapter, touch throughput", "×", "≥ 4", tput("touch", "php-touch"), "touch", "php-touch")
	perRound("PHP adapter / bridge, touch CPU per reply (nginx+php-fpm vs bridge)", "×", "≥ 4", cpu("php-touch", "touch"), "touch", "php-touch")
	perRound("bridge / PHP adapter, paymentStatus throughput", "×", "≥ 4", tput("paymentStatus", "php-paymentStatus"), "paymentStatus", "php-paymentStatus")
	perRound("PHP adapter / bridge, paymentStatus CPU per reply (with the sandbox's)", "×", "≥ 4", cpu("php-paymentStatus", "paymentStatus"), "paymentStatus", "php-paymentStatus")
	for _, n := range c.slowClients {
		direct, bridge, php := fmt.Sprintf("slowgw-direct-%d", n), fmt.Sprintf("slowgw-bridge-%d", n), fmt.Sprintf("slowgw-php-%d", n)
		relay := fmt.Sprintf("slowgw-relay-%d", n)
		capacity := float64(n) / max(c.slowDelay.Seconds(), 1e-3)
		goal := func(g string, ok bool) string {
			if ok {
				return g
			}
			return ""
		}
		perRound(fmt.Sprintf("slow gateway, %d clients: bridge / cap of %.0f/s", n, capacity), "×", goal("≥ 0.95", n <= 200),
			func(m map[string]sample) (float64, bool) { return m[bridge].res.rps() / capacity, true }, bridge)
		perRound(fmt.Sprintf("slow gateway, %d clients: bridge / straight at the gateway, throughput", n), "×", goal("≥ 0.6", n >= 2000),
			tput(bridge, direct), bridge, direct)
		// The bare Go reverse proxy is the ceiling of any net/http
		// intermediary here, as the ceiling server is for touch.
		perRound(fmt.Sprintf("slow gateway, %d clients: bare Go reverse proxy / straight at the gateway, throughput", n), "×", "",
			tput(relay, direct), relay, direct)
		perRound(fmt.Sprintf("slow gateway, %d clients: bridge / bare Go reverse proxy, throughput", n), "×", "",
			tput(bridge, relay), bridge, relay)
		perRound(fmt.Sprintf("slow gateway, %d clients: bridge / PHP adapter, throughput", n), "×", goal("≥ 10", n == 1000),
			tput(bridge, php), bridge, php)
		perRound(fmt.Sprintf("slow gateway, %d clients: bridge p99", n), "s", goal("≤ 0.3", n == 1000),
			func(m map[string]sample) (float64, bool) { return m[bridge].res.pct(0.99).Seconds(), true }, bridge)
		perRound(fmt.Sprintf("slow gateway, %d clients: PHP adapter p99", n), "s", "",
			func(m map[string]sample) (float64, bool) { return m[php].res.pct(0.99).Seconds(), true }, php)
		perRound(fmt.Sprintf("slow gateway, %d clients: bridge peak RSS", n), "MB", goal("≤ 150", n >= 2000),
			func(m map[string]sample) (float64, bool) {
				return float64(m[bridge].peak["bridge-slowgw"]) / (1 << 20), true
			}, bridge)
		perRound(fmt.Sprintf("slow gateway, %d clients: bare Go reverse proxy peak RSS", n), "MB", "",
			func(m map[string]sample) (float64, bool) {
				return float64(m[relay].peak["relay"]) / (1 << 20), true
			}, relay)
	}
	open := fmt.Sprintf("slowgw-open-%d", c.rate)
	perRound(fmt.Sprintf("slow gateway, open loop %d/s: p99", c.rate), "s", "≤ 0.15",
		func(m map[string]sample) (float64, bool) { return m[open].res.pct(0.99).Seconds(), true }, open)
	perRound(fmt.Sprintf("slow gateway, open loop %d/s: failed calls", c.rate), "calls", "0",
		func(m map[string]sample) (float64, bool) {
			return float64(m[open].res.bad + m[open].res.errs + m[open].res.unsent), true
		}, open)
	perRound(fmt.Sprintf("slow gateway, open loop %d/s: refused calls (503)", c.rate), "calls", "",
		func(m map[string]sample) (float64, bool) { return float64(m[open].res.refused), true }, open)
	// Cold starts, each beside the warm open loop of the same round when
	// the rates match.
	bridgeCPU := func(smp sample, group string) float64 { // ms per made call
		return float64(smp.cpu[group]) / clockTicks / float64(max(smp.res.ok, 1)) * 1000
	}
	for _, rate := range c.coldRates {
		names := []string{fmt.Sprintf("slowgw-cold-%d", rate)}
		labels := []string{fmt.Sprintf("cold start, open loop %d/s, no limit", rate)}
		for _, n := range c.coldLimits {
			names = append(names, fmt.Sprintf("slowgw-cold-%d-limit%d", rate, n))
			labels = append(labels, fmt.Sprintf("cold start, open loop %d/s, max_calls_in_progress %d", rate, n))
			if c.idleFor > 0 {
				names = append(names, fmt.Sprintf("slowgw-idle-%d-limit%d", rate, n))
				labels = append(labels, fmt.Sprintf("warm, then %s idle, open loop %d/s, max_calls_in_progress %d", c.idleFor, rate, n))
			}
		}
		for i, cold := range names {
			label := labels[i]
			val := func(name, unit string, f func(s sample) float64) {
				perRound(label+": "+name, unit, "", func(m map[string]sample) (float64, bool) { return f(m[cold]), true }, cold)
			}
			val("made", "calls/s", func(s sample) float64 { return s.res.rps() })
			val("made in the first 5 s", "calls/s", func(s sample) float64 { return s.res.earlyRate() })
			val("refused (503)", "calls", func(s sample) float64 { return float64(s.res.refused) })
			val("never sent", "calls", func(s sample) float64 { return float64(s.res.unsent) })
			val("failed", "calls", func(s sample) float64 { return float64(s.res.bad + s.res.errs) })
			val("p99 of made", "s", func(s sample) float64 { return s.res.pct(0.99).Seconds() })
			val("bridge CPU per made call", "ms", func(s sample) float64 { return bridgeCPU(s, "bridge-cold") })
			val("client connections (peak)", "conns", func(s sample) float64 { return float64(s.res.peakConns) })
			val("bridge fds (peak)", "fds", func(s sample) float64 { return float64(s.serverFDs) })
			// Issue 28's goal, against the warm open loop of the same
			// round (slowgw-open-R at -rate): its made calls per second are
			// the warm capacity when -rate is above what the bridge can
			// take (it refuses some), and the cold rate should then be
			// 1.5× them (the figure "offered / warm made").
			perRound(label+": offered / warm made", "×", "1.5", func(m map[string]sample) (float64, bool) {
				return float64(rate) / m[open].res.rps(), m[open].res.rps() > 0
			}, cold, open)
			perRound(label+": made in the first 5 s / warm made", "×", "≥ 0.9", func(m map[string]sample) (float64, bool) {
				return m[cold].res.earlyRate() / m[open].res.rps(), m[open].res.rps() > 0
			}, cold, open)
			perRound(label+": made / warm made", "×", "≥ 0.9", func(m map[string]sample) (float64, bool) {
				return m[cold].res.rps() / m[open].res.rps(), m[open].res.rps() > 0
			}, cold, open)
			perRound(label+": p99 of made / warm p99", "×", "≤ 3", func(m map[string]sample) (float64, bool) {
				return m[cold].res.pct(0.99).Seconds() / m[open].res.pct(0.99).Seconds(), m[open].res.pct(0.99) > 0
			}, cold, open)
			perRound(label+": bridge CPU per made call / warm", "×", "≤ 1.2", func(m map[string]sample) (float64, bool) {
				return bridgeCPU(m[cold], "bridge-cold") / bridgeCPU(m[open], "bridge-slowgw"), m[open].res.ok > 0 && m[cold].res.ok > 0
			}, cold, open)
		}
	}
	perRound(fmt.Sprintf("slow gateway, open loop %d/s (warm): made", c.rate), "calls/s", "",
		func(m map[string]sample) (float64, bool) { return m[open].res.rps(), true }, open)
	perRound(fmt.Sprintf("slow gateway, open loop %d/s (warm): ms bridge CPU per made call", c.rate), "ms", "",
		func(m map[string]sample) (float64, bool) {
			return bridgeCPU(m[open], "bridge-slowgw"), m[open].res.ok > 0
		}, open)
	return r
}

// writeTable prints the ratios, then one line per scenario.
func (r *report) writeTable(out io.Writer) {
	fmt.Fprintf(out, "\n%s, %v\n\n", r.Machine, r.Settings)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tgoal\trounds")
	for _, h := range r.Ratios {
		rounds := make([]string, len(h.Rounds))
		for i, v := range h.Rounds {
			rounds[i] = fmt.Sprintf("%.3g", v)
		}
		fmt.Fprintf(tw, "%s\t%.3g %s\t%s\t%s\n", h.Name, h.Value, h.Unit, h.Goal, strings.Join(rounds, " "))
	}
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tload\treq/s\tp50\tp99\tp99.9\tok/bad/err/refused/unsent\tCPU s per 1000 calls\tpeak RSS MB\tconns")
	for _, s := range r.Scenarios {
		load := fmt.Sprintf("%d clients", s.Clients)
		if s.Rate > 0 {
			load = fmt.Sprintf("%d/s open", s.Rate)
		}
		names := make([]string, 0, len(s.CPUPer1000))
		for n := range s.CPUPer1000 {
			names = append(names, n)
		}
		slices.Sort(names)
		cpu := make([]string, 0, len(names))
		for _, n := range names {
			cpu = append(cpu, fmt.Sprintf("%s %.3f", n, s.CPUPer1000[n]))
		}
		rssNames := make([]string, 0, len(s.PeakRSS))
		for n := range s.PeakRSS {
			rssNames = append(rssNames, n)
		}
		slices.Sort(rssNames)
		rss := make([]string, 0, len(rssNames))
		for _, n := range rssNames {
			rss = append(rss, fmt.Sprintf("%s %.0f", n, float64(s.PeakRSS[n])/(1<<20)))
		}
		conns := ""
		if s.PeakClientConns > 0 {
			conns = fmt.Sprintf("client %d", s.PeakClientConns)
		}
		if s.PeakBridgeFDs > 0 {
			conns += fmt.Sprintf(", bridge fds %d", s.PeakBridgeFDs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\t%d/%d/%d/%d/%d\t%s\t%s\t%s\n", s.Name, load, s.Throughput,
			dur(s.P50), dur(s.P99), dur(s.P999), s.OK, s.Bad, s.Errors, s.Refused, s.NeverSent, strings.Join(cpu, ", "), strings.Join(rss, ", "), conns)
	}
	tw.Flush()
	for _, n := range r.Notes {
		fmt.Fprintln(out, "note:", n)
	}
}

func dur(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}
