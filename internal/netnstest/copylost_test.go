//go:build netns

package netnstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCopyLosesACardMidRun: an upload over two cards, one of which
// loses its way to the endpoint mid-run (its peer's address goes), ends
// with the object byte for byte in the store and verified there: its
// parts, its CompleteMultipartUpload and the HEAD that checks it, each
// failed over the lost card, are sent again over the other.
func TestCopyLosesACardMidRun(t *testing.T) {
	e := New(t, Config{Links: []Link{{}, {}}})
	bin := buildS3pd(t)
	emu := startCountingEmulator(t, e)
	src := t.TempDir()
	data := make([]byte, 24<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(src, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	nic0, nic1 := e.Links[0], e.Links[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.Command(ctx, e.Client, bin, "copy", "--no-progress", "--nics", nic0.ClientIf+","+nic1.ClientIf, "--endpoint-url", emu.endpoint,
		"--no-sign-request", "--region", "us-east-1", "--partsize", "2MiB", "--max-concurrent-requests", "4",
		"--max-bandwidth", "8MB/s", "--stall-timeout", "2s", src+"/big", "s3://upl/lost/big")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Once the second card carried a few requests, it loses its way.
	if !emu.awaitCount(nic1.ClientAddr.String(), 3, time.Minute) {
		t.Fatalf("nothing went over %s\n%s", nic1.ClientIf, out.String())
	}
	e.ip(e.Server, "addr", "del", nic1.ServerAddr.String()+"/24", "dev", nic1.ServerIf)
	err := cmd.Wait()
	t.Logf("%s", out.String())
	// Read back over the card that still reaches the endpoint.
	got, gerr := e.Command(ctx, e.Client, bin, "cat", "--nics", nic0.ClientIf, "--endpoint-url", emu.endpoint,
		"--no-sign-request", "--region", "us-east-1", "s3://upl/lost/big").Output()
	if err != nil || gerr != nil || !bytes.Equal(got, data) {
		t.Errorf("exit %v, read back %d bytes (%v): want exit 0 and the file, its parts and its completion sent again over %s",
			err, len(got), gerr, nic0.ClientIf)
	}
	if !strings.Contains(out.String(), "verified: 1 object") {
		t.Errorf("the object is not verified at the destination:\n%s", out.String())
	}
}
