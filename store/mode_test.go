package store_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/store"
)

// The SQLite files hold order numbers, product names and the shops' URLs:
// created readable by their owner only, whatever the umask, the WAL and
// shared-memory files included.
func TestSQLiteFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the usual umask, which would give 0644
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"plain.db", "uri.db"} {
		path := filepath.Join(dir, name)
		dsn := path
		if name == "uri.db" {
			dsn = "file:" + path + "?cache=private"
		}
		s, err := store.Open(ctx, dsn)
		require.NoError(t, err)
		require.NoError(t, s.SaveSession(ctx, store.Session{PaymentID: 1, ProductName: "book"}))
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			st, err := os.Stat(f)
			require.NoError(t, err, f)
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), f)
		}
		require.NoError(t, s.Close())
	}

	// An existing file keeps the mode its operator chose.
	path := filepath.Join(dir, "shared.db")
	require.NoError(t, os.WriteFile(path, nil, 0o640))
	require.NoError(t, os.Chmod(path, 0o640))
	s, err := store.Open(ctx, path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
}
