package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/operations"
)

// Reload: SIGHUP, or a change of the config file when watch_config is on,
// loads the configuration again exactly as at start (same precedence, same
// messages) and applies the merchants and default_goid while the bridge
// serves: no listener closes and no call in flight is cut. The merchants,
// keys and access rules are built and validated whole, then swapped in as
// one snapshot (snapshot.go): a call is judged by the snapshot it pinned on
// arrival, from its access rules to its reply. Anything else that changed
// is named and the whole reload refused; a refused reload leaves the
// configuration in force untouched.

// reloadable are the settings a reload applies; the merchants (not a
// setting of fieldsOf) are the rest.
var reloadable = []string{"default_goid"}

// configWatchInterval is how often a watched config file is read. Polling
// the content (not inotify) sees a Kubernetes ConfigMap update, which swaps
// a symlink, and an editor's rename alike.
const configWatchInterval = 2 * time.Second

// reloader applies new configurations one at a time.
type reloader struct {
	args   []string
	getenv func(string) string
	log    *zap.Logger
	// apply puts next's merchants in force everywhere, with next itself
	// (current returns it from then on), or refuses and changes nothing.
	apply func(cur, next Config) error
	// counted is told of each outcome (metrics).
	counted func(ok bool)
	// applied is told of the merchants a reload in force added or
	// changed (their credentials are checked at the gateway).
	applied func(fresh []Merchant)

	// current is the configuration in force: the snapshot's, never a
	// copy, so that it changes only when the snapshot does (a refused
	// reload leaves it).
	current func() Config

	mu sync.Mutex
	// seen is the content of the config file the last reload read (or the
	// start did): the watcher reloads when the file differs from it.
	seen [sha256.Size]byte
}

// reload loads the configuration and applies it; why says what asked.
func (r *reloader) reload(why string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.current()
	r.seen = fileSum(cur.ConfigFile)
	next, err := loadConfig(r.args, r.getenv)
	if err == nil {
		err = fixedSettingsChanged(cur, next)
	}
	if err == nil {
		err = r.apply(cur, next)
	}
	if r.counted != nil {
		r.counted(err == nil)
	}
	if err != nil {
		r.log.Error("configuration reload refused; the configuration in force stays", zap.String("trigger", why),
			zap.Strings("problems", strings.Split(err.Error(), "\n")))
		return err
	}
	added, removed, changed := merchantChanges(cur.Merchants, next.Merchants)
	if fresh := merchantsOf(next.Merchants, append(added, changed...)); r.applied != nil && len(fresh) > 0 {
		r.applied(fresh)
	}
	r.log.Info("configuration reloaded", zap.String("trigger", why), zap.Int64s("merchants", goidsOf(next.Merchants)),
		zap.Int64s("added", added), zap.Int64s("removed", removed), zap.Int64s("changed", changed))
	return nil
}

// fixedSettingsChanged names the settings of next that differ from cur but
// cannot change while the bridge runs (listen addresses, the database…).
func fixedSettingsChanged(cur, next Config) error {
	a, b := fieldsOf(&cur), fieldsOf(&next)
	var keys []string
	for i := range a {
		if !slices.Contains(reloadable, a[i].key) &&
			!reflect.DeepEqual(reflect.ValueOf(a[i].ptr).Elem().Interface(), reflect.ValueOf(b[i].ptr).Elem().Interface()) {
			keys = append(keys, a[i].key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return fmt.Errorf("%s cannot change while the bridge runs: restart it to apply; a reload applies the merchants and %s only%s",
		strings.Join(keys, ", "), strings.Join(reloadable, ", "), names(keys...))
}

// merchantChanges lists the goids added, removed and changed from cur to
// next.
func merchantChanges(cur, next []Merchant) (added, removed, changed []int64) {
	old := map[int64]Merchant{}
	for _, m := range cur {
		old[m.GoID] = m
	}
	for _, m := range next {
		o, ok := old[m.GoID]
		switch {
		case !ok:
			added = append(added, m.GoID)
		case !reflect.DeepEqual(o, m):
			changed = append(changed, m.GoID)
		}
		delete(old, m.GoID)
	}
	for g := range old {
		removed = append(removed, g)
	}
	return added, removed, changed
}

// merchantsOf are the merchants of ms whose goid is in goids.
func merchantsOf(ms []Merchant, goids []int64) []Merchant {
	var out []Merchant
	for _, m := range ms {
		if slices.Contains(goids, m.GoID) {
			out = append(out, m)
		}
	}
	return out
}

// coreProblems turns the core's problems into errors naming the settings,
// as at start.
func coreProblems(cfg Config, ps []operations.Problem) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = errors.New(merchantMessage(cfg, p) + names(p.Key))
	}
	return errors.Join(errs...)
}

// watch reloads whenever the config file's content differs from what the
// last reload (or the start) read, until ctx ends.
func (r *reloader) watch(ctx context.Context) {
	r.mu.Lock()
	file := r.current().ConfigFile
	r.seen = fileSum(file)
	r.mu.Unlock()
	r.log.Info("watching the config file: a change reloads it", zap.String("file", file), zap.Duration("every", configWatchInterval))
	t := time.NewTicker(configWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := fileSum(file)
		r.mu.Lock()
		changed := now != r.seen && now != [sha256.Size]byte{}
		r.mu.Unlock()
		if changed {
			r.reload("config file changed") //nolint:errcheck // logged and counted
		}
	}
}

// fileSum is the SHA-256 of file's content; zero when it cannot be read
// (being replaced: a later read sees the new file).
func fileSum(file string) [sha256.Size]byte {
	b, err := os.ReadFile(file)
	if err != nil {
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(b)
}
