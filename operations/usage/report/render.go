package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Formats of the report.
const (
	FormatText = "text"
	FormatJSON = "json"
	FormatHTML = "html"
)

// Write writes r in format (FormatText, FormatJSON or FormatHTML). links
// adds, in HTML, a link from each merchant to its JSON on the admin
// listener (report.json?goid=N).
func (r *Report) Write(w io.Writer, format string, links bool) error {
	switch format {
	case FormatJSON:
		return r.WriteJSON(w)
	case FormatHTML:
		return r.WriteHTML(w, links)
	case FormatText, "":
		return r.WriteText(w)
	}
	return fmt.Errorf("unknown report format %q (text, json or html)", format)
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("soapbridge migration report (version %d), generated %s", r.Version, r.GeneratedAt.Format(time.RFC3339))
	if r.Since != nil {
		ew.printf(", only what was used since %s (counts are totals since first seen)", r.Since.Format(time.RFC3339))
	}
	ew.printf("\n")
	if r.Stale {
		ew.printf("STALE: %s\n", r.StaleReason)
	}
	if len(r.Merchants) == 0 {
		ew.printf("\nNo merchant configured and no usage recorded.\n")
	}
	for _, m := range r.Merchants {
		ew.printf("\n%s\n", merchantTitle(m))
		ew.printf("  %s\n", lastCallLine(m))
		if len(m.Operations) > 0 {
			ew.printf("\n  Operations and flows\n")
			tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
			for _, op := range m.Operations {
				fmt.Fprintf(tw, "    %s\t%s\t%s\tlast %s\t→ %s\n", op.Name, plural(op.Calls, "call"), failureText(op),
					dateOf(op.LastSeen), op.REST)
			}
			tw.Flush()
			for _, op := range m.Operations {
				writeChange(ew, op.Name, op.Replacement)
			}
		}
		if len(m.Clients) > 0 {
			ew.printf("\n  Client libraries\n")
			tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
			for _, c := range m.Clients {
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", c.Family, orDash(c.Version), orDash(c.Language), plural(c.Calls, "call"))
			}
			tw.Flush()
		}
		if len(m.Features) > 0 {
			ew.printf("\n  Legacy features\n")
			tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
			for _, f := range m.Features {
				fmt.Fprintf(tw, "    %s\t%s\tlast %s\t→ %s\n", f.Name, plural(f.Calls, "call"), f.LastSeen.Format(time.DateOnly), f.REST)
			}
			tw.Flush()
			for _, f := range m.Features {
				writeChange(ew, f.Name, f.Replacement)
			}
		}
		if len(m.Retired) > 0 {
			ew.printf("\n  Retired (no REST equivalent)\n")
			for _, x := range m.Retired {
				ew.printf("    %s: %s, last %s\n      %s\n", x.What, plural(x.Calls, "call"), x.LastSeen.Format(time.DateOnly), x.Change)
			}
		}
	}
	return ew.err
}

func writeChange(ew *errWriter, name string, rep Replacement) {
	ew.printf("\n    %s: %s\n", name, rep.Change)
	for _, e := range rep.Examples {
		ew.printf("      %s:\n", e.Language)
		for line := range strings.SplitSeq(e.Code, "\n") {
			ew.printf("        %s\n", line)
		}
	}
}

func merchantTitle(m Merchant) string {
	switch {
	case m.GoID == 0:
		return "Calls naming no merchant (touch, paymentMethodList)"
	case m.Configured:
		return fmt.Sprintf("goid %d", m.GoID)
	}
	return fmt.Sprintf("goid %d (no longer configured)", m.GoID)
}

func lastCallLine(m Merchant) string {
	if m.LastSeen == nil {
		return "no legacy call recorded"
	}
	return fmt.Sprintf("%s since %s; last legacy call %s (%s ago)", plural(m.Calls, "legacy call"),
		m.FirstSeen.Format(time.DateOnly), m.LastSeen.Format(time.RFC3339), plural(int64(*m.DaysSinceLastCall), "day"))
}

