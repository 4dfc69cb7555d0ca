package sandbox

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/restbackend"
)

// handleHelperAct: POST /sandbox/payments/{id}/{pay|cancel|wait}.
func (g *Gateway) handleHelperAct(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var a Action
	body, _ := io.ReadAll(io.LimitReader(c.Request().Body, maxBody))
	if strings.TrimSpace(string(body)) != "" {
		if err := decodeJSON(body, &a); err != nil {
			return err
		}
	}
	a.Do = c.Param("action")
	if err := g.Act(c.Request().Context(), id, a); err != nil {
		return err
	}
	return g.handleHelperGet(c)
}

// handleHelperGet: GET /sandbox/payments/{id}, the status reply of any
// merchant's payment, without a token.
func (g *Gateway) handleHelperGet(c echo.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.payments[id]
	if p == nil {
		return errNotFound(id)
	}
	return c.JSON(http.StatusOK, p.reply())
}

type clockReply struct {
	Now string `json:"now"`
}

// handleClockAdvance: POST /sandbox/clock/advance {"seconds":N}.
func (g *Gateway) handleClockAdvance(c echo.Context) error {
	var body struct {
		Seconds json.Number `json:"seconds"`
	}
	if err := readJSON(c, &body); err != nil {
		return err
	}
	secs, err := strconv.ParseInt(body.Seconds.String(), 10, 64)
	if err != nil || secs < 0 {
		return errField(codeWrongFormat, "seconds", "seconds must be a non-negative integer")
	}
	adv, ok := g.clock.(advancer)
	if !ok {
		return refuse(http.StatusConflict, globalErr(codeInvalidRequest, "the sandbox clock cannot be advanced"))
	}
	adv.Advance(time.Duration(secs) * time.Second)
	g.RunDue() // a ManualClock already ran it; running twice is harmless
	return g.handleClockGet(c)
}

// handleClockGet: GET /sandbox/clock.
func (g *Gateway) handleClockGet(c echo.Context) error {
	return c.JSON(http.StatusOK, clockReply{Now: g.clock.Now().In(prague).Format(time.RFC3339)})
}

// handleInstruments: GET /api/eshops/eshop/{goid}/payment-instruments/{currency}.
func (g *Gateway) handleInstruments(c echo.Context) error {
	goid, err := strconv.ParseInt(c.Param("goid"), 10, 64)
	if err != nil || goid != goidOf(c) {
		return errForbidden("goid " + c.Param("goid") + " does not belong to this client")
	}
	cur := c.Param("currency")
	if !currencies[cur] {
		return errField(codeWrongFormat, "currency", "unknown currency "+strconv.Quote(cur))
	}
	return c.JSON(http.StatusOK, instrumentList(g.baseURL(c.Request()), cur))
}

// Callback is the callback block payment id was created with (a child's:
// its parent's, as the gateway copies it), as the gateway would call it:
// tests read a payment's return URL, with the bridge's token, from here,
// since the bridge itself keeps only the token's hash.
func (g *Gateway) Callback(id int64) (restbackend.Callback, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.payments[id]
	if p == nil || p.req.Callback == nil {
		return restbackend.Callback{}, false
	}
	return *p.req.Callback, true
}
