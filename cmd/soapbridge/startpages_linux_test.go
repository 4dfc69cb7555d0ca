package main

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
// The executable is the file of the mapping that holds the address given
// (an address of its code), whatever stat says of /proc/self/exe.
func TestReleasableMappingsAreTheExecutablesCleanReadOnlyOnes(t *testing.T) {
	for _, pc := range []uintptr{0x400000, 0x1000000, 0x112d000, 0x2100000} {
		got, err := releasableMappings(strings.NewReader(smapsFixture), pc)
		require.NoError(t, err)
		assert.Equal(t, []mapping{
			{start: 0x400000, end: 0x112d000, rss: 11504 << 10},
			{start: 0x112d000, end: 0x1f75000, rss: 10908 << 10},
		}, got, "pc %#x", pc)
	}
	// The file of another mapping: that file's, here a library's.
	got, err := releasableMappings(strings.NewReader(smapsFixture), 0x7f0000000010)
	require.NoError(t, err)
	assert.Equal(t, []mapping{{start: 0x7f0000000000, end: 0x7f0000100000, rss: 900 << 10}}, got)
}

// On btrfs, stat gives /proc/self/exe the device number of its subvolume
// (00:28 here) while smaps names the filesystem's (00:27): the mappings are
// found all the same, by the address of the code.
func TestReleasableMappingsOnBtrfs(t *testing.T) {
	const smaps = `55a153888000-55a15388a000 r--p 00000000 00:27 258                        /srv/soapbridge
Rss:                   8 kB
Anonymous:             0 kB
55a15388a000-55a15388f000 r-xp 00002000 00:27 258                        /srv/soapbridge
Rss:                  20 kB
Anonymous:             0 kB
55a15388f000-55a153890000 rw-p 00007000 00:27 258                        /srv/soapbridge
Rss:                   4 kB
Anonymous:             4 kB
`
	got, err := releasableMappings(strings.NewReader(smaps), 0x55a15388a100)
	require.NoError(t, err)
	assert.Equal(t, []mapping{
		{start: 0x55a153888000, end: 0x55a15388a000, rss: 8 << 10},
		{start: 0x55a15388a000, end: 0x55a15388f000, rss: 20 << 10},
	}, got)
}

func TestReleasableMappingsRefusesABadRange(t *testing.T) {
	_, err := releasableMappings(strings.NewReader("zz-01 r-xp 00000000 fe:00 4242 /x\nRss: 4 kB\n"), 0x400000)
	assert.Error(t, err)
}

// An address in no file's mapping (the stack, or none at all) names no
// executable: an error, nothing released.
func TestReleasableMappingsWithoutTheCode(t *testing.T) {
	for _, pc := range []uintptr{0x7ffc00000010, 0x10} {
		got, err := releasableMappings(strings.NewReader(smapsFixture), pc)
		assert.Error(t, err, "pc %#x", pc)
		assert.Empty(t, got)
	}
}

// exeResident is how much of this process's executable's read-only
// mappings is resident.
func exeResident(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	maps, err := releasableMappings(f, reflect.ValueOf(exeResident).Pointer())
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
