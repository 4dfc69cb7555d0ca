package main

// The replicas table: every replica records its release and schema
// version with a heartbeat, and refuses money-moving calls while a replica
// it may not serve beside is live on the same database (store.Replica
// Beside): where expand and contract cannot cover a change, an older
// replica must not act on a call the newer one has acted on, nor the other
// way round. docs/operations.md#upgrades.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/internal/metrics"
	"github.com/legacybridge/soapbridge/store"
)

// Heartbeats: every heartbeatEvery; a replica whose last one is older
// than heartbeatLive is taken for gone.
const (
	heartbeatEvery = 5 * time.Second
	heartbeatLive  = 3 * heartbeatEvery
)

// replicaWatch is this replica's row of the replicas table and what the
// last heartbeat found.
type replicaWatch struct {
	me    store.Replica
	board store.ReplicaBoard
	log   *zap.Logger
	// hold is why money-moving calls are refused ("" : they are not).
	hold    atomic.Pointer[string]
	against atomic.Int64 // live replicas this one may not serve beside
}

// startReplicaWatch records this replica at once (before it serves) and
// then every heartbeatEvery until the returned stop, which deletes the
// row. A store without the table (none today) watches nothing.
func startReplicaWatch(ctx context.Context, st store.Store, met *metrics.Metrics, log *zap.Logger) (*replicaWatch, func(), error) {
	board, ok := store.ReplicaBoardOf(st)
	if !ok {
		return &replicaWatch{}, func() {}, nil
	}
	schema, err := board.SchemaVersion()
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	b := metrics.ReadBuild()
	w := &replicaWatch{board: board, log: log, me: store.Replica{ID: replicaName(), Release: b.Version + " " + b.Revision,
		Schema: schema, RunsBeside: store.RunsBesideSchema, Host: host}}
	met.SetIncompatibleReplicas(w.against.Load)
	w.beat(ctx)
	log.Info("replica recorded", zap.String("replica", w.me.ID), zap.String("release", w.me.Release),
		zap.Int64("schema_version", w.me.Schema), zap.Int64("runs_beside_schema", w.me.RunsBeside))
	loop, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	var done sync.WaitGroup
	done.Go(func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-loop.Done():
				return
			case <-t.C:
				w.beat(loop)
			}
		}
	})
	return w, func() {
		stopLoop()
		done.Wait()
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := board.LeaveBoard(lctx, w.me.ID); err != nil {
			log.Warn("replicas table: this replica's row not deleted; it expires", zap.Error(err))
		}
	}, nil
}

// beat renews the heartbeat and decides the hold. A heartbeat that fails
// leaves the hold as it was: the database is down, so is every money call.
func (w *replicaWatch) beat(ctx context.Context) {
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	live, err := w.board.Heartbeat(bctx, w.me, heartbeatLive)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("replicas table: heartbeat failed", zap.Error(err))
		}
		return
	}
	var against []string
	for _, o := range live {
		if o.ID != w.me.ID && !w.me.Beside(o) {
			against = append(against, fmt.Sprintf("%s (release %s, schema version %d, runs beside %d)", o.ID, o.Release, o.Schema, o.RunsBeside))
		}
	}
	was := w.against.Swap(int64(len(against)))
	if len(against) == 0 {
		w.hold.Store(nil)
		if was > 0 {
			w.log.Info("replicas table: no replica this one may not serve beside is live any more; money-moving calls are served again")
		}
		return
	}
	why := "another release serves on the same database and the two may not run side by side: money-moving calls are refused " +
		"until one of them stops; nothing was done, retry later"
	w.hold.Store(&why)
	if was == int64(len(against)) {
		return // said when it began; the metric stays up meanwhile
	}
	w.log.Error("replicas table: a replica this one may not serve beside is live; money-moving calls are refused (docs/operations.md#upgrades)",
		zap.String("replica", w.me.ID), zap.Int64("schema_version", w.me.Schema), zap.Int64("runs_beside_schema", w.me.RunsBeside),
		zap.String("against", strings.Join(against, "; ")))
}

// moneyHold is operations.Config.MoneyHold.
func (w *replicaWatch) moneyHold() string {
	if p := w.hold.Load(); p != nil {
		return *p
	}
	return ""
}
