package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/internal/testenv"
	"github.com/legacybridge/soapbridge/restbackend"
)

// browserDir holds the Node harness (package.json, lib.mjs, sandbox_page.mjs).
var browserDir = filepath.Join("..", "..", "testdata", "browser")

// needBrowser skips (fails under CI) when node, Chromium or playwright-core
// is missing, and returns node's path.
func needBrowser(t *testing.T) string {
	t.Helper()
	node := testenv.LookPath(t, "node", "apt-get install -y nodejs npm")
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		testenv.Missing(t, "chromium (/usr/bin/chromium)", "apt-get install -y chromium")
	}
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "playwright-core", "package.json")); err != nil {
		testenv.Missing(t, "playwright-core in testdata/browser/node_modules", "cd testdata/browser && npm ci")
	}
	return node
}

// artifactDir is where screenshots go: $TEST_ARTIFACTS/<name> or
// $SOAPBRIDGE_ARTIFACTS/<name>, else a temporary directory.
func artifactDir(t *testing.T, name string) string {
	dir := t.TempDir()
	root := os.Getenv("TEST_ARTIFACTS")
	if root == "" {
		root = os.Getenv("SOAPBRIDGE_ARTIFACTS")
	}
	if root != "" {
		dir = filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

type pageRun struct {
	Final   string `json:"final"`
	Body    string `json:"body"`
	Gateway struct {
		Title, Heading, Card string
	} `json:"gateway"`
}

func runPage(t *testing.T, node, mode, url, returnPrefix, shots string) pageRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sandbox_page.mjs", mode, url, returnPrefix, shots)
	cmd.Dir = browserDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node sandbox_page.mjs %s: %s", mode, stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r pageRun
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r), string(out))
	return r
}

