package manifest

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// maxLine bounds one line of a text manifest (a key is at most 1,024
// bytes; the rest is generous).
const maxLine = 64 << 10

// text reads a text manifest: UTF-8, one entry per line, blank lines
// and lines starting with # ignored. An entry is s3://BUCKET/KEY or a
// bare KEY (of the transfer's bucket), optionally followed by a tab and
// the size in bytes.
func (l *Lister) text(br *bufio.Reader, add func(transfer.Object) error) error {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") {
			continue
		}
		o, err := l.entry(s)
		if err != nil {
			return &LineError{Location: l.opts.Location, Line: line, Err: err}
		}
		if err := add(o); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &LineError{Location: l.opts.Location, Line: line + 1, Err: fmt.Errorf("longer than %d bytes", maxLine)}
		}
		return fmt.Errorf("manifest %s: %w", l.opts.Location, err)
	}
	return nil
}

// entry parses one line of a text manifest.
func (l *Lister) entry(s string) (transfer.Object, error) {
	if !utf8.ValidString(s) {
		return transfer.Object{}, errors.New("not UTF-8")
	}
	key, size, sized := strings.Cut(s, "\t")
	if rest, ok := strings.CutPrefix(key, "s3://"); ok {
		bucket, k, _ := strings.Cut(rest, "/")
		if bucket != l.opts.Bucket {
			return transfer.Object{}, fmt.Errorf("%s is not in bucket %s", key, l.opts.Bucket)
		}
		key = k
	}
	name, err := l.name(key)
	if err != nil {
		return transfer.Object{}, err
	}
	o := transfer.Object{Key: key, Name: name, Size: -1}
	if sized {
		n, err := strconv.ParseInt(strings.TrimSpace(size), 10, 64)
		if err != nil || n < 0 {
			return transfer.Object{}, fmt.Errorf("size %q of %q: want a number of bytes", size, key)
		}
		o.Size = n
	}
	return o, nil
}
