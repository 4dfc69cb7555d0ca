package restbackend

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadReplyAsReadAll: readReply reads what io.ReadAll(io.LimitReader)
// reads, or fails with the same error, whatever length the reply declares (right,
// short, long, none) and however its reader hands the bytes over.
func TestReadReplyAsReadAll(t *testing.T) {
	const limit = 1000
	readers := map[string]func([]byte) io.Reader{
		"plain":    func(b []byte) io.Reader { return bytes.NewReader(b) },
		"one byte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half":     func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"data+EOF": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"timeout":  func(b []byte) io.Reader { return iotest.TimeoutReader(bytes.NewReader(b)) },
		"error end": func(b []byte) io.Reader {
			return io.MultiReader(bytes.NewReader(b), iotest.ErrReader(errors.New("reset")))
		},
	}
	for _, n := range []int{0, 1, 511, 512, 513, 878, 999, 1000, 1001, 1002, 3000} {
		body := bytes.Repeat([]byte("x"), n)
		for _, declared := range []int64{-1, 0, int64(n), int64(n) - 1, int64(n) + 1, limit, limit + 1} {
			for name, mk := range readers {
				want, wantErr := io.ReadAll(io.LimitReader(mk(body), limit+1))
				got, err := readReply(mk(body), declared, limit)
				// On an error the bytes read are dropped (exchange): only the error counts.
				if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) || (err == nil && !bytes.Equal(got, want)) {
					t.Errorf("%d bytes, declared %d, %s: %d bytes, %v; ReadAll %d bytes, %v", n, declared, name, len(got), err, len(want), wantErr)
				}
			}
		}
	}
	body := make([]byte, 878)
	br := bytes.NewReader(body)
	if n := testing.AllocsPerRun(100, func() { br.Reset(body); _, _ = readReply(br, 878, limit) }); n != 1 {
		t.Errorf("%.0f allocations for a declared length, want 1", n)
	}
}

// TestReadReplyIntoAsReadReply: reading into a pooled buffer, of any
// capacity and with old bytes in it, reads what readReply reads; a
// released reply's buffer comes back zeroed.
func TestReadReplyIntoAsReadReply(t *testing.T) {
	const limit = 1000
	for _, n := range []int{0, 1, 511, 512, 878, 1000, 1001, 3000} {
		body := bytes.Repeat([]byte("y"), n)
		for _, declared := range []int64{-1, 0, int64(n), int64(n) + 1, limit + 1} {
			for _, c := range []int{0, 16, 879, 2048} {
				buf := bytes.Repeat([]byte("z"), c)
				want, wantErr := readReply(bytes.NewReader(body), declared, limit)
				got, err := readReplyInto(buf, iotest.HalfReader(bytes.NewReader(body)), declared, limit)
				if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
					t.Errorf("%d bytes, declared %d, buffer %d: %d bytes, %v; readReply %d bytes, %v", n, declared, c, len(got), err, len(want), wantErr)
				}
			}
		}
	}
	bp := replyBufs.Get().(*[]byte)
	*bp = append((*bp)[:0], `{"access_token":"secret"}`...)
	rep := &reply{body: *bp, buf: bp}
	rep.release()
	if rep.body != nil || rep.buf != nil {
		t.Error("a released reply keeps its body")
	}
	if len(*bp) != 0 || bytes.ContainsAny((*bp)[:cap(*bp)], "secret") {
		t.Error("a released buffer keeps the reply's bytes")
	}
}
