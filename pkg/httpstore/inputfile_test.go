package httpstore

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

var quickBackoff = transfer.Backoff{Base: time.Millisecond, Cap: 2 * time.Millisecond, MaxAttempts: 2}

func TestParseInputFile(t *testing.T) {
	const sha = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	for _, tt := range []struct {
		name, in string
		want     []string // URL|NAME|CHECKSUM per item
		wantErr  string
	}{
		{"urls", "https://a/x\nhttp://b/y\n", []string{"https://a/x||", "http://b/y||"}, ""},
		{"names", "https://a/x  out.bin\nhttps://a/y\tdir/y.bin\n", []string{"https://a/x|out.bin|", "https://a/y|dir/y.bin|"}, ""},
		{"blank and comments", "\n# a comment\n   \nhttps://a/x\n  # indented comment\n\n", []string{"https://a/x||"}, ""},
		{"crlf", "https://a/x name\r\nhttps://a/y\r\n", []string{"https://a/x|name|", "https://a/y||"}, ""},
		{"aria2 options", "https://a/x\n  out=renamed\n\tchecksum=sha-256=" + sha + "\n", []string{"https://a/x|renamed|sha256"}, ""},
		{"no final newline", "https://a/x", []string{"https://a/x||"}, ""},
		{"empty", "", nil, ""},
		{"three fields", "https://a/x name extra\n", nil, "line 1: want URL [NAME], got 3 fields"},
		{"not http", "\ns3://b/k\n", nil, "line 2: s3://b/k: not an http:// or https:// URL"},
		{"no host", "https:///x\n", nil, "line 1: https:///x: no host"},
		{"option first", "  out=x\n", nil, "line 1: an option line before any URL"},
		{"unknown option", "https://a/x\n  split=4\n", nil, `line 2: option "split": unknown`},
		{"bad checksum", "https://a/x\n  checksum=sha256:zz\n", nil, "line 2: checksum \"sha256:zz\": the value is not hex"},
		{"credential redacted", "ftp://a/x?sig=SECRET\n", nil, "line 1: ftp://a/x?sig=REDACTED: not an http"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			items, err := ParseInputFile(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				c := ""
				if it.Checksum != nil {
					c = it.Checksum.Name
				}
				got = append(got, it.URL+"|"+it.Name+"|"+c)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseChecksum(t *testing.T) {
	for _, tt := range []struct {
		in, wantName string
		wantLen      int
		wantErr      string
	}{
		{"sha256:" + strings.Repeat("ab", 32), "sha256", 32, ""},
		{"SHA-256=" + strings.Repeat("AB", 32), "sha256", 32, ""},
		{"md5:" + strings.Repeat("0f", 16), "md5", 16, ""},
		{"crc32c:0a0b0c0d", "crc32c", 4, ""},
		{"sha1:" + strings.Repeat("00", 20), "sha1", 20, ""},
		{"sha512:" + strings.Repeat("00", 64), "sha512", 64, ""},
		{"sha256" + strings.Repeat("ab", 32), "", 0, "want ALG:HEX"},
		{"blake3:00", "", 0, "unknown algorithm"},
		{"md5:xyz", "", 0, "not hex"},
		{"sha256:abcd", "", 0, "sha256 takes 64 hex digits, not 4"},
	} {
		d, err := ParseChecksum(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseChecksum(%q): error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || d.Name != tt.wantName || len(d.Sum) != tt.wantLen || d.New().Size() != tt.wantLen {
			t.Errorf("ParseChecksum(%q) = %+v, %v; want %s of %d bytes", tt.in, d, err, tt.wantName, tt.wantLen)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want contentRange
		ok   bool
	}{
		{"bytes 0-99/1000", contentRange{0, 100, 1000}, true},
		{"bytes 900-999/1000", contentRange{900, 100, 1000}, true},
		{"bytes 5-5/*", contentRange{5, 1, -1}, true},
		{"bytes 0-1000/1000", contentRange{}, false}, // past the end
		{"bytes 10-5/100", contentRange{}, false},
		{"bytes */100", contentRange{}, false},
		{"items 0-1/2", contentRange{}, false},
		{"bytes 0-x/2", contentRange{}, false},
	} {
		got, err := parseContentRange(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseContentRange(%q) = %+v, %v; want %+v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestReadInputFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := dir+"/urls.txt", dir+"/bad.txt"
	if err := os.WriteFile(good, []byte("# models\nhttps://a/x x.bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("https://a/x\nnot a url at all\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if items, err := ReadInputFile(good); err != nil || len(items) != 1 || items[0].Name != "x.bin" {
		t.Fatalf("ReadInputFile(good) = %+v, %v", items, err)
	}
	if _, err := ReadInputFile(bad); err == nil || !strings.Contains(err.Error(), "input file "+bad+": line 2:") {
		t.Fatalf("ReadInputFile(bad): %v, want the file and line named", err)
	}
	if _, err := ReadInputFile(dir + "/missing"); err == nil || !strings.Contains(err.Error(), "input file:") {
		t.Fatalf("ReadInputFile(missing): %v", err)
	}
}
