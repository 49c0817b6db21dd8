package raid

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Signature is what Probe found on a device.
type Signature struct {
	Type  string // xfs, ext4, ext3, ext2, btrfs, swap, md, lvm2, crypto_LUKS, gpt, dos; "" for none
	Label string // filesystem label, when the type has one
}

// headSize covers every magic Probe looks for near the start of a device:
// the btrfs superblock at 64 KiB is the farthest.
const headSize = 0x10000 + 0x1000

// mdMagic is the md superblock magic, little-endian on disk.
const mdMagic = 0xa92b4efc

// ProbeFile opens path read-only and probes it (see Probe).
func ProbeFile(path string, size int64) (Signature, error) {
	f, err := os.Open(path)
	if err != nil {
		return Signature{}, fmt.Errorf("probe %s: %w", path, err)
	}
	defer f.Close()
	s, err := Probe(f, size)
	if err != nil {
		return Signature{}, fmt.Errorf("probe %s: %w", path, err)
	}
	return s, nil
}

// Probe reads the known magic offsets of a device of size bytes and reports
// the first signature found: filesystems and swap first, then md, LVM and
// LUKS headers, then partition tables. It reads a few KiB from the start and
// from the end, nothing else.
func Probe(r io.ReaderAt, size int64) (Signature, error) {
	head := make([]byte, headSize)
	if err := readAt(r, head, 0, size); err != nil {
		return Signature{}, err
	}
	if s, ok := probeHead(head); ok {
		return s, nil
	}
	// md 1.0 (end - 8 KiB, 4 KiB aligned) and 0.90 (last 64 KiB-aligned block).
	for _, off := range []int64{(size - 8192) &^ 4095, (size &^ 0xffff) - 0x10000} {
		if off <= 0 || off+4 > size {
			continue
		}
		b := make([]byte, 4)
		if err := readAt(r, b, off, size); err != nil {
			return Signature{}, err
		}
		if binary.LittleEndian.Uint32(b) == mdMagic {
			return Signature{Type: "md"}, nil
		}
	}
	if s, ok := probePartitions(head); ok {
		return s, nil
	}
	return Signature{}, nil
}

// readAt fills b from off, leaving zeros past the end of the device.
func readAt(r io.ReaderAt, b []byte, off, size int64) error {
	n := int64(len(b))
	if off >= size {
		return nil
	}
	if off+n > size {
		n = size - off
	}
	if _, err := r.ReadAt(b[:n], off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %d bytes at %d: %w", n, off, err)
	}
	return nil
}

// probeHead looks for filesystem, swap, md, LVM and LUKS magics in the head.
func probeHead(h []byte) (Signature, bool) {
	switch {
	case string(h[0:4]) == "XFSB":
		return Signature{Type: "xfs", Label: cstring(h[108:120])}, true
	case string(h[0x10040:0x10048]) == "_BHRfS_M":
		return Signature{Type: "btrfs", Label: cstring(h[0x1012b : 0x1012b+256])}, true
	case binary.LittleEndian.Uint16(h[1024+56:]) == 0xef53:
		return Signature{Type: extType(h[1024:]), Label: cstring(h[1024+0x78 : 1024+0x88])}, true
	case string(h[0:6]) == "LUKS\xba\xbe":
		return Signature{Type: "crypto_LUKS"}, true
	}
	for _, page := range []int{4096, 8192, 16384, 65536} {
		if m := string(h[page-10 : page]); m == "SWAPSPACE2" || m == "SWAP-SPACE" {
			return Signature{Type: "swap", Label: cstring(h[1024+28 : 1024+44])}, true
		}
	}
	for _, off := range []int{4096, 0} { // md 1.2, md 1.1
		if binary.LittleEndian.Uint32(h[off:]) == mdMagic {
			return Signature{Type: "md", Label: cstring(h[off+32 : off+64])}, true
		}
	}
	for sector := 0; sector < 4; sector++ {
		o := sector * 512
		if string(h[o:o+8]) == "LABELONE" && string(h[o+24:o+32]) == "LVM2 001" {
			return Signature{Type: "lvm2"}, true
		}
	}
	return Signature{}, false
}

// probePartitions looks for a GPT header (512- or 4096-byte sectors) and
// then an MBR boot signature.
func probePartitions(h []byte) (Signature, bool) {
	if string(h[512:520]) == "EFI PART" || string(h[4096:4104]) == "EFI PART" {
		return Signature{Type: "gpt"}, true
	}
	if h[510] == 0x55 && h[511] == 0xaa {
		return Signature{Type: "dos"}, true
	}
	return Signature{}, false
}

// extType tells ext4 from ext3 and ext2 by the superblock's feature flags.
func extType(sb []byte) string {
	compat := binary.LittleEndian.Uint32(sb[0x5c:])
	incompat := binary.LittleEndian.Uint32(sb[0x60:])
	const (
		hasJournal = 0x4
		extents    = 0x40
		bit64      = 0x80
		flexBG     = 0x200
	)
	switch {
	case incompat&(extents|bit64|flexBG) != 0:
		return "ext4"
	case compat&hasJournal != 0:
		return "ext3"
	}
	return "ext2"
}

// cstring returns b up to its first NUL byte.
func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