// merchantSite is the shop: a return page and a page with the inline form.
func merchantSite(t *testing.T, sandboxURL string, gwURLs *sync.Map) *httptest.Server {
	inline := template.Must(template.New("shop").Parse(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>Shop</title></head>
<body><h1>Demo shop</h1><p>Order 42</p>
<form action="{{.GW}}" method="post" id="gopay-payment-button">
<button name="pay" type="submit">Pay</button>
<script type="text/javascript" src="{{.Embed}}"></script>
</form></body></html>`))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /return", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><title>Back in the shop</title><h1>Back in the shop</h1><p id=ret>shop=%s id=%s</p>",
			template.HTMLEscapeString(r.URL.Query().Get("shop")), template.HTMLEscapeString(r.URL.Query().Get("id")))
	})
	mux.HandleFunc("GET /shop/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		gw, _ := gwURLs.Load(r.PathValue("name"))
		_ = inline.Execute(w, map[string]any{"GW": gw, "Embed": sandboxURL + "/gp-gw/js/embed.js"})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestPaymentPageInBrowser(t *testing.T) {
	if raceOn {
		t.Skip("runs in the pass without -race; TestPageActions covers the handlers under -race")
	}
	node := needBrowser(t)
	shots := artifactDir(t, "sandbox-page")
	e := newEnv(t)
	gwURLs := &sync.Map{} // name → gw_url of the inline form
	shop := merchantSite(t, e.srv.URL, gwURLs)
	returnURL := shop.URL + "/return?shop=demo"
	create := func(lang string) *restbackend.Payment {
		return e.create(func(r *restbackend.PaymentRequest) {
			r.Lang = lang
			r.Callback.ReturnURL = returnURL
			r.OrderNumber = "OBJ-<42>"
		})
	}

	t.Run("card success", func(t *testing.T) {
		e := e.with(t)
		p := create("CS")
		r := runPage(t, node, "card-success", p.GwURL, shop.URL+"/return", shots)
		assert.Equal(t, returnURL+"&id="+itoa(p.ID), r.Final)
		assert.Contains(t, r.Body, "id="+itoa(p.ID))
		assert.Equal(t, "Platba kartou", r.Gateway.Card)
		assert.Equal(t, "Platební brána – OBJ-<42>", r.Gateway.Title, "order number shown as text")
		s := e.status(p.ID)
		assert.Equal(t, restbackend.StatePaid, s.State)
		assert.Equal(t, "PAYMENT_CARD", s.PaymentInstrument)
	})
	t.Run("card declined", func(t *testing.T) {
		e := e.with(t)
		p := create("EN")
		r := runPage(t, node, "card-declined", p.GwURL, shop.URL+"/return", shots)
		assert.Equal(t, returnURL+"&id="+itoa(p.ID), r.Final)
		assert.Equal(t, "Pay by card", r.Gateway.Card)
		s := e.status(p.ID)
		assert.Equal(t, restbackend.StateCanceled, s.State)
		assert.Equal(t, "_5006", s.SubState)
	})
	t.Run("cancel", func(t *testing.T) {
		e := e.with(t)
		p := create("EN")
		r := runPage(t, node, "cancel", p.GwURL, shop.URL+"/return", shots)
		assert.Equal(t, returnURL+"&id="+itoa(p.ID), r.Final)
		assert.Equal(t, restbackend.StateCanceled, e.status(p.ID).State)
	})
	t.Run("inline overlay", func(t *testing.T) {
		e := e.with(t)
		p := create("CS")
		gwURLs.Store("inline", p.GwURL)
		r := runPage(t, node, "inline", shop.URL+"/shop/inline", shop.URL+"/return", shots)
		assert.Equal(t, returnURL+"&id="+itoa(p.ID), r.Final, "the whole window returns, not the overlay")
		assert.Equal(t, "Platba kartou", r.Gateway.Card)
		assert.Equal(t, restbackend.StatePaid, e.status(p.ID).State)
	})
}

type a11yRun struct {
	Name, Lang, Title, Final string
	Tabs, ShopTabs, PayTabs  int
	Overflow, FocusVisible   bool
	Violations               []struct {
		ID, Impact string
		Nodes      []string
	}
	Dialog struct {
		Role, Modal, Label, FrameTitle, CloseLabel, Focused string
	}
	EscapedFocus  []string
	AfterEscape   string
	ClosedFromTop bool
}

func runA11y(t *testing.T, node string, job map[string]any) a11yRun {
	t.Helper()
	js, err := json.Marshal(job)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "a11y.mjs", string(js))
	cmd.Dir = browserDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node a11y.mjs: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var r a11yRun
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r), string(out))
	return r
}

// The payment page and the overlay, in Czech and English, on a 375 px phone
// and a desktop, used with the keyboard only; axe-core finds no serious or
// critical violation. Screenshots go to the artifacts directory.
func TestPaymentPageAccessibility(t *testing.T) {
	if raceOn {
		t.Skip("runs in the pass without -race")
	}
	node := needBrowser(t)
	if _, err := os.Stat(filepath.Join(browserDir, "node_modules", "axe-core", "axe.min.js")); err != nil {
		testenv.Missing(t, "axe-core in testdata/browser/node_modules", "cd testdata/browser && npm ci")
	}
	shots := artifactDir(t, "sandbox-a11y")
	e := newEnv(t, func(o *Options) { o.Merchants[0].Name = "Knihkupectví U Čtenáře" })
	mux := http.NewServeMux()
	shopPage := template.Must(template.New("shop").Parse(`<!DOCTYPE html><html lang="{{.Lang}}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{{.Title}}</title></head>
<body><main><h1>{{.Title}}</h1><p><a href="#terms">{{.Terms}}</a></p>
<form action="{{.GW}}" method="post"><button name="pay" type="submit">{{.Pay}}</button>
<script src="{{.Embed}}"></script></form><p><a href="#help">{{.Help}}</a></p></main></body></html>`))
	gw := sync.Map{}
	mux.HandleFunc("GET /shop/{lang}", func(w http.ResponseWriter, r *http.Request) {
		lang := r.PathValue("lang")
		u, _ := gw.Load(lang)
		words := map[string][4]string{"cs": {"Pokladna", "Obchodní podmínky", "Zaplatit", "Nápověda"}, "en": {"Checkout", "Terms", "Pay", "Help"}}[lang]
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = shopPage.Execute(w, map[string]any{"Lang": lang, "Title": words[0], "Terms": words[1], "Pay": words[2], "Help": words[3],
			"GW": u, "Embed": e.srv.URL + "/gp-gw/js/embed.js"})
	})
	mux.HandleFunc("GET /return", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html lang="en"><title>Back</title><main><h1>Back in the shop</h1></main></html>`)
	})
	shop := httptest.NewServer(mux)
	defer shop.Close()

	want := map[string]struct{ title, close, state string }{
		"cs": {"Platební brána", "Zavřít platební bránu", "Zaplaceno"},
		"en": {"Payment gateway", "Close the payment gateway", "Paid"},
	}
	for _, lang := range []string{"cs", "en"} {
		for _, width := range []int{375, 1280} {
			name := fmt.Sprintf("%s-%d", lang, width)
			t.Run("page "+name, func(t *testing.T) {
				e := e.with(t)
				p := e.create(func(r *restbackend.PaymentRequest) {
					r.Lang = strings.ToUpper(lang)
					r.Amount = 123456789
					r.Callback.ReturnURL = shop.URL + "/return"
				})
				r := runA11y(t, node, map[string]any{"mode": "page", "url": p.GwURL, "return": shop.URL + "/return", "width": width, "shots": shots, "name": name})
				assert.Empty(t, r.Violations, "axe-core: no serious or critical violation")
				assert.Equal(t, lang, r.Lang)
				assert.False(t, r.Overflow, "no horizontal scrolling at %d px", width)
				assert.True(t, r.FocusVisible, "the focused button shows its focus")
				assert.Equal(t, shop.URL+"/return?id="+itoa(p.ID), r.Final)
				assert.Equal(t, restbackend.StatePaid, e.status(p.ID).State, "paid with the keyboard only")
				_, body := e.page(http.MethodGet, p.GwURL, nil)
				assert.Contains(t, body, want[lang].state)
			})
			t.Run("overlay "+name, func(t *testing.T) {
				e := e.with(t)
				p := e.create(func(r *restbackend.PaymentRequest) {
					r.Lang = strings.ToUpper(lang)
					r.Callback.ReturnURL = shop.URL + "/return"
				})
				gw.Store(lang, p.GwURL)
				r := runA11y(t, node, map[string]any{"mode": "overlay", "url": shop.URL + "/shop/" + lang, "return": shop.URL + "/return", "width": width, "shots": shots, "name": name})
				assert.Empty(t, r.Violations, "axe-core on the shop with the dialog open")
				assert.Equal(t, "dialog", r.Dialog.Role)
				assert.Equal(t, "true", r.Dialog.Modal)
				assert.Equal(t, want[lang].title, r.Dialog.Label)
				assert.Equal(t, want[lang].title, r.Dialog.FrameTitle, "iframe titled in the page's language")
				assert.Equal(t, want[lang].close, r.Dialog.CloseLabel)
				assert.Contains(t, []string{"gopay-gateway-close", "gopay-gateway-iframe"}, r.Dialog.Focused, "focus moves into the dialog")
				assert.Empty(t, r.EscapedFocus, "Tab never leaves the dialog")
				assert.Equal(t, "pay", r.AfterEscape, "Escape closes and gives focus back")
				assert.True(t, r.ClosedFromTop)
				assert.Equal(t, shop.URL+"/return?id="+itoa(p.ID), r.Final)
				assert.Equal(t, restbackend.StatePaid, e.status(p.ID).State)
			})
		}
	}
}