func failureText(op Operation) string {
	if op.Failures == 0 {
		return "no failures"
	}
	kinds := make([]string, 0, len(op.FailuresByKind))
	for k, n := range op.FailuresByKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	return plural(op.Failures, "failure") + " (" + strings.Join(kinds, ", ") + ")"
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

// WriteHTML writes r as a page: an index of the merchants, each linked to
// its section. html/template escapes every value, the client-supplied ones
// (versions, retired channel codes) included.
func (r *Report) WriteHTML(w io.Writer, links bool) error {
	return htmlPage.Execute(w, struct {
		*Report
		Links bool
	}{r, links})
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"title":    merchantTitle,
	"chart":    Chart,
	"lastCall": lastCallLine,
	"failures": failureText,
	"date":     dateOf,
	"time":     func(t time.Time) string { return t.Format(time.RFC3339) },
	"dash":     orDash,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>soapbridge migration report</title>
<style>body{font-family:sans-serif;margin:2em;max-width:75em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #999;padding:.3em .6em;text-align:left;vertical-align:top}
pre{background:#f4f4f4;padding:.5em;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}code{overflow-wrap:anywhere}.stale{background:#fdd;border:1px solid #b00;padding:.5em}.muted{color:#666}</style>
</head><body>
<h1>soapbridge migration report</h1>
<p>Version {{.Version}}, generated {{time .GeneratedAt}}{{with .Since}}; only what was used since {{time .}} (counts are totals since first seen){{end}}.
What each merchant still uses of the legacy SOAP interface, what replaces it in REST and what the shop changes (docs/migration.md).</p>
{{if .Stale}}<p class="stale">Stale: the store cannot be read now ({{.StaleReason}}). This is the last report made.</p>{{end}}
<h2>Merchants</h2>
{{if .Merchants}}<table><tr><th>merchant</th><th>legacy calls</th><th>last call</th><th>days since</th></tr>
{{range .Merchants}}<tr><td><a href="#goid-{{.GoID}}">{{title .}}</a></td><td>{{.Calls}}</td><td>{{with .LastSeen}}{{time .}}{{else}}never{{end}}</td><td>{{with .DaysSinceLastCall}}{{.}}{{else}}-{{end}}</td></tr>
{{end}}</table>{{else}}<p>No merchant configured and no usage recorded.</p>{{end}}
{{range .Merchants}}<section id="goid-{{.GoID}}">
<h2>{{title .}}</h2>
<p>{{lastCall .}}{{if $.Links}} · <a href="report.json?goid={{.GoID}}">JSON</a>{{end}}</p>
{{with .Days}}<p>Last 30 days (grey: legacy calls answered, red: refused): {{chart .}}</p>{{end}}
{{if .Operations}}<h3>Operations and flows</h3>
<table><tr><th>operation</th><th>calls</th><th>failures</th><th>first seen</th><th>last seen</th><th>REST</th><th>what the shop changes</th></tr>
{{range .Operations}}<tr><td>{{.Name}}{{if eq .Kind "flow"}} <span class="muted">(flow)</span>{{end}}</td><td>{{.Calls}}</td><td>{{failures .}}</td><td>{{date .FirstSeen}}</td><td>{{date .LastSeen}}</td><td><code>{{.REST}}</code></td>
<td>{{.Change}}{{range .Examples}}<div>{{.Language}}:</div><pre><code>{{.Code}}</code></pre>{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Clients}}<h3>Client libraries</h3>
<table><tr><th>family</th><th>version</th><th>language</th><th>calls</th><th>last seen</th></tr>
{{range .Clients}}<tr><td>{{.Family}}</td><td>{{dash .Version}}</td><td>{{dash .Language}}</td><td>{{.Calls}}</td><td>{{date .LastSeen}}</td></tr>
{{end}}</table>{{end}}
{{if .Features}}<h3>Legacy features</h3>
<table><tr><th>feature</th><th>calls</th><th>last seen</th><th>REST</th><th>what the shop changes</th></tr>
{{range .Features}}<tr><td>{{.Name}}</td><td>{{.Calls}}</td><td>{{date .LastSeen}}</td><td><code>{{.REST}}</code></td>
<td>{{.Change}}{{range .Examples}}<div>{{.Language}}:</div><pre><code>{{.Code}}</code></pre>{{end}}</td></tr>
{{end}}</table>{{end}}
{{if .Retired}}<h3>Retired: no REST equivalent</h3>
<table><tr><th>what</th><th>calls</th><th>last seen</th><th>what the shop changes</th></tr>
{{range .Retired}}<tr><td>{{.What}}</td><td>{{.Calls}}</td><td>{{date .LastSeen}}</td><td>{{.Change}}</td></tr>
{{end}}</table>{{end}}
</section>
{{end}}</body></html>
`))

// dateOf is t's day; "never" for the zero time (an operation only
// strangers called).
func dateOf(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.DateOnly)
}
