package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// A listing that gives an object an absurd size fails that object once
// the server's answer disagrees, and nothing is sized from the listing
// first: 2^62 (more than any object) is confirmed by a response before
// a file is created; 2^43 (8 TiB, possible) is planned part by part, so
// memory does not grow with it (listing every part up front took GiBs).
func TestAbsurdListedSize(t *testing.T) {
	for _, size := range []int64{1 << 62, 1 << 43} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := emuStore(t, s3emu.Options{Dataset: "z:3:100KiB", Faults: s3emu.NewFaults(
				s3emu.Rule{Method: "LIST", Key: "*", Times: -1, Action: s3emu.ListSize{Size: size, Index: 1}})})
			dest := t.TempDir()
			r := run(t, nil, s.cmd("get", "--json", "--no-space-check", "--partsize", "64KiB", s.url("z/"), dest)...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			lines := objectLines(t, r.stdout)
			l := lines["z/00000001"]
			if l["status"] != "failed" {
				t.Errorf("z/00000001: %v, want failed", l)
			} else if size > 1<<50 && !strings.Contains(l["error"].(string), "listed size "+fmt.Sprint(size)) {
				t.Errorf("z/00000001: %v, want failed on its listed size before any range", l)
			}
			for _, key := range []string{"z/00000000", "z/00000002"} {
				checkSynthetic(t, filepath.Join(dest, strings.TrimPrefix(key, "z/")), key, 100<<10)
			}
			if _, err := os.Stat(filepath.Join(dest, "00000001")); !os.IsNotExist(err) {
				t.Errorf("the object with the absurd size has a file: %v", err)
			}
			tree(t, dest) // no partial file left
			if kib := summaryOf(t, r.stdout)["peak_rss_kib"].(float64); kib > 256<<10 {
				t.Errorf("peak RSS %.0f MiB", kib/1024)
			}
		})
	}
}

// A tiny part size does not cut an object into more than 10,000 parts,
// and memory stays that of the ranges in flight.
func TestTinyPartSize(t *testing.T) {
	const size = 48 << 20
	s := emuStore(t, s3emu.Options{Dataset: "t:1:48MiB"})
	dest := t.TempDir()
	r := run(t, nil, s.cmd("get", "--json", "--partsize", "1", s.url("t/"), dest)...)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr: %s", r.code, r.stderr)
	}
	checkSynthetic(t, filepath.Join(dest, "00000000"), "t/00000000", size)
	sum := summaryOf(t, r.stdout)
	// Parts are planned, at most 10,000; a straggler taken over, a tail
	// range split or a retry each add a GET to one of them.
	extra := int64(sum["hedged"].(float64) + sum["splits"].(float64) + sum["retries"].(float64))
	if gets := s.emu.Stats().GetRequests; gets > 10_000+extra {
		t.Errorf("%d GETs for one object (%d takeovers, splits and retries), want at most 10,000 parts", gets, extra)
	}
	if kib := sum["peak_rss_kib"].(float64); kib > 256<<10 {
		t.Errorf("peak RSS %.0f MiB for --partsize 1 on a 48 MiB object", kib/1024)
	}
	t.Logf("%v requests, peak RSS %.0f MiB", sum["requests"], sum["peak_rss_kib"].(float64)/1024)
}
