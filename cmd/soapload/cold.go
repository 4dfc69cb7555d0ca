package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// The cold-start scenarios (slowgw-cold-R, slowgw-cold-R-limitN, and
// with -idle-for their after-idle twins slowgw-idle-R-limitN): what
// issue 28 saw collapse. A bridge is started fresh on the slow gateway for
// each round, given one payment to read, and at once loaded by an open
// loop at R calls/s; made calls, refusals (503), calls never sent, the p99
// of the made calls, the bridge's CPU per made call and the connections
// open are what tell a degrading bridge from a collapsing one.

// idleWarmFor is how long an after-idle scenario loads its bridge warm
// before the idle time (at most -d).
const idleWarmFor = 5 * time.Second

// measureCold runs the cold scenario s once on a fresh bridge.
func (b *bench) measureCold(s scenario, groups []procGroup) sample {
	smp := sample{cpu: map[string]int64{}, peak: map[string]int64{}}
	fail := func(what string, err error) sample {
		smp.res.errs++
		smp.res.noteBad(what + ": " + err.Error())
		return smp
	}
	c, url, err := b.bridge("bridge-cold", b.slowGW, "SOAPBRIDGE_MAX_CALLS_IN_PROGRESS="+strconv.Itoa(s.coldLimit))
	if err != nil {
		return fail("starting a fresh bridge", err)
	}
	defer func() {
		c.stop()
		os.Remove(filepath.Join(b.dir, "bridge-cold.db"))
	}()
	id, err := createPayment(url, b.create)
	if err != nil {
		return fail("createPayment through the fresh bridge", err)
	}
	status, err := statusRequest(id)
	if err != nil {
		return fail("paymentStatus request", err)
	}
	t := soapTarget(url, status, "CALL_COMPLETED")
	if s.idle > 0 {
		// Warm first (what the bridge learns under load), unmeasured,
		// then nothing for s.idle: the flood after an outage or a night.
		cl := newClient(4096, b.cfg.maxConns, 10*time.Second, nil)
		openLoop(cl, t, b.cfg.rate, min(idleWarmFor, b.cfg.dur), min(max(64, b.cfg.rate*4), 20000))
		cl.CloseIdleConnections()
		time.Sleep(s.idle)
	}
	all := append(slices.Clone(groups), procGroup{name: "bridge-cold", pid: c.pid()})
	before := map[string]int64{}
	for _, g := range all {
		g.resetPeak()
		before[g.name] = g.cpuTicks()
	}
	// The bridge's open descriptors (its connections, and a few files),
	// sampled every 100 ms.
	var peakFDs atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := openFDs(c.pid()); n > peakFDs.Load() {
				peakFDs.Store(n)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	cc := &connCounter{}
	cl := newClient(4096, b.cfg.maxConns, 10*time.Second, cc)
	smp.res = openLoop(cl, t, s.rate, b.cfg.dur, min(max(64, s.rate*4), 20000))
	smp.res.peakConns = cc.peak.Load()
	close(stop)
	<-sampled
	cl.CloseIdleConnections()
	for _, g := range all {
		smp.cpu[g.name] = g.cpuTicks() - before[g.name]
		smp.peak[g.name] = g.peakRSS()
	}
	smp.serverFDs = peakFDs.Load()
	return smp
}

// openFDs counts the open file descriptors of pid (0 when unknown).
func openFDs(pid int) int64 {
	e, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return 0
	}
	return int64(len(e))
}
