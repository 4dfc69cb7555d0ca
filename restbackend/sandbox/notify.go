package sandbox

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/backoff"
)

// maxNotifyAttempts bounds the calls of one notification: with the default
// backoff (30 s doubling to 2 h) the last one is about 24 h after the first.
const maxNotifyAttempts = 20

// notifyBackoff is the gateway's documented retry rhythm, without jitter.
var notifyBackoff = backoff.Policy{Base: 30 * time.Second, Max: 2 * time.Hour}

func defaultBackoff(attempt int) time.Duration { return notifyBackoff.Delay(attempt) }

// withID appends id=<id> to rawURL, keeping its query as it is.
func withID(rawURL string, id int64) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "id=" + strconv.FormatInt(id, 10)
	return u.String()
}

// notifyLocked announces a change of p to its notification URL, retrying in
// the background until the merchant answers 200. Caller holds g.mu.
func (g *Gateway) notifyLocked(p *payment) {
	if g.closed || p.req.Callback == nil || p.req.Callback.NotificationURL == "" {
		return
	}
	target := withID(p.req.Callback.NotificationURL, p.id)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.deliver(target, p.id)
	}()
}

func (g *Gateway) deliver(target string, id int64) {
	for attempt := 1; ; attempt++ {
		status, err := g.call(target)
		if err == nil && status == http.StatusOK {
			return
		}
		// A *url.Error quotes the URL, whose query holds the bridge's
		// callback token: log the cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		g.log.Info("sandbox: notification not accepted", zap.Int64("payment", id), zap.Int("attempt", attempt),
			zap.Int("status", status), zap.Error(err))
		if attempt >= maxNotifyAttempts {
			g.log.Warn("sandbox: notification given up", zap.Int64("payment", id))
			return
		}
		t := time.NewTimer(g.opts.NotifyBackoff(attempt))
		select {
		case <-g.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (g *Gateway) call(target string) (int, error) {
	ctx, cancel := context.WithTimeout(g.ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "soapbridge-sandbox-gateway")
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}
