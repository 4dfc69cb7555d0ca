package main

import (
	"bytes"
	"context"
	"database/sql"
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/store"
)

// A start that fails writes no key overlap (key_overlaps): the rotation's
// record is written only after every step of the start that can fail, as
// a refused reload writes none (TestRefusedReloadWritesNoKeyOverlap). The
// admin listener's address is taken, which fails the start once the
// merchants are built; the same start on a free address records the
// rotation.
func TestFailedStartWritesNoKeyOverlap(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	db := filepath.Join(t.TempDir(), "bridge.db")
	st, err := store.Open(context.Background(), db) // a database already in use
	require.NoError(t, err)
	require.NoError(t, st.Close())
	env := map[string]string{
		"SOAPBRIDGE_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_SANDBOX_LISTEN": "127.0.0.1:0", "SOAPBRIDGE_DATABASE": db,
		"SOAPBRIDGE_SANDBOX": "true", "SOAPBRIDGE_GOID": demoGoID, "SOAPBRIDGE_CLIENT_ID": demoClientID,
		"SOAPBRIDGE_CLIENT_SECRET": demoClientSecret, "SOAPBRIDGE_SECURE_KEY": rotatedKey,
		"SOAPBRIDGE_PREVIOUS_SECURE_KEY": demoSecureKey,
		"SOAPBRIDGE_ADMIN_LISTEN":        taken.Addr().String(),
	}
	err = run(context.Background(), nil, envOf(env), &bytes.Buffer{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "admin listener")
	overlaps := func() int {
		raw, err := sql.Open("sqlite", db)
		require.NoError(t, err)
		defer raw.Close()
		var n int
		require.NoError(t, raw.QueryRow(`SELECT COUNT(*) FROM key_overlaps`).Scan(&n))
		return n
	}
	assert.Zero(t, overlaps(), "a failed start wrote a key overlap")

	env["SOAPBRIDGE_ADMIN_LISTEN"] = "127.0.0.1:0"
	b := startInProcess(t, env)
	b.log.waitLine(t, "listening", b.done)
	assert.Equal(t, 1, overlaps(), "a start that serves records its rotation")
}
