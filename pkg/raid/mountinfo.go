package raid

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Dev    string // major:minor of the mounted device ("0:45" for btrfs)
	Point  string // mount point, unescaped
	FSType string
	Source string // /dev/md0, or whatever the filesystem reports
}

// ReadMountInfo parses a mountinfo file (normally /proc/self/mountinfo).
func ReadMountInfo(path string) ([]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read mounts %s: %w", path, err)
	}
	defer f.Close()
	var ms []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for line := 1; sc.Scan(); line++ {
		m, err := parseMountInfoLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("read mounts %s:%d: %w", path, line, err)
		}
		ms = append(ms, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mounts %s: %w", path, err)
	}
	return ms, nil
}

// parseMountInfoLine parses
// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
func parseMountInfoLine(s string) (Mount, error) {
	f := strings.Fields(s)
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if len(f) < 5 || sep < 0 || sep+2 >= len(f) {
		return Mount{}, fmt.Errorf("malformed mountinfo line %q", s)
	}
	return Mount{Dev: f[2], Point: unescapeOctal(f[4]), FSType: f[sep+1], Source: unescapeOctal(f[sep+2])}, nil
}

// unescapeOctal undoes the kernel's \040-style escaping of spaces, tabs,
// newlines and backslashes in mount fields.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}

// mountAt returns the mount at point, if any (the last one wins, as in the kernel).
func mountAt(ms []Mount, point string) (Mount, bool) {
	var found Mount
	ok := false
	for _, m := range ms {
		if m.Point == point {
			found, ok = m, true
		}
	}
	return found, ok
}
