package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/access"
	"github.com/legacybridge/soapbridge/store"
)

// rateSharing makes the merchants' rate limits hold for the whole cluster
// when the store is PostgreSQL (internal/access, rates.go): until it has
// heard from the others a replica enforces 1/max_replicas of each rate,
// then the share its demand gives it, posted and read every second. On
// SQLite (one process) each rate is enforced whole, as it is.
type rateSharing struct {
	post        access.RateBoard // nil: nothing shared (SQLite)
	maxReplicas int
	log         *zap.Logger
}

// startRateSharing starts posting, every access.ShareInterval, the demand
// of g, the process's Guard (a reload hands it new rules; its demand
// counts and shares carry on). It returns the sharing (adopt gives g its
// first shares at start) and the function that stops it at shutdown,
// withdrawing this replica's posts so that the others take over its
// shares at once.
func startRateSharing(ctx context.Context, cfg Config, st store.Store, g *access.Guard, log *zap.Logger) (*rateSharing, func()) {
	r := &rateSharing{maxReplicas: cfg.MaxReplicas, log: log}
	board, shared := store.RateBoardOf(st)
	if !shared {
		return r, func() {}
	}
	replica := replicaName()
	r.post = func(ctx context.Context, demand map[int64]float64) (map[int64]access.ClusterDemand, error) {
		got, err := board.PostDemand(ctx, replica, demand, access.ShareLive)
		out := make(map[int64]access.ClusterDemand, len(got))
		for g, d := range got {
			out[g] = access.ClusterDemand{Replicas: d.Replicas, Demand: d.Demand}
		}
		return out, err
	}
	log.Info("per-merchant rate limits shared by the replicas on PostgreSQL: each enforces the share its demand gives it, "+
		"posted every second", zap.String("replica", replica))

	sharingCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var done sync.WaitGroup
	var lastWarn time.Time
	done.Go(func() {
		t := time.NewTicker(access.ShareInterval)
		defer t.Stop()
		for {
			select {
			case <-sharingCtx.Done():
				return
			case <-t.C:
			}
			if err := g.ShareRates(sharingCtx, r.post); err != nil && sharingCtx.Err() == nil && time.Since(lastWarn) >= time.Minute {
				lastWarn = time.Now() // one line a minute while the store is down
				log.Warn("per-merchant rate limits: posting the demand failed; the shares stay as they were", zap.Error(err))
			}
		}
	})
	return r, func() {
		stop()
		done.Wait()
		lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := board.Leave(lctx, replica); err != nil {
			log.Warn("per-merchant rate limits: withdrawing this replica's demand failed; the others wait for it to expire", zap.Error(err))
		}
	}
}

// adopt gives g, before it serves (at start), its shares of the
// merchants' rates: 1/max_replicas, then what one post says. A reload
// does not adopt again: the shares carry on, and a merchant it adds
// starts at 1/max_replicas until the next post.
func (r *rateSharing) adopt(ctx context.Context, g *access.Guard) {
	limited := g.RateLimited()
	if r.post == nil || len(limited) == 0 {
		if len(limited) > 0 {
			r.log.Info("per-merchant rate limits enforced by this process alone (SQLite: one process)", zap.Int64s("merchants", limited))
		}
		return
	}
	g.AssumeReplicas(r.maxReplicas)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := g.ShareRates(ctx, r.post); err != nil {
		r.log.Warn("per-merchant rate limits: the replicas' demand could not be read; enforcing 1/max_replicas of each rate "+
			"until it can", zap.Int("max_replicas", r.maxReplicas), zap.Error(err))
	}
}

// replicaName names this process in the rate_demand table: the host (the
// pod's name on Kubernetes), the process id and a random part, so that a
// restarted process is a new replica.
func replicaName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}
