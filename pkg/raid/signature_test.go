package raid

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/s3pd/s3pd/internal/testenv"
)

func TestProbe(t *testing.T) {
	const size = 1 << 20
	img := func(edit func(b []byte)) []byte {
		b := make([]byte, size)
		edit(b)
		return b
	}
	le32 := func(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
	tests := []struct {
		name string
		b    []byte
		want Signature
	}{
		{"empty", img(func([]byte) {}), Signature{}},
		{"xfs", img(func(b []byte) { copy(b, "XFSB"); copy(b[108:], "data") }), Signature{"xfs", "data"}},
		{"ext4", img(func(b []byte) {
			b[1080], b[1081] = 0x53, 0xef
			le32(b, 1024+0x60, 0x40)
			copy(b[1024+0x78:], "root")
		}), Signature{"ext4", "root"}},
		{"ext3", img(func(b []byte) { b[1080], b[1081] = 0x53, 0xef; le32(b, 1024+0x5c, 0x4) }), Signature{"ext3", ""}},
		{"ext2", img(func(b []byte) { b[1080], b[1081] = 0x53, 0xef }), Signature{"ext2", ""}},
		{"btrfs", img(func(b []byte) { copy(b[0x10040:], "_BHRfS_M"); copy(b[0x1012b:], "big") }), Signature{"btrfs", "big"}},
		{"swap 4k", img(func(b []byte) { copy(b[4086:], "SWAPSPACE2") }), Signature{"swap", ""}},
		{"swap 64k", img(func(b []byte) { copy(b[65526:], "SWAPSPACE2") }), Signature{"swap", ""}},
		{"md 1.2", img(func(b []byte) { le32(b, 4096, mdMagic); copy(b[4096+32:], "host:0") }), Signature{"md", "host:0"}},
		{"md 1.1", img(func(b []byte) { le32(b, 0, mdMagic) }), Signature{"md", ""}},
		{"md 1.0", img(func(b []byte) { le32(b, size-8192, mdMagic) }), Signature{"md", ""}},
		{"md 0.90", img(func(b []byte) { le32(b, size-65536, mdMagic) }), Signature{"md", ""}},
		{"lvm2", img(func(b []byte) { copy(b[512:], "LABELONE"); copy(b[512+24:], "LVM2 001") }), Signature{"lvm2", ""}},
		{"luks", img(func(b []byte) { copy(b, "LUKS\xba\xbe") }), Signature{"crypto_LUKS", ""}},
		{"gpt", img(func(b []byte) { copy(b[512:], "EFI PART"); b[510], b[511] = 0x55, 0xaa }), Signature{"gpt", ""}},
		{"dos", img(func(b []byte) { b[510], b[511] = 0x55, 0xaa }), Signature{"dos", ""}},
		{"tiny device", []byte("XFSB"), Signature{"xfs", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Probe(bytes.NewReader(tt.b), int64(len(tt.b)))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestProbeRealFilesystems formats sparse files with the real tools (no root
// needed) and checks Probe agrees with blkid.
func TestProbeRealFilesystems(t *testing.T) {
	tests := []struct {
		tool string
		args []string
		want Signature
	}{
		{"mkfs.xfs", []string{"-q", "-L", "lbl"}, Signature{"xfs", "lbl"}},
		{"mkfs.ext4", []string{"-q", "-L", "lbl"}, Signature{"ext4", "lbl"}},
		{"mkfs.btrfs", []string{"-q", "-L", "lbl"}, Signature{"btrfs", "lbl"}},
		{"mkswap", []string{"-L", "lbl"}, Signature{"swap", "lbl"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			if _, err := exec.LookPath(tt.tool); err != nil {
				testenv.Unavailable(t, "%s not installed (apt-get install %s)", tt.tool, InstallHint(tt.tool))
			}
			f := filepath.Join(t.TempDir(), "img")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			const size = 320 << 20 // mkfs.xfs wants 300 MiB
			if err := os.Truncate(f, size); err != nil {
				t.Fatal(err)
			}
			args := append(append([]string{}, tt.args...), f)
			if out, err := exec.Command(tt.tool, args...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", tt.tool, err, out)
			}
			got, err := ProbeFile(f, size)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if _, err := exec.LookPath("blkid"); err == nil {
				typ, _, err := blkid(context.Background(), ExecRunner{}, f)
				if err != nil || typ != tt.want.Type {
					t.Errorf("blkid says %q (%v), Probe says %q", typ, err, got.Type)
				}
			}
		})
	}
}
