package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

const smapsFixture = `00400000-0112d000 r-xp 00000000 fe:00 4242                       /usr/bin/soapbridge
Size:              13492 kB
Rss:               11504 kB
Anonymous:             0 kB
Swap:                  0 kB
VmFlags: rd ex mr mw me
0112d000-01f75000 r--p 00d2d000 fe:00 4242                       /usr/bin/soapbridge
Size:              14624 kB
Rss:               10908 kB
Anonymous:             0 kB
VmFlags: rd mr mw me
01f75000-020f6000 rw-p 01b75000 fe:00 4242                       /usr/bin/soapbridge
Rss:                 840 kB
Anonymous:           612 kB
02100000-02200000 r--p 00e00000 fe:00 4242                       /usr/bin/soapbridge
Rss:                  64 kB
Anonymous:             4 kB
02200000-02300000 r--p 00f00000 fe:00 4242                       /usr/bin/soapbridge
Rss:                   0 kB
Anonymous:             0 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:00 77                         /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 900 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 fe:01 4242                       /other/device/same/inode
Rss:                 100 kB
Anonymous:             0 kB
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
Rss:                  20 kB
Anonymous:            20 kB
`

// Only the executable's own read-only mappings without a private page are
// released: not its writable data, not a read-only page it wrote, not an
// empty range, not a library, not another device's file of the same inode.
func TestReleasableMappingsAreTheExecutablesCleanReadOnlyOnes(t *testing.T) {
	got, err := releasableMappings(strings.NewReader(smapsFixture), 4242, 0xfe, 0)
	require.NoError(t, err)
	assert.Equal(t, []mapping{
		{start: 0x400000, end: 0x112d000, rss: 11504 << 10},
		{start: 0x112d000, end: 0x1f75000, rss: 10908 << 10},
	}, got)
}

func TestReleasableMappingsRefusesABadRange(t *testing.T) {
	_, err := releasableMappings(strings.NewReader("zz-01 r-xp 00000000 fe:00 4242 /x\nRss: 4 kB\n"), 4242, 0xfe, 0)
	assert.Error(t, err)
}

// exeResident is how much of this process's executable's read-only
// mappings is resident.
func exeResident(t *testing.T) int64 {
	t.Helper()
	fi, err := os.Stat("/proc/self/exe")
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	maps, err := releasableMappings(f, st.Ino, unix.Major(st.Dev), unix.Minor(st.Dev))
	require.NoError(t, err)
	var n int64
	for _, m := range maps {
		n += m.rss
	}
	return n
}

// Released, the pages leave the resident set, and the process goes on:
// what it runs next is mapped back from the page cache.
func TestReleaseStartupPagesShrinksTheResidentSet(t *testing.T) {
	before := exeResident(t)
	require.Greater(t, before, int64(1<<20), "the test binary's pages are resident")
	released, err := releaseStartupPages()
	require.NoError(t, err)
	assert.Greater(t, released, before/2)
	after := exeResident(t)
	assert.Less(t, after, before/2, "resident before %d KiB, after %d KiB", before>>10, after>>10)
	// Code and read-only data come back as used: a run of the real parser
	// and formatting (tables in read-only data) still work.
	assert.Equal(t, "12345", strconv.Itoa(12345))
	n, err := releaseStartupPages()
	require.NoError(t, err)
	assert.Less(t, n, before, "a second release finds only what ran since")
}
