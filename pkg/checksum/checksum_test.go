package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"hash/crc64"
	"math/rand/v2"
	"strings"
	"testing"
)

var algorithms = []Algorithm{CRC64NVME, CRC32C, CRC32}

// refCRC is a bit-at-a-time CRC written from the definition, independent of
// the table-driven and hardware code under test.
func refCRC(alg Algorithm, p []byte) uint64 {
	cp := params[kindOf(alg)]
	crc := cp.mask
	for _, b := range p {
		crc ^= uint64(b)
		for range 8 {
			crc = crc>>1 ^ cp.poly&-(crc&1)
		}
	}
	return crc ^ cp.mask
}

// crcOf computes the CRC of p with Running in one Update.
func crcOf(alg Algorithm, p []byte) uint64 {
	r := Start(alg)
	r.Update(p)
	return r.Sum()
}

func TestKnownVectors(t *testing.T) {
	tests := []struct {
		alg  Algorithm
		in   string
		want uint64
		b64  string // as S3 and the AWS SDK send it
	}{
		{CRC64NVME, "123456789", 0xAE8B14860A799888, "rosUhgp5mIg="},
		{CRC32C, "123456789", 0xE3069283, "4waSgw=="},
		{CRC32, "123456789", 0xCBF43926, "y/Q5Jg=="},
		{CRC64NVME, "", 0, "AAAAAAAAAAA="},
		{CRC32C, "", 0, "AAAAAA=="},
		{CRC32, "", 0, "AAAAAA=="},
		// Values from the AWS SDK for Go v2's own checksum tests.
		{CRC64NVME, "hello world", 0x8d29d5c3f6ea8ebe, "jSnVw/bqjr4="},
		{CRC32C, "hello world", 0xc99465aa, "yZRlqg=="},
		{CRC32, "hello world", 0x0d4a1185, "DUoRhQ=="},
		{CRC32C, "Hello world", 0x72b51f78, "crUfeA=="},
		{CRC32, "Hello world", 0x8bd69e52, "i9aeUg=="},
	}
	for _, tt := range tests {
		p := []byte(tt.in)
		if got := crcOf(tt.alg, p); got != tt.want {
			t.Errorf("%s(%q): got %#x, want %#x", tt.alg, tt.in, got, tt.want)
		}
		if got := refCRC(tt.alg, p); got != tt.want {
			t.Errorf("reference %s(%q): got %#x, want %#x", tt.alg, tt.in, got, tt.want)
		}
		r := Start(tt.alg)
		for i := range p {
			if _, err := r.Write(p[i : i+1]); err != nil {
				t.Fatal(err)
			}
		}
		if r.Sum() != tt.want || r.Len() != int64(len(p)) {
			t.Errorf("%s(%q) byte by byte: got %#x, %d bytes, want %#x, %d", tt.alg, tt.in, r.Sum(), r.Len(), tt.want, len(p))
		}
		if got := Encode(tt.alg, tt.want); got != tt.b64 {
			t.Errorf("Encode(%s, %#x): got %q, want %q", tt.alg, tt.want, got, tt.b64)
		}
		v, composite, err := Decode(tt.alg, tt.b64)
		if err != nil || composite || v != tt.want {
			t.Errorf("Decode(%s, %q): got %#x, %v, %v, want %#x, false, nil", tt.alg, tt.b64, v, composite, err, tt.want)
		}
	}
}

// TestUpdateMatchesReference runs the accelerated paths (alignment
// prologues, 128-byte blocks, tails) over random lengths and chunkings.
func TestUpdateMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 9000)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	nvme := crc64.MakeTable(0x9a6c9329ac4bc9b5)
	for _, alg := range algorithms {
		for range 200 {
			off := rng.IntN(16) // misalign the start
			p := buf[off : off+rng.IntN(len(buf)-16)]
			want := refCRC(alg, p)
			if alg == CRC64NVME && crc64.Checksum(p, nvme) != want {
				t.Fatalf("reference CRC64NVME disagrees with hash/crc64 over %d bytes", len(p))
			}
			r := Start(alg)
			for rest := p; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(700))
				r.Update(rest[:n])
				rest = rest[n:]
			}
			if r.Sum() != want || r.Len() != int64(len(p)) {
				t.Fatalf("%s over %d bytes at offset %d: got %#x (%d bytes), want %#x", alg, len(p), off, r.Sum(), r.Len(), want)
			}
		}
	}
}

