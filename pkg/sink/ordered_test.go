package sink

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

func TestOrderedWritesInOrderWithinTheWindow(t *testing.T) {
	const size, chunk, window = 1 << 16, 512, 4096
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 31)
	}
	var out bytes.Buffer
	s := NewOrdered(&out, window)
	f, err := s.Create(context.Background(), transfer.Object{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	// Eight writers, each owning every eighth chunk, write in parallel
	// and out of order; the window bounds how far ahead they may get.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for off := w * chunk; off < size; off += 8 * chunk {
				if rand.IntN(4) == 0 {
					time.Sleep(time.Microsecond) // writers out of order: injected
				}
				if _, err := f.WriteAt(data[off:off+chunk], int64(off)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("stream differs from the object (got %d bytes)", out.Len())
	}
}

func TestOrderedTakesOneObjectAndAbortWakesWriters(t *testing.T) {
	// synctest.Wait returns once the writer is blocked waiting for the
	// window, so Abort is known to wake a waiting writer (no sleep that
	// hopes it got there).
	synctest.Test(t, func(t *testing.T) {
		s := NewOrdered(&bytes.Buffer{}, 16)
		f, _ := s.Create(context.Background(), transfer.Object{Size: 64})
		if _, err := s.Create(context.Background(), transfer.Object{Size: 1}); err == nil {
			t.Fatal("a second object was accepted on one stream")
		}
		errc := make(chan error, 1)
		go func() { _, err := f.WriteAt(make([]byte, 8), 40); errc <- err }() // beyond the window: blocks
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("a write beyond the window returned before abort: %v", err)
		default:
		}
		f.Abort()
		if err := <-errc; err == nil { // if Abort did not wake it, synctest reports a deadlock
			t.Fatal("a write beyond the window succeeded after abort")
		}
	})
}

func TestDiscardCountsNothing(t *testing.T) {
	f, _ := Discard{}.Create(context.Background(), transfer.Object{})
	if n, err := f.WriteAt(make([]byte, 10), 5); n != 10 || err != nil {
		t.Fatalf("WriteAt = %d, %v; want 10, nil", n, err)
	}
}
