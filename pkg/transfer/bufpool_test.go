package transfer

import "testing"

// TestBuffersFollowTheWindow: with the default size, a range sent under a
// window of up to 128 requests reads through 128 KiB, one sent under 256
// through the budget's 64 KiB, and a wide buffer returned once the window
// is past 128 is not kept; a size set by hand, or a window that is not
// adaptive, is the only size.
func TestBuffersFollowTheWindow(t *testing.T) {
	const mib = 1 << 20
	window := 16
	b := newBuffers(defaultBuffer(256), true, 256, func() int { return window })
	for _, c := range []struct {
		n    int64
		w    int
		want int
	}{{mib, 16, 128 << 10}, {mib, 128, 128 << 10}, {mib, 256, 64 << 10}, {smallRange, 16, smallBuffer}} {
		if got := len(b.pool(c.n, c.w).get()); got != c.want {
			t.Errorf("range of %d bytes under a window of %d: a %d-byte buffer, want %d", c.n, c.w, got, c.want)
		}
	}
	wide := b.pool(mib, 16)
	buf := wide.get()
	window = 256
	b.put(wide, buf)
	if len(wide.free) != 0 {
		t.Errorf("a wide buffer returned under a window of 256 was kept")
	}
	window = 64
	b.put(wide, buf)
	if len(wide.free) != 1 {
		t.Errorf("a wide buffer returned under a window of 64 was not kept")
	}
	if cap(wide.free) != bufferMemory/(128<<10) {
		t.Errorf("the wide pool keeps up to %d buffers, want %d (bufferMemory)", cap(wide.free), bufferMemory/(128<<10))
	}
	for _, fixed := range []buffers{newBuffers(32<<10, false, 256, nil), newBuffers(defaultBuffer(64), true, 64, nil)} {
		if got := len(fixed.pool(mib, 16).get()); got != len(fixed.narrow.get()) {
			t.Errorf("a fixed size: a %d-byte buffer under a window of 16, want %d", got, len(fixed.narrow.get()))
		}
	}
}
