package httpstore

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// ParseInputFile reads a list of URLs, as aria2c -i and wget -i take
// them: one URL a line, optionally followed by whitespace and the name
// to save it as; blank lines and lines that begin with # are skipped.
// As in aria2's format, an indented line under a URL sets one of its
// options: out=NAME (its name) or checksum=ALG=HEX (a digest it must
// have, see ParseChecksum). Every URL must be http:// or https://. An
// error names the line and never prints a URL's credentials.
func ParseInputFile(r io.Reader) ([]Item, error) {
	var items []Item
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20) // presigned URLs are long
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		text := strings.TrimSpace(line)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if len(items) == 0 {
				return nil, fmt.Errorf("line %d: an option line before any URL", n)
			}
			if err := setOption(&items[len(items)-1], text); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			continue
		}
		fields := strings.Fields(text)
		if len(fields) > 2 {
			return nil, fmt.Errorf("line %d: want URL [NAME], got %d fields (a name with spaces cannot be given here)", n, len(fields))
		}
		it := Item{URL: fields[0]}
		if len(fields) == 2 {
			it.Name = fields[1]
		}
		if err := checkURL(it.URL); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the input file: %w", err)
	}
	return items, nil
}

// ReadInputFile reads the input file at name ("-": standard input) with
// ParseInputFile; its errors name the file.
func ReadInputFile(name string) ([]Item, error) {
	r := io.Reader(os.Stdin)
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("input file: %w", err)
		}
		defer f.Close()
		r = f
	}
	items, err := ParseInputFile(r)
	if err != nil {
		return nil, fmt.Errorf("input file %s: %w", name, err)
	}
	return items, nil
}

// setOption applies an indented option line to it.
func setOption(it *Item, text string) error {
	key, value, ok := strings.Cut(text, "=")
	switch {
	case !ok || value == "":
		return fmt.Errorf("option %q: want KEY=VALUE (out=NAME, checksum=ALG=HEX)", text)
	case key == "out":
		it.Name = value
	case key == "checksum":
		d, err := ParseChecksum(value)
		if err != nil {
			return err
		}
		it.Checksum = d
	default:
		return fmt.Errorf("option %q: unknown (out, checksum)", key)
	}
	return nil
}

// IsURL reports whether loc names a file of this store: an http:// or
// https:// URL (scheme in any case), as a store registry asks.
func IsURL(loc string) bool {
	scheme, _, ok := strings.Cut(loc, "://")
	return ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https"))
}

// checkURL refuses a URL that is not http:// or https:// with a host.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%s: not a URL", Redact(raw))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%s: not an http:// or https:// URL", Redact(raw))
	case u.Host == "":
		return fmt.Errorf("%s: no host", Redact(raw))
	}
	return nil
}
