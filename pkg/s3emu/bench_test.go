package s3emu

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// BenchmarkSyntheticGet measures the synthetic backend's serving rate on
// loopback: parallel 8 MiB range GETs over 16 objects of 64 MiB, bodies
// discarded by a bare client (so client and server share the CPUs, as in
// every loopback measurement here).
func BenchmarkSyntheticGet(b *testing.B) {
	const part, objects, size = 8 << 20, 16, 64 << 20
	s, ep := start(b, Options{Dataset: fmt.Sprintf("m:%d:%d", objects, size)})
	if err := s.Prepare(context.Background()); err != nil { // MD5 ETags outside the timer
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var next atomic.Int64
	b.SetBytes(part)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 256<<10)
		for pb.Next() {
			i := next.Add(1)
			obj, off := (i/(size/part))%objects, (i%(size/part))*part
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/bench/m/%08d", ep, obj), nil)
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+part-1))
			resp, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			n, err := drain(resp.Body, buf)
			resp.Body.Close()
			if err != nil || n != part {
				b.Errorf("GET: %d bytes, %v", n, err)
				return
			}
		}
	})
}

// BenchmarkSyntheticBytes measures content generation alone.
func BenchmarkSyntheticBytes(b *testing.B) {
	p := make([]byte, 256<<10)
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		SyntheticBytes("m/00000001", int64(i)*int64(len(p)), p)
	}
}

// drain reads r to its end through buf (io.Discard would read in 8 KiB
// pieces, one syscall each).
func drain(r io.Reader, buf []byte) (int64, error) {
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
