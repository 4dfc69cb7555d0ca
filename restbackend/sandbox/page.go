package sandbox

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/restbackend"
)

//go:embed assets/page.html assets/embed.js
var assets embed.FS

var pageTmpl = template.Must(template.ParseFS(assets, "assets/page.html"))

// texts are the page's words in one language.
type texts struct {
	Title, Note, Order, Card, CardNumber, Success, Declined, ThreeDS, Pay, Banks string
	Transfer, TransferNote, TransferButton, Others, Cancel, State, Back          string
	WaitingOnline, WaitingOffline                                                string
}

var pageTexts = map[string]texts{
	"cs": {
		Title: "Platební brána", Note: "Testovací prostředí (sandbox): žádné peníze se nepřevádějí.",
		Order: "Objednávka", Card: "Platba kartou", CardNumber: "Testovací karta",
		Success: "Platba proběhne úspěšně", Declined: "Banka platbu zamítne", ThreeDS: "Ověření 3-D Secure selže",
		Pay: "Zaplatit", Banks: "Platební tlačítko banky", Transfer: "Běžný bankovní převod",
		TransferNote:   "Platba počká na příchozí převod z vaší banky.",
		TransferButton: "Zaplatím převodem", Others: "Další způsoby platby",
		Cancel: "Zrušit platbu a vrátit se do obchodu", State: "Stav platby", Back: "Zpět do obchodu",
		WaitingOnline: "Platba čeká na dokončení zvolenou metodou.", WaitingOffline: "Platba čeká na příchozí převod.",
	},
	"en": {
		Title: "Payment gateway", Note: "Sandbox test environment: no money is moved.",
		Order: "Order", Card: "Pay by card", CardNumber: "Test card",
		Success: "The payment succeeds", Declined: "The bank declines the payment", ThreeDS: "3-D Secure authentication fails",
		Pay: "Pay", Banks: "Bank payment button", Transfer: "Ordinary bank transfer",
		TransferNote:   "The payment waits for the transfer from your bank.",
		TransferButton: "I will pay by transfer", Others: "Other payment methods",
		Cancel: "Cancel the payment and return to the shop", State: "Payment state", Back: "Back to the shop",
		WaitingOnline: "The payment waits for the chosen method to finish.", WaitingOffline: "The payment waits for the incoming transfer.",
	},
}

type bankButton struct{ Swift, Name string }
type otherButton struct{ Code, Label string }

type pageData struct {
	HTMLLang                         string
	T                                texts
	ID                               int64
	State                            string
	OrderNumber, Description, Amount string
	Error, Chosen                    string
	Waiting, Card, Transfer          bool
	CardNumber                       string
	Banks                            []bankButton
	Others                           []otherButton
	Action                           string
	ReturnURL                        string
}

// handlePage serves gw_url: GET or POST (the merchant's form posts to it)
// shows the page; a POST carrying sandbox_action performs the customer's
// choice and sends the browser to return_url?id=….
func (g *Gateway) handlePage(c echo.Context) error {
	tok := c.Param("token")
	g.mu.Lock()
	p := g.byGwToken[tok]
	g.mu.Unlock()
	if p == nil {
		return c.HTML(http.StatusNotFound, "<!DOCTYPE html><title>Not found</title><p>Unknown payment / Neznámá platba.</p>")
	}
	status, errText := http.StatusOK, ""
	if c.Request().Method == http.MethodPost {
		if do := c.FormValue("sandbox_action"); do != "" {
			a := Action{Do: do, Outcome: c.FormValue("outcome"), Instrument: c.FormValue("instrument"), Swift: c.FormValue("swift")}
			err := g.Act(c.Request().Context(), p.id, a)
			if err == nil {
				g.mu.Lock()
				ret := withID(p.req.Callback.ReturnURL, p.id)
				g.mu.Unlock()
				return c.Redirect(http.StatusSeeOther, ret)
			}
			status, errText = http.StatusConflict, err.Error()
		}
	}
	g.mu.Lock()
	d := g.pageData(p, tok)
	g.mu.Unlock()
	d.Error = errText
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, d); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// pageData describes p for the page; the caller holds g.mu.
func (g *Gateway) pageData(p *payment, tok string) pageData {
	lang := "en"
	if p.req.Lang == "CS" || p.req.Lang == "SK" {
		lang = "cs"
	}
	d := pageData{
		HTMLLang: lang, T: pageTexts[lang], ID: p.id, State: p.state,
		OrderNumber: p.req.OrderNumber, Description: p.req.OrderDescription,
		Amount:    formatAmount(p.amount, p.req.Currency, lang),
		Waiting:   p.state == restbackend.StateCreated || p.state == restbackend.StatePaymentMethodChosen,
		Action:    "/gw/v3/" + tok,
		ReturnURL: withID(p.req.Callback.ReturnURL, p.id),
	}
	switch p.subState {
	case subOnlineWaiting:
		d.Chosen = d.T.WaitingOnline
	case subOfflineWaiting:
		d.Chosen = d.T.WaitingOffline
	}
	for _, in := range instrumentsFor(p.req.Currency) {
		if g.checkInstrument(p, in.code, "") != nil {
			continue
		}
		switch in.code {
		case restbackend.InstrumentPaymentCard:
			d.Card = true
			pan := defaultCard
			if p.req.Payer != nil && p.req.Payer.AllowedCardToken != "" {
				pan = g.cards[p.req.Payer.AllowedCardToken].pan
			}
			d.CardNumber = testCard(pan).CardNumber
		case restbackend.InstrumentBankAccount:
			d.Transfer = true
			for _, s := range swiftsFor(p.req.Currency) {
				if s.online && swiftAllowed(p, s.swift) {
					d.Banks = append(d.Banks, bankButton{Swift: s.swift, Name: s.name})
				}
			}
		default:
			label := in.en
			if lang == "cs" {
				label = in.cs
			}
			d.Others = append(d.Others, otherButton{Code: in.code, Label: label})
		}
	}
	return d
}

// formatAmount shows minor units as the customer reads them.
func formatAmount(minor int64, currency, lang string) string {
	s := fmt.Sprintf("%d.%02d", minor/100, minor%100)
	if lang == "cs" {
		s = strings.Replace(s, ".", ",", 1)
	}
	return s + "\u00a0" + currency
}

func (g *Gateway) handleEmbedJS(c echo.Context) error {
	js, err := assets.ReadFile("assets/embed.js")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.Blob(http.StatusOK, "application/javascript; charset=utf-8", js)
}

// handleImage draws the logo of an instrument or bank as a labelled SVG.
func (g *Gateway) handleImage(c echo.Context) error {
	name, ok := strings.CutSuffix(c.Param("file"), ".svg")
	scale := 1
	if n, big := strings.CutSuffix(name, "@2x"); big {
		name, scale = n, 2
	}
	known := instrumentNames[name]
	if _, isBank := findSwift(name); isBank {
		known = true
	}
	if !ok || !known {
		return echo.ErrNotFound
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 120 40">`, 120*scale, 40*scale)
	buf.WriteString(`<rect width="120" height="40" rx="6" fill="#1b6fcb"/>`)
	buf.WriteString(`<text x="60" y="25" font-family="sans-serif" font-size="11" fill="#fff" text-anchor="middle">`)
	template.HTMLEscape(&buf, []byte(name))
	buf.WriteString(`</text></svg>`)
	c.Response().Header().Set("Cache-Control", "public, max-age=3600")
	return c.Blob(http.StatusOK, "image/svg+xml", buf.Bytes())
}
