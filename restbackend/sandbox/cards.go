package sandbox

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/restbackend"
)

// cardView is the reply of GET /payments/cards/{card_id}; the card id is
// the card token the status reply showed.
type cardView struct {
	CardID          string `json:"card_id"`
	CardToken       string `json:"card_token"`
	Status          string `json:"status"`
	MaskedPAN       string `json:"masked_pan"`
	ExpirationMonth string `json:"expiration_month"`
	ExpirationYear  string `json:"expiration_year"`
	Brand           string `json:"brand"`
	IssuerCountry   string `json:"card_issuer_country"`
	IssuerBank      string `json:"card_issuer_bank"`
	Fingerprint     string `json:"card_fingerprint"`
}

// ownedCard finds the caller's stored card; the caller holds g.mu.
func (g *Gateway) ownedCard(c echo.Context) (string, cardRecord, error) {
	tok := c.Param("card")
	rec, ok := g.cards[tok]
	if !ok {
		return "", rec, refuse(http.StatusNotFound, globalErr(codeNotFound, "card "+strconv.Quote(tok)+" not found"))
	}
	if rec.goid != goidOf(c) {
		return "", rec, errForbidden("the card belongs to another merchant")
	}
	return tok, rec, nil
}

func (g *Gateway) handleCardGet(c echo.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	tok, rec, err := g.ownedCard(c)
	if err != nil {
		return err
	}
	fp := sha256.Sum256([]byte("fingerprint:" + rec.pan))
	exp := rec.card.CardExpiration
	return c.JSON(http.StatusOK, cardView{CardID: tok, CardToken: tok, Status: "ACTIVE", MaskedPAN: rec.card.CardNumber,
		ExpirationMonth: exp[2:], ExpirationYear: "20" + exp[:2], Brand: rec.card.CardBrand,
		IssuerCountry: rec.card.CardIssuerCountry, IssuerBank: rec.card.CardIssuerBank, Fingerprint: hex.EncodeToString(fp[:16])})
}

// handleCardDelete forgets a stored card: 204; the token no longer pays.
func (g *Gateway) handleCardDelete(c echo.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	tok, _, err := g.ownedCard(c)
	if err != nil {
		return err
	}
	delete(g.cards, tok)
	g.dirty = true
	return c.NoContent(http.StatusNoContent)
}

// instrumentsAll is the reply of the all-currencies instruments call: the
// list for each accepted currency, keyed by currency code.
func (g *Gateway) handleInstrumentsAll(c echo.Context) error {
	goid, err := strconv.ParseInt(c.Param("goid"), 10, 64)
	if err != nil || goid != goidOf(c) {
		return errForbidden("goid " + c.Param("goid") + " does not belong to this client")
	}
	out := map[string]*restbackend.InstrumentList{}
	for cur := range currencies {
		out[cur] = instrumentList(g.baseURL(c.Request()), cur)
	}
	return c.JSON(http.StatusOK, out)
}

// eetCode is the fiscal identification of an EET sale: FIK from the tax
// office, BKP and PKP from the seller's signature. The sandbox derives them
// from the payment id, in the real codes' formats.
type eetCode struct {
	FIK string `json:"fik"`
	BKP string `json:"bkp"`
	PKP string `json:"pkp"`
}

func eetCodeOf(id int64) *eetCode {
	h := sha256.Sum256([]byte(fmt.Sprintf("sandbox-eet:%d", id)))
	x := hex.EncodeToString(h[:])
	pkp := make([]byte, 0, 256)
	for i := 0; len(pkp) < 256; i++ {
		b := sha256.Sum256(append(h[:], byte(i)))
		pkp = append(pkp, b[:]...)
	}
	return &eetCode{
		FIK: fmt.Sprintf("%s-%s-%s-%s-%s-ff", x[0:8], x[8:12], x[12:16], x[16:20], x[20:32]),
		BKP: fmt.Sprintf("%s-%s-%s-%s-%s", x[24:32], x[32:40], x[40:48], x[48:56], x[56:64]),
		PKP: base64.StdEncoding.EncodeToString(pkp[:256]),
	}
}

// paymentReply is the REST payment reply: restbackend's Payment plus what
// only the sandbox's side shows (the EET fiscal codes of a paid EET sale).
type paymentReply struct {
	*restbackend.Payment
	EETCode *eetCode `json:"eet_code,omitempty"`
}

// reply is p's REST reply; the caller holds g.mu.
func (p *payment) reply() paymentReply {
	r := paymentReply{Payment: p.view()}
	if p.req.EET != nil && len(p.moves) > 0 {
		r.EETCode = eetCodeOf(p.id)
	}
	return r
}