func TestUpdateDoesNotAllocate(t *testing.T) {
	p := bytes.Repeat([]byte{0x5a}, 64<<10)
	for _, alg := range algorithms {
		r := Start(alg)
		if n := testing.AllocsPerRun(100, func() { r.Update(p) }); n != 0 {
			t.Errorf("%s Update: got %v allocations per call, want 0", alg, n)
		}
	}
}

func TestParseAlgorithm(t *testing.T) {
	tests := []struct {
		in     string
		want   Algorithm
		wantOK bool
	}{
		{"CRC64NVME", CRC64NVME, true},
		{"crc64nvme", CRC64NVME, true},
		{" Crc32C ", CRC32C, true},
		{"crc32", CRC32, true},
		{"SHA256", "SHA256", false},
		{"sha1", "SHA1", false},
		{"", "", false},
		{"CRC64", "CRC64", false},
	}
	for _, tt := range tests {
		got, ok := ParseAlgorithm(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseAlgorithm(%q): got %q, %v, want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
	if got := CRC64NVME.Header(); got != "x-amz-checksum-crc64nvme" {
		t.Errorf("CRC64NVME.Header(): got %q", got)
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		alg           Algorithm
		in            string
		want          uint64
		wantComposite bool
		wantErr       bool
	}{
		{CRC64NVME, "jSnVw/bqjr4=", 0x8d29d5c3f6ea8ebe, false, false},
		{CRC32C, " yZRlqg== ", 0xc99465aa, false, false},
		{CRC32C, "yZRlqg==-3", 0xc99465aa, true, false}, // composite of 3 parts
		{CRC32, "DUoRhQ==-10000", 0x0d4a1185, true, false},
		{CRC64NVME, "jSnVw/bqjr4=-2", 0x8d29d5c3f6ea8ebe, true, false},
		{CRC32, "yZRlqg==-", 0, false, true},     // no part count
		{CRC32, "yZRlqg==-x1", 0, false, true},   // not a number
		{CRC64NVME, "yZRlqg==", 0, false, true},  // 4 bytes for an 8-byte CRC
		{CRC32C, "jSnVw/bqjr4=", 0, false, true}, // 8 bytes for a 4-byte CRC
		{CRC32C, "yZRlqg", 0, false, true},       // padding missing
		{CRC32C, "!!!!!!==", 0, false, true},     // not base64
		{CRC32C, "", 0, false, true},             // empty
		{"SHA256", "uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=", 0, false, true},
	}
	for _, tt := range tests {
		v, composite, err := Decode(tt.alg, tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("Decode(%s, %q): got error %v, want error %v", tt.alg, tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && (v != tt.want || composite != tt.wantComposite) {
			t.Errorf("Decode(%s, %q): got %#x, composite %v, want %#x, %v", tt.alg, tt.in, v, composite, tt.want, tt.wantComposite)
		}
		if err != nil && composite != tt.wantComposite {
			t.Errorf("Decode(%s, %q) error: got composite %v, want %v", tt.alg, tt.in, composite, tt.wantComposite)
		}
	}
}

// TestDecodeSaysWhyInWords: a value Decode refuses is said as a person
// would say it, for the summary's reasons.
func TestDecodeSaysWhyInWords(t *testing.T) {
	for _, tt := range []struct {
		alg  Algorithm
		in   string
		want string
	}{
		{CRC64NVME, "mf7UyA==", `the server's CRC64NVME checksum "mf7UyA==" is 4 bytes, not 8`},
		{CRC32C, "jSnVw/bqjr4=", `the server's CRC32C checksum "jSnVw/bqjr4=" is 8 bytes, not 4`},
		{CRC32, "yZRlqg==-", `the server's CRC32 checksum "yZRlqg==-" has no part count after its '-'`},
		{CRC32C, "!!!!!!==", `the server's CRC32C checksum "!!!!!!==" is not base64`},
		{"SHA256", "uU0=", `the server's checksum "uU0=" is of SHA256, which s3pd does not compute`},
	} {
		_, _, err := Decode(tt.alg, tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Decode(%s, %q): error %v, want %q", tt.alg, tt.in, err, tt.want)
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, alg := range algorithms {
		for range 1000 {
			v := rng.Uint64() & params[kindOf(alg)].mask
			s := Encode(alg, v)
			if len(s) != (alg.Size()+2)/3*4 {
				t.Fatalf("Encode(%s, %#x) = %q: wrong length", alg, v, s)
			}
			got, composite, err := Decode(alg, s)
			if err != nil || composite || got != v {
				t.Fatalf("Decode(Encode(%s, %#x) = %q): got %#x, %v, %v", alg, v, s, got, composite, err)
			}
		}
	}
	if got := Encode("SHA1", 1); got != "" {
		t.Errorf("Encode(SHA1): got %q, want \"\"", got)
	}
}

func TestIsMD5ETag(t *testing.T) {
	tests := []struct {
		etag string
		want bool
	}{
		{`"5eb63bbbe01eeed093cb22bb8f5acdc3"`, true},
		{`5EB63BBBE01EEED093CB22BB8F5ACDC3`, true},
		{`W/"5eb63bbbe01eeed093cb22bb8f5acdc3"`, true},
		{`"5eb63bbbe01eeed093cb22bb8f5acdc3-2"`, false}, // multipart
		{`"5eb63bbbe01eeed093cb22bb8f5acdc"`, false},    // 31 digits
		{`"5eb63bbbe01eeed093cb22bb8f5acdcg"`, false},   // not hex
		{`""`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := IsMD5ETag(tt.etag); got != tt.want {
			t.Errorf("IsMD5ETag(%q): got %v, want %v", tt.etag, got, tt.want)
		}
	}
	sum, ok := ParseMD5ETag(`"5eb63bbbe01eeed093cb22bb8f5acdc3"`) // MD5("hello world")
	if !ok || sum != [16]byte{0x5e, 0xb6, 0x3b, 0xbb, 0xe0, 0x1e, 0xee, 0xd0, 0x93, 0xcb, 0x22, 0xbb, 0x8f, 0x5a, 0xcd, 0xc3} {
		t.Errorf("ParseMD5ETag: got %x, %v", sum, ok)
	}
}

func TestUnsupportedPanics(t *testing.T) {
	tests := map[string]func(){
		"Start":      func() { Start("SHA256") },
		"Combine":    func() { Combine("SHA1", 1, 2, 3) },
		"NewParts":   func() { NewParts("", 10, 5) },
		"zero value": func() { var r Running; r.Update([]byte{1}) },
		"Join":       func() { Start(CRC32).Join(Start(CRC32C)) },
	}
	for name, f := range tests {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: got no panic, want one", name)
				}
			}()
			f()
		}()
	}
}

// TestMultipartETag: an ETag of parts is the MD5 of the parts' MD5s with
// "-N", as S3 makes it; only that form parses.
func TestMultipartETag(t *testing.T) {
	a, b := md5.Sum([]byte("first part")), md5.Sum([]byte("second"))
	h := md5.New()
	h.Write(a[:])
	h.Write(b[:])
	want := hex.EncodeToString(h.Sum(nil)) + "-2"
	if got := MultipartETag([][16]byte{a, b}); got != want {
		t.Fatalf("MultipartETag: %s, want %s", got, want)
	}
	for _, tt := range []struct {
		etag  string
		parts int
		ok    bool
	}{
		{`"` + want + `"`, 2, true},
		{"W/\"" + want + "\"", 2, true},
		{want[:32], 0, false},            // a single part's MD5
		{want[:32] + "-0", 0, false},     // no parts
		{want[:32] + "-10001", 0, false}, // more than S3 allows
		{want[:31] + "-2", 0, false},     // not an MD5
		{"zz" + want[2:], 0, false},      // not hex
		{want[:32] + "-", 0, false},      // no count
	} {
		_, n, ok := ParseMultipartETag(tt.etag)
		if ok != tt.ok || n != tt.parts {
			t.Errorf("ParseMultipartETag(%q): %d, %v; want %d, %v", tt.etag, n, ok, tt.parts, tt.ok)
		}
	}
}
