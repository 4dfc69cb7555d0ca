package sandbox

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"

	"github.com/legacybridge/soapbridge/restbackend"
)

//go:embed assets/page.html assets/embed.js
var assets embed.FS

var pageTmpl = template.Must(template.ParseFS(assets, "assets/page.html"))

// texts are the page's words in one language.
type texts struct {
	Title, Note, Order, Card, CardNumber, Success, Declined, ThreeDS, Pay, Banks string
	Transfer, TransferNote, TransferButton, Others, Cancel, State, Back          string
	WaitingOnline, WaitingOffline, Merchant, Amount, Outcome, NotFound           string
	NotFoundNote, Failed                                                         string
	States                                                                       map[string]string
	SubStates                                                                    map[string]string
	Errors                                                                       map[int]string
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
		Merchant: "Obchodník", Amount: "Částka k úhradě", Outcome: "Výsledek testovací platby",
		NotFound: "Platba nenalezena", NotFoundNote: "Odkaz na platbu je neplatný nebo platba neexistuje. Vraťte se prosím do obchodu a zkuste to znovu.",
		Failed: "Platbu se nepodařilo provést.",
		States: map[string]string{
			restbackend.StateCreated: "Čeká na zaplacení", restbackend.StatePaymentMethodChosen: "Čeká na dokončení platby",
			restbackend.StatePaid: "Zaplaceno", restbackend.StateAuthorized: "Částka je blokována (předautorizace)",
			restbackend.StateCanceled: "Platba byla zrušena", restbackend.StateTimeouted: "Čas na zaplacení vypršel",
			restbackend.StateRefunded: "Platba byla vrácena", restbackend.StatePartiallyRefunded: "Platba byla částečně vrácena",
		},
		SubStates: map[string]string{
			subCardDeclined: "Banka platbu kartou zamítla.", subCard3DSFailed: "Ověření 3-D Secure se nezdařilo.",
			subBankRefused: "Banka platbu neautorizovala.", "_5004": "Platnost karty vypršela.", "_5005": "Chybný bezpečnostní kód karty (CVC).",
		},
		Errors: map[int]string{
			codeWrongState:     "Platba už nečeká na zaplacení.",
			codeWrongFormat:    "Tento způsob platby není u této platby k dispozici.",
			codeInvalidRequest: "Neznámá akce.",
			codeNotFound:       "Platba nenalezena.",
		},
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
		Merchant: "Merchant", Amount: "Amount to pay", Outcome: "Outcome of the test payment",
		NotFound: "Payment not found", NotFoundNote: "The payment link is not valid or the payment does not exist. Please return to the shop and try again.",
		Failed: "The payment could not be made.",
		States: map[string]string{
			restbackend.StateCreated: "Waiting for payment", restbackend.StatePaymentMethodChosen: "Waiting for the payment to complete",
			restbackend.StatePaid: "Paid", restbackend.StateAuthorized: "Amount on hold (preauthorized)",
			restbackend.StateCanceled: "The payment was canceled", restbackend.StateTimeouted: "The time to pay has run out",
			restbackend.StateRefunded: "The payment was refunded", restbackend.StatePartiallyRefunded: "The payment was partly refunded",
		},
		SubStates: map[string]string{
			subCardDeclined: "The bank declined the card payment.", subCard3DSFailed: "3-D Secure authentication failed.",
			subBankRefused: "The bank did not authorise the payment.", "_5004": "The card has expired.", "_5005": "Wrong card security code (CVC).",
		},
		Errors: map[int]string{
			codeWrongState:     "The payment is no longer waiting to be paid.",
			codeWrongFormat:    "This payment method is not available for this payment.",
			codeInvalidRequest: "Unknown action.",
			codeNotFound:       "Payment not found.",
		},
	},
}

// errorText is err in the page's language: the customer never sees the
// API's English wording or codes.
func (t texts) errorText(err error) string {
	var ae *apiError
	if errors.As(err, &ae) && len(ae.items) > 0 {
		if s, ok := t.Errors[ae.items[0].ErrorCode]; ok {
			return s
		}
	}
	return t.Failed
}

type bankButton struct{ Swift, Name string }
type otherButton struct{ Code, Label string }

type pageData struct {
	HTMLLang                         string
	T                                texts
	ID                               int64
	State, StateLabel, SubStateText  string
	Merchant                         string
	OrderNumber, Description, Amount string
	Error, Chosen                    string
	Waiting, Card, Transfer          bool
	CardNumber                       string
	Banks                            []bankButton
	Others                           []otherButton
	Action                           string
	ReturnURL                        string
	NotFound                         bool
}

// pageLang is the page language of a payment: Czech for CS and SK, English otherwise.
func pageLang(paymentLang string) string {
	if paymentLang == "CS" || paymentLang == "SK" {
		return "cs"
	}
	return "en"
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
		lang := "en"
		if al := strings.ToLower(c.Request().Header.Get("Accept-Language")); strings.HasPrefix(al, "cs") || strings.HasPrefix(al, "sk") {
			lang = "cs"
		}
		return g.renderPage(c, http.StatusNotFound, pageData{HTMLLang: lang, T: pageTexts[lang], NotFound: true})
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
			g.mu.Lock()
			errText = pageTexts[pageLang(p.req.Lang)].errorText(err)
			g.mu.Unlock()
			status = http.StatusConflict
		}
	}
	g.mu.Lock()
	d := g.pageData(p, tok)
	g.mu.Unlock()
	d.Error = errText
	return g.renderPage(c, status, d)
}

func (g *Gateway) renderPage(c echo.Context, status int, d pageData) error {
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, d); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// pageData describes p for the page; the caller holds g.mu.
func (g *Gateway) pageData(p *payment, tok string) pageData {
	lang := pageLang(p.req.Lang)
	t := pageTexts[lang]
	d := pageData{
		HTMLLang: lang, T: t, ID: p.id, State: p.state, StateLabel: t.States[p.state], SubStateText: t.SubStates[p.subState],
		OrderNumber: p.req.OrderNumber, Description: p.req.OrderDescription,
		Amount:    formatAmount(p.amount, p.req.Currency, lang),
		Waiting:   p.state == restbackend.StateCreated || p.state == restbackend.StatePaymentMethodChosen,
		Action:    "/gw/v3/" + tok,
		ReturnURL: withID(p.req.Callback.ReturnURL, p.id),
	}
	if m := g.byGoID[p.goid]; m != nil {
		d.Merchant = m.Name
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

// currencySymbols are how a Czech reader writes the accepted currencies.
var currencySymbols = map[string]string{"CZK": "Kč", "EUR": "€", "PLN": "zł", "HUF": "Ft", "GBP": "£", "USD": "US$", "RON": "lei", "BGN": "лв"}

var amountPrinters = map[string]*message.Printer{
	"cs": message.NewPrinter(language.Czech),
	"en": message.NewPrinter(language.English),
}

// formatAmount shows minor units as the customer reads them: Czech groups
// thousands with a no-break space and puts the symbol after
// ("1 234 567,89 Kč"); English puts the code first ("CZK 1,234,567.89").
func formatAmount(minor int64, currency, lang string) string {
	num := amountPrinters[lang].Sprint(number.Decimal(float64(minor)/100, number.Scale(2)))
	if lang == "cs" {
		sym := currencySymbols[currency]
		if sym == "" {
			sym = currency
		}
		return num + "\u00a0" + sym
	}
	return currency + "\u00a0" + num
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
