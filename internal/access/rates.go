package access

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A merchant's rate_limit holds for the whole cluster, however many
// replicas share it, without a database round trip per call: each replica
// keeps its own token bucket and enforces a share of the merchant's rate.
// Every ShareInterval it posts, per rate-limited merchant, its demand (the
// calls per second that reached the rate check, refused ones included) to
// a board every replica reads (a table of the shared PostgreSQL), and sets
// its share from what the live replicas posted:
//
//	share = (own demand + floor) / (cluster demand + replicas × floor)
//
// The shares of the replicas sum to one, so the cluster admits the
// merchant's rate; a replica that gets most of a merchant's calls (a shop
// whose connections a balancer keeps on one replica) gets most of its
// rate. A share shrinks at once and grows by half the way at each post, so
// that replicas reading each other's demand an interval apart err on the
// side of admitting less. The floor (a twentieth of the rate per replica) keeps a share for
// a replica whose demand is zero, and splits the rate evenly when nobody
// calls. Each local bucket's burst is the same share of the merchant's
// burst, at least one call.

// ShareInterval is how often the replicas post their demand and reset
// their shares.
const ShareInterval = time.Second

// ShareLive is how long a replica's post counts: a replica that stopped
// posting (killed) leaves its share to the others after it.
const ShareLive = 3 * ShareInterval

// floorShare is the demand, as a part of the merchant's rate, each live
// replica counts as having beside its real demand.
const floorShare = 0.05

// ClusterDemand is one merchant's demand over the replicas that posted
// within ShareLive, this one included.
type ClusterDemand struct {
	Replicas int     // replicas that posted for the merchant
	Demand   float64 // their demands (calls per second) summed
}

// RateBoard posts this replica's demand of each merchant and returns the
// cluster's, as one exchange with the shared store.
type RateBoard func(ctx context.Context, demand map[int64]float64) (map[int64]ClusterDemand, error)

// sharing is the state of the rate sharing, touched by ShareRates only.
type sharing struct {
	mu      sync.Mutex
	last    time.Time // of the previous post
	started bool
}

// RateLimited lists the goids with a rate limit, in order.
func (g *Guard) RateLimited() []int64 {
	var out []int64
	for goid, p := range g.rules.Load().policies {
		if p.bucket != nil {
			out = append(out, goid)
		}
	}
	slices.Sort(out)
	return out
}

// AssumeReplicas gives every rate-limited merchant a share of 1/n: what a
// replica enforces before it has heard from the others (n the most
// replicas that may run), so that the cluster stays within each rate even
// then. A merchant a later reload adds starts at that share too; the
// shares of the others are carried over by a reload.
func (g *Guard) AssumeReplicas(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.firstShare = 1 / float64(max(1, n))
	for _, b := range g.buckets {
		b.setShare(g.firstShare)
	}
}

// ShareRates posts this replica's demand to board and sets its shares
// from the cluster's (see above). On an error the shares stay as they
// were. The demand is the calls counted since the previous post, which a
// reload does not reset: the first post after one carries on.
func (g *Guard) ShareRates(ctx context.Context, board RateBoard) error {
	g.share.mu.Lock()
	defer g.share.mu.Unlock()
	now := time.Now()
	elapsed := now.Sub(g.share.last).Seconds()
	if !g.share.started {
		g.share.started, elapsed = true, 0
	}
	posted := map[int64]float64{}
	buckets := map[int64]*bucket{}
	for goid, p := range g.rules.Load().policies {
		if p.bucket == nil {
			continue
		}
		calls := float64(p.bucket.calls.Swap(0))
		d := 0.0
		if elapsed > 0 {
			d = calls / elapsed
		}
		posted[goid], buckets[goid] = d, p.bucket
	}
	g.share.last = now
	if len(posted) == 0 {
		return nil
	}
	cluster, err := board(ctx, posted)
	if err != nil {
		return err
	}
	for goid, d := range posted {
		c, ok := cluster[goid]
		if !ok {
			continue
		}
		buckets[goid].follow(d, c)
	}
	return nil
}

// follow sets b's share from its demand d and the cluster's.
func (b *bucket) follow(d float64, c ClusterDemand) {
	b.mu.Lock()
	defer b.mu.Unlock()
	floor := floorShare * b.rate
	n := max(1, c.Replicas)
	total := max(c.Demand, d) + float64(n)*floor
	share, cur := (d+floor)/total, b.share
	if share > cur {
		// Grow by half the way at each post, shrink at once: the others'
		// demand read now is up to an interval old, and a replica that
		// sees its demand rise first would otherwise take the whole rate
		// while the others still hold theirs.
		share = cur + (share-cur)/2
	}
	b.share = min(1, max(0, share))
	b.apply()
}

// RateShare is the part of goid's rate this replica enforces now (1 for
// a merchant without a limit or before any sharing).
func (g *Guard) RateShare(goid int64) float64 {
	p := g.rules.Load().policies[goid]
	if p == nil || p.bucket == nil {
		return 1
	}
	p.bucket.mu.Lock()
	defer p.bucket.mu.Unlock()
	return p.bucket.share
}

// RateShares is RateShare of every rate-limited merchant (the metric
// soapbridge_rate_share).
func (g *Guard) RateShares() map[int64]float64 {
	out := map[int64]float64{}
	for _, goid := range g.RateLimited() {
		out[goid] = g.RateShare(goid)
	}
	return out
}

// setShare makes b enforce share of the merchant's rate and burst.
func (b *bucket) setShare(share float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.share = min(1, max(0, share))
	b.apply()
}

// apply sets the limiter to the share of the rate and of the burst (at
// least one call at once). The tokens stay: a drained bucket stays
// drained. Called with mu held.
func (b *bucket) apply() {
	b.limiter.SetLimit(rate.Limit(b.rate * b.share))
	b.limiter.SetBurst(max(1, int(math.Round(float64(b.burst)*b.share))))
}
