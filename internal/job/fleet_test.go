package job

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
	"github.com/s3pd/s3pd/pkg/store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// fleetNode runs one node of a fleet over the emulator's prefix f/ into
// dir and returns its summary and fleet report.
func fleetNode(t *testing.T, reg store.Registry, dir string, spec FleetSpec) (transfer.Summary, *FleetReport, error) {
	t.Helper()
	get := &GetSpec{Source: "s3://" + s3emu.DefaultBucket + "/f/", Stores: reg, URL: "s3://bench/f/", Dest: dir,
		Read: store.Options{Prefix: true, Verify: true, FanOut: 1}, Fleet: &spec}
	run, err := Open(context.Background(), Spec{Get: get, Engine: transfer.Options{PartSize: 256 << 10, Threshold: 256 << 10, Verify: transfer.VerifyAuto}})
	if err != nil {
		return transfer.Summary{}, nil, err
	}
	defer run.Close()
	sum, err := run.Transfer(context.Background(), Hooks{})
	return sum, run.Fleet(), err
}

func loopbackAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ln.Addr().String())
		ln.Close()
	}
	return out
}

// A node run again over a DEST it filled skips every file as landed and
// still serves them: a node that restarts rejoins its fleet. Here node 0
// first lands the whole prefix alone, then runs again beside node 1,
// which takes node 0's share from it.
func TestFleetRerunServesWhatItLanded(t *testing.T) {
	ts := s3emu.NewTestServer(t, s3emu.Options{Dataset: "f/big:4:1MiB,f/small:12:64KiB"})
	reg := emuRegistry(emuClient(ts))
	peers := loopbackAddrs(t, 2)
	dirs := []string{t.TempDir(), t.TempDir()}
	spec := func(k, n int) FleetSpec {
		return FleetSpec{Self: k, Peers: peers[:n], Token: "tok", Linger: 20 * time.Second}
	}
	if sum, _, err := fleetNode(t, reg, dirs[0], spec(0, 1)); err != nil || sum.Objects != 16 {
		t.Fatalf("node 0 alone: %d objects, %v; want 16", sum.Objects, err)
	}
	var wg sync.WaitGroup
	sums := make([]transfer.Summary, 2)
	reps := make([]*FleetReport, 2)
	errs := make([]error, 2)
	for k := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[k], reps[k], errs[k] = fleetNode(t, reg, dirs[k], spec(k, 2))
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || sums[0].Skipped != 16 || sums[1].Objects != 16 {
		t.Fatalf("node 0: %d skipped, %v; node 1: %d objects, %v; want 16 skipped, 16 transferred", sums[0].Skipped, errs[0], sums[1].Objects, errs[1])
	}
	if reps[1].FromPeers == 0 || reps[0].ToPeers != reps[1].FromPeers || reps[1].Peers[0].Bypassed {
		t.Errorf("node 1 took %d bytes from node 0, which served %d; peer %+v: want node 0's share from it", reps[1].FromPeers, reps[0].ToPeers, reps[1].Peers[0])
	}
	if !reps[0].Peers[0].Done || !reps[1].Peers[0].Done {
		t.Errorf("the nodes did not hear each other say done: %+v, %+v", reps[0].Peers, reps[1].Peers)
	}
}

// A fleet takes a prefix into local files: a single object, standard
// output and nothing (a benchmark) are refused before a byte moves.
func TestFleetRefusesWhatItCannotServe(t *testing.T) {
	ts := s3emu.NewTestServer(t, s3emu.Options{Dataset: "f/big:1:1MiB"})
	reg := emuRegistry(emuClient(ts))
	fleet := &FleetSpec{Self: 0, Peers: loopbackAddrs(t, 2), Token: "tok"}
	for _, tc := range []struct {
		src, dest string
		prefix    bool
	}{
		{"s3://bench/f/big/00000000", t.TempDir(), false},
		{"s3://bench/f/", "-", true},
		{"s3://bench/f/", "", true},
	} {
		get := &GetSpec{Source: tc.src, Stores: reg, URL: tc.src, Dest: tc.dest, Read: store.Options{Prefix: tc.prefix}, Fleet: fleet, OrderWindow: 1 << 20}
		run, err := Open(context.Background(), Spec{Get: get})
		if err == nil {
			run.Close()
		}
		if !errors.As(err, new(*SpecError)) {
			t.Errorf("%s into %q: %v, want a *SpecError", tc.src, tc.dest, err)
		}
	}
}
