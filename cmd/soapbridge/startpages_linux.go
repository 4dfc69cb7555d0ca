package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Startup touches most of the executable's own pages (every package's
// init, the configuration's parsing, the migrations, the embedded
// sandbox's start): about 23 MB of a 43 MB binary stay resident and count
// in the process's RSS ever after, where serving a call uses a few MB of
// them. Once the bridge serves, releaseStartupPages unmaps the read-only
// pages of the executable (code, read-only data, the function tables) from
// the process. They stay in the page cache: what a call needs again is
// mapped back by a minor fault, without a disk read. Only mappings with no
// private (anonymous) page are touched: a read-only page the process wrote
// (a relocation, a debugger's breakpoint) would be reloaded from the file
// and its change lost.

// releaseStartupPages drops the resident read-only pages of the
// executable from the process and says how many bytes were resident
// before.
func releaseStartupPages() (int64, error) {
	exe, err := os.Stat("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	st, ok := exe.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("stat /proc/self/exe: no inode")
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	maps, err := releasableMappings(f, st.Ino, unix.Major(st.Dev), unix.Minor(st.Dev))
	f.Close()
	if err != nil {
		return 0, err
	}
	var resident int64
	for _, m := range maps {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return resident, fmt.Errorf("madvise %#x-%#x: %w", m.start, m.end, errno)
		}
		resident += m.rss
	}
	return resident, nil
}

// mapping is one range of /proc/self/smaps that may be released.
type mapping struct {
	start, end uintptr
	rss        int64 // bytes resident
}

// releasableMappings reads smaps and returns the mappings of the file
// (inode ino on device major:minor) that are read-only, private and hold
// no anonymous page.
func releasableMappings(r io.Reader, ino uint64, major, minor uint32) ([]mapping, error) {
	var (
		out  []mapping
		cur  mapping
		take bool // cur is the file's, read-only and private
		anon bool // cur holds a private page
	)
	flush := func() {
		if take && !anon && cur.rss > 0 {
			out = append(out, cur)
		}
	}
	dev := []byte(fmt.Sprintf("%02x:%02x", major, minor))
	inode := []byte(strconv.FormatUint(ino, 10))
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if k := f[0]; k[len(k)-1] != ':' { // a mapping's header: range perms offset dev inode [path]
			flush()
			cur, take, anon = mapping{}, false, false
			if len(f) < 5 {
				continue
			}
			lo, hi, ok := bytes.Cut(f[0], []byte("-"))
			start, err1 := strconv.ParseUint(string(lo), 16, 64)
			end, err2 := strconv.ParseUint(string(hi), 16, 64)
			if !ok || err1 != nil || err2 != nil {
				return nil, fmt.Errorf("smaps: bad range in %q", line)
			}
			cur.start, cur.end = uintptr(start), uintptr(end)
			perms := f[1]
			take = len(perms) == 4 && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' &&
				bytes.Equal(f[3], dev) && bytes.Equal(f[4], inode)
			continue
		}
		if !take || len(f) < 2 {
			continue
		}
		n, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			continue // a field that is not a size (VmFlags, THPeligible)
		}
		switch string(f[0]) {
		case "Rss:":
			cur.rss = n << 10
		case "Anonymous:", "Swap:":
			anon = anon || n > 0
		}
	}
	flush()
	return out, sc.Err()
}
