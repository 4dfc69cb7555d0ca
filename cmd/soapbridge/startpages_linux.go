package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"

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
//
// The executable is the file of the mapping that holds this function's
// code, as smaps names it (device and inode): not what stat says of
// /proc/self/exe, whose device differs from smaps' on btrfs (a subvolume's
// own device number against the filesystem's), where nothing would match.
func releaseStartupPages() (int64, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	maps, err := releasableMappings(f, reflect.ValueOf(releaseStartupPages).Pointer())
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

// smapsEntry is one mapping of smaps as releasableMappings reads it.
type smapsEntry struct {
	mapping
	file     string // "dev inode" as smaps writes them
	readOnly bool   // read-only and private
	anon     bool   // holds a private (anonymous or swapped) page
}

// releasableMappings reads smaps and returns the mappings of the file
// whose mapping holds the address pc (the executable's, for an address of
// its code) that are read-only, private and hold no anonymous page.
func releasableMappings(r io.Reader, pc uintptr) ([]mapping, error) {
	var all []smapsEntry
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if k := f[0]; k[len(k)-1] != ':' { // a mapping's header: range perms offset dev inode [path]
			all = append(all, smapsEntry{})
			cur := &all[len(all)-1]
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
			cur.readOnly = len(perms) == 4 && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p'
			if string(f[4]) != "0" { // a file's
				cur.file = string(f[3]) + " " + string(f[4])
			}
			continue
		}
		if len(all) == 0 || len(f) < 2 {
			continue
		}
		cur := &all[len(all)-1]
		n, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			continue // a field that is not a size (VmFlags, THPeligible)
		}
		switch string(f[0]) {
		case "Rss:":
			cur.rss = n << 10
		case "Anonymous:", "Swap:":
			cur.anon = cur.anon || n > 0
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	file := ""
	for _, e := range all {
		if e.start <= pc && pc < e.end {
			file = e.file
			break
		}
	}
	if file == "" {
		return nil, fmt.Errorf("smaps: no file mapping holds %#x", pc)
	}
	var out []mapping
	for _, e := range all {
		if e.file == file && e.readOnly && !e.anon && e.rss > 0 {
			out = append(out, e.mapping)
		}
	}
	return out, nil
}
