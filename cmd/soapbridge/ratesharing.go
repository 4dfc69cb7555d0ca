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

// shareRates makes the merchants' rate limits hold for the whole cluster
// when the store is PostgreSQL (internal/access, rates.go): until it has
// heard from the others a replica enforces 1/max_replicas of each rate,
// then the share its demand gives it, posted and read every second. On
// SQLite (one process) each rate is enforced whole, as it is. It returns
// the function that stops the sharing at shutdown (and withdraws this
// replica's posts, so that the others take over its shares at once), or
// nil when there is nothing to share.
func shareRates(ctx context.Context, cfg Config, g *access.Guard, st store.Store, log *zap.Logger) func() {
	limited := g.RateLimited()
	board, shared := store.RateBoardOf(st)
	switch {
	case len(limited) == 0:
		return nil
	case !shared:
		log.Info("per-merchant rate limits enforced by this process alone (SQLite: one process)", zap.Int64s("merchants", limited))
		return nil
	}
	replica := replicaName()
	post := func(ctx context.Context, demand map[int64]float64) (map[int64]access.ClusterDemand, error) {
		got, err := board.PostDemand(ctx, replica, demand, access.ShareLive)
		out := make(map[int64]access.ClusterDemand, len(got))
		for g, d := range got {
			out[g] = access.ClusterDemand{Replicas: d.Replicas, Demand: d.Demand}
		}
		return out, err
	}
	g.AssumeReplicas(cfg.MaxReplicas)
	first, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := g.ShareRates(first, post)
	cancel()
	if err != nil {
		log.Warn("per-merchant rate limits: the replicas' demand could not be read; enforcing 1/max_replicas of each rate "+
			"until it can", zap.Int("max_replicas", cfg.MaxReplicas), zap.Error(err))
	}
	log.Info("per-merchant rate limits shared by the replicas on PostgreSQL: each enforces the share its demand gives it, "+
		"posted every second", zap.String("replica", replica), zap.Int64s("merchants", limited))

	sharingCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var done sync.WaitGroup
	var mu sync.Mutex
	var lastWarn time.Time
	done.Go(func() {
		g.RunRateSharing(sharingCtx, post, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if time.Since(lastWarn) >= time.Minute { // one line a minute while the store is down
				lastWarn = time.Now()
				log.Warn("per-merchant rate limits: posting the demand failed; the shares stay as they were", zap.Error(err))
			}
		})
	})
	return func() {
		stop()
		done.Wait()
		lctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := board.Leave(lctx, replica); err != nil {
			log.Warn("per-merchant rate limits: withdrawing this replica's demand failed; the others wait for it to expire", zap.Error(err))
		}
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
