package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// procGroup is one measured party (the bridge, nginx with its workers, …):
// a root process and, when children is set, every descendant of it.
type procGroup struct {
	name     string
	pid      int
	children bool
}

// pids returns the group's live processes.
func (g procGroup) pids() []int {
	if !g.children {
		return []int{g.pid}
	}
	return descendants(g.pid)
}

// cpuTicks is the user+system CPU the group's processes have used.
func (g procGroup) cpuTicks() int64 {
	var sum int64
	for _, p := range g.pids() {
		t, err := procCPU(p)
		if err == nil {
			sum += t
		}
	}
	return sum
}

// peakRSS is the sum of the processes' VmHWM in bytes (for a pool of
// workers, what they held at their peaks together).
func (g procGroup) peakRSS() int64 {
	var sum int64
	for _, p := range g.pids() {
		sum += procHWM(p)
	}
	return sum
}

// resetPeak clears VmHWM (clear_refs 5, Linux ≥ 4.0), so the next reading
// is the peak of the coming scenario alone. Best effort: a kernel or
// sandbox that refuses leaves the lifetime peak.
func (g procGroup) resetPeak() {
	for _, p := range g.pids() {
		_ = os.WriteFile(filepath.Join("/proc", strconv.Itoa(p), "clear_refs"), []byte("5"), 0)
	}
}

// procCPU reads utime+stime of pid in clock ticks.
func procCPU(pid int) (int64, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// Fields after the command: state is [0], utime [11], stime [12].
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return u + s, nil
}

// statFields returns the fields of /proc/<pid>/stat after "(comm)", which
// may itself hold spaces and parentheses.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// procHWM reads VmHWM of pid in bytes (0 when unknown).
func procHWM(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// descendants returns pid and every live process below it.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(p)
		if err != nil || len(f) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(f[1]); err == nil {
			parent[p] = pp
		}
	}
	out := []int{pid}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if slices.Contains(out, pp) && !slices.Contains(out, p) {
				out = append(out, p)
				changed = true
			}
		}
	}
	return out
}
