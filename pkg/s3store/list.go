package s3store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// ErrBadListing reports a listing the server broke (a truncated page
// with no continuation token, a token seen before): a fault of the
// server, not of the command line, even when it comes before any object.
var ErrBadListing = errors.New("bad listing")

// listPage is what s3pd reads of one ListObjectsV2 page.
type listPage struct {
	truncated bool
	next      string // NextContinuationToken
	contents  []listEntry
	prefixes  []string // CommonPrefixes, with a delimiter
	// encoded: the page says its keys are URL-encoded (EncodingType
	// url), as asked; a server that ignores the parameter sends them
	// literally, and they are taken as they are.
	encoded bool
}

// listEntry is one <Contents> element.
type listEntry struct {
	key, etag, storageClass, checksumAlgorithm string
	size                                       int64
	modTime                                    time.Time
	// err is a field that could not be read: it fails this object, not
	// the listing.
	err error
}

// listing pages through ListObjectsV2 as plain signed GETs: the SDK's
// XML deserializer costs about 22 us of CPU per key (a million keys, 22
// CPU-seconds), and parsePage a few.
type listing struct {
	get    *getter
	req    Request
	prefix string
	// delimiter, when set, rolls keys up into common prefixes.
	delimiter string
	pageSize  int32
	stall     time.Duration // a page silent this long is asked again (0: never)
	onRetry   func(attempt int, err error)
	backoff   transfer.Backoff // paces a page's tries (zero: the list page budget)
	buf       bytes.Buffer     // the page being read, reused
	page      listPage         // the page last parsed, reused
}

// maxPageBytes bounds one listing page.
const maxPageBytes = 64 << 20

// next fetches the page after token ("" for the first), retrying errors
// worth retrying with capped exponential backoff and full jitter.
func (l *listing) next(ctx context.Context, token string) (*listPage, error) {
	q := url.Values{"list-type": {"2"}, "encoding-type": {"url"}}
	asked := listPrefix(l.get.bucket, l.prefix)
	if asked != "" {
		q.Set("prefix", asked)
	}
	if token != "" {
		q.Set("continuation-token", token)
	}
	if l.delimiter != "" {
		q.Set("delimiter", l.delimiter)
	}
	if l.pageSize > 0 {
		q.Set("max-keys", strconv.Itoa(int(l.pageSize)))
	}
	// S3 signs spaces as %20; Encode writes them as "+" (a literal
	// plus is %2B, so every "+" here is a space).
	u := l.get.bucketURL() + "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	attempt, b := 0, cmp.Or(l.backoff, transfer.BudgetFor(transfer.ListPage))
	err := b.Retry(ctx, func() error {
		attempt++
		err := l.fetch(ctx, u)
		switch {
		case err == nil:
		case token == "" && dialFailed(err):
			// The endpoint cannot be reached at all: say so now.
			return transfer.Permanent(err)
		case l.onRetry != nil && transfer.Retriable(err) && attempt < b.MaxAttempts:
			l.onRetry(attempt, err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if asked != l.prefix {
		// A directory bucket's parent listing (listPrefix): keep what
		// starts with the prefix.
		out := func(k string) bool { return !strings.HasPrefix(k, l.prefix) }
		l.page.contents = slices.DeleteFunc(l.page.contents, func(c listEntry) bool { return out(c.key) })
		l.page.prefixes = slices.DeleteFunc(l.page.prefixes, out)
	}
	return &l.page, nil
}

// pages calls fn with each page of the listing in order (see pagesFrom);
// name is the listing's URL, for messages.
func (l *listing) pages(ctx context.Context, name string, fn func(*listPage) error) error {
	p, err := l.next(ctx, "")
	if err != nil {
		return fmt.Errorf("list %s page 1: %w", name, err)
	}
	return l.pagesFrom(ctx, name, p, fn)
}

// pagesFrom calls fn with p, the first page, already fetched, and each
// page after it. A key listed twice (in one page, or at the end of one
// and the start of the next) reaches fn once; a truncated page without
// a continuation token, or a token seen before, ends the listing with an
// error rather than a silent gap or a loop. The page is reused: fn copies
// what it keeps; fn's errors are returned as they are.
func (l *listing) pagesFrom(ctx context.Context, name string, p *listPage, fn func(*listPage) error) error {
	token, last := "", ""
	seen := map[string]struct{}{}   // continuation tokens
	inPage := map[string]struct{}{} // keys of this page, and the last of the one before
	for page := 1; ; page++ {
		clear(inPage)
		if page > 1 {
			inPage[last] = struct{}{}
		}
		kept := p.contents[:0]
		for _, c := range p.contents {
			if _, twice := inPage[c.key]; twice {
				continue // listed twice: one object
			}
			inPage[c.key] = struct{}{}
			last = c.key
			kept = append(kept, c)
		}
		p.contents = kept
		if err := fn(p); err != nil {
			return err
		}
		if !p.truncated {
			return nil
		}
		if p.next == "" {
			return fmt.Errorf("list %s page %d: %w", name, page,
				transfer.Permanent(fmt.Errorf("%w: the page is truncated but carries no continuation token: the listing cannot be completed", ErrBadListing)))
		}
		if _, again := seen[p.next]; again || p.next == token {
			return fmt.Errorf("list %s page %d: %w", name, page,
				transfer.Permanent(fmt.Errorf("%w: the server repeated a continuation token: the listing would loop", ErrBadListing)))
		}
		seen[p.next] = struct{}{}
		token = p.next
		var err error
		if p, err = l.next(ctx, token); err != nil {
			return fmt.Errorf("list %s page %d: %w", name, page+1, err)
		}
	}
}

// fetch sends one request for a page and parses it into l.page.
func (l *listing) fetch(ctx context.Context, u string) error {
	ctx, w := startWatch(ctx, l.stall)
	resp, err := l.get.send(ctx, http.MethodGet, u, l.req, func(http.Header) {})
	if err != nil {
		return w.failed(err)
	}
	body := w.body(resp.Body, true)
	defer body.Close()
	l.buf.Reset()
	if _, err := l.buf.ReadFrom(io.LimitReader(body, maxPageBytes+1)); err != nil {
		return err
	}
	if l.buf.Len() > maxPageBytes {
		return transfer.Permanent(errors.New("listing page larger than 64 MiB"))
	}
	if err := parsePage(l.buf.Bytes(), &l.page); err != nil {
		return &transfer.BadResponseError{Msg: "listing: " + err.Error()}
	}
	return nil
}

// bucketURL is the URL of the bucket itself, for bucket-level requests:
// the object prefix without its trailing slash when the bucket is in the
// path ("https://host/bucket"), else the host's root.
func (g *getter) bucketURL() string {
	prefix := g.at.Load().prefix
	if g.pathStyle {
		return strings.TrimSuffix(prefix, "/")
	}
	return prefix
}

// parsePage reads a ListBucketResult document into p (its contents
// slice reused). It reads the elements s3pd uses and skips the rest;
// keys sent with EncodingType url are decoded.
func parsePage(doc []byte, p *listPage) error {
	*p = listPage{contents: p.contents[:0], prefixes: p.prefixes[:0]}
	x := xmlScanner{doc: doc}
	var path [4][]byte // the open elements, outermost first (in doc)
	depth := 0
	encoded := false
	var cur listEntry
	var memo pageMemo
	for {
		kind, name, err := x.next()
		if err != nil {
			return err
		}
		switch kind {
		case tokEOF:
			if depth != 0 {
				return errors.New("unexpected end of document")
			}
			p.encoded = encoded
			if encoded {
				for i := range p.contents {
					k, err := url.QueryUnescape(p.contents[i].key)
					if err != nil {
						return fmt.Errorf("url-encoded key %q: %w", p.contents[i].key, err)
					}
					p.contents[i].key = k
				}
				for i := range p.prefixes {
					k, err := url.QueryUnescape(p.prefixes[i])
					if err != nil {
						return fmt.Errorf("url-encoded prefix %q: %w", p.prefixes[i], err)
					}
					p.prefixes[i] = k
				}
			}
			return nil
		case tokStart:
			if depth == 0 && string(name) != "ListBucketResult" {
				return fmt.Errorf("document is a %s, not a ListBucketResult", name)
			}
			if depth < len(path) {
				path[depth] = name
			}
			depth++
			if depth == 2 && string(name) == "Contents" {
				cur = listEntry{}
			}
		case tokEnd:
			if depth == 0 || depth <= len(path) && !bytes.Equal(path[depth-1], name) {
				return fmt.Errorf("unexpected </%s>", name)
			}
			depth--
			if depth == 1 && string(name) == "Contents" {
				p.contents = append(p.contents, cur)
			}
		case tokText:
			if depth == 3 && string(path[1]) == "Contents" {
				if done, err := cur.setRaw(path[2], x.raw, &memo); done {
					if err != nil && cur.err == nil {
						cur.err = err
					}
					continue
				}
			}
			text, err := x.text()
			if err != nil {
				return err
			}
			switch {
			case depth == 2:
				switch string(path[1]) {
				case "IsTruncated":
					p.truncated = strings.TrimSpace(text) == "true"
				case "NextContinuationToken":
					p.next = text
				case "EncodingType":
					encoded = strings.TrimSpace(text) == "url"
				}
			case depth == 3 && string(path[1]) == "Contents":
				if err := cur.set(path[2], text); err != nil && cur.err == nil {
					cur.err = err
				}
			case depth == 3 && string(path[1]) == "CommonPrefixes" && string(path[2]) == "Prefix":
				p.prefixes = append(p.prefixes, text)
			}
		}
	}
}

// pageMemo holds the strings that the entries of a page mostly share (a
// storage class, a checksum algorithm): each is made once and reused
// while the next entry's bytes are the same, so a page costs no
// allocation per key for them.
type pageMemo struct {
	classRaw, algRaw []byte
	class, alg       string
}

// setRaw records a field of a <Contents> element straight from its raw
// character data, when that needs no string of its own: the size, the
// date in S3's form, and the shared strings of memo. It reports whether
// it handled the field.
func (e *listEntry) setRaw(field, raw []byte, memo *pageMemo) (bool, error) {
	if bytes.IndexByte(raw, '&') >= 0 {
		return false, nil
	}
	switch string(field) {
	case "Size":
		n, ok := parseSize(raw)
		if !ok {
			return false, nil // set reports the error
		}
		e.size = n
	case "LastModified":
		t, ok := parseListTime(raw)
		if !ok {
			return false, nil // set parses any other form, or reports it
		}
		e.modTime = t
	case "StorageClass":
		if memo.classRaw == nil || !bytes.Equal(raw, memo.classRaw) {
			memo.classRaw, memo.class = raw, string(raw)
		}
		e.storageClass = memo.class
	case "ChecksumAlgorithm":
		if e.checksumAlgorithm == "" {
			if memo.algRaw == nil || !bytes.Equal(raw, memo.algRaw) {
				memo.algRaw, memo.alg = raw, string(raw)
			}
			e.checksumAlgorithm = memo.alg
		}
	default:
		return false, nil
	}
	return true, nil
}

// parseListTime reads a date in the one form S3 lists them,
// 2006-01-02T15:04:05.000Z, without a string or time.Parse; false for
// anything else.
func parseListTime(raw []byte) (time.Time, bool) {
	if len(raw) != len("2006-01-02T15:04:05.000Z") || raw[4] != '-' || raw[7] != '-' || raw[10] != 'T' ||
		raw[13] != ':' || raw[16] != ':' || raw[19] != '.' || raw[23] != 'Z' {
		return time.Time{}, false
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, mo, d, h, mi, sec, ms := num(raw[0:4]), num(raw[5:7]), num(raw[8:10]), num(raw[11:13]), num(raw[14:16]), num(raw[17:19]), num(raw[20:23])
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 || ms < 0 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ms*int(time.Millisecond), time.UTC)
	if t.Day() != d {
		return time.Time{}, false // February 30th: time.Parse refuses it
	}
	return t, true
}

// parseSize reads a plain decimal size; false for anything else.
func parseSize(raw []byte) (int64, bool) {
	if len(raw) == 0 || len(raw) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// set records one field of a <Contents> element.
func (e *listEntry) set(field []byte, text string) error {
	switch string(field) {
	case "Key":
		e.key = text
	case "ETag":
		e.etag = text
	case "StorageClass":
		e.storageClass = text
	case "ChecksumAlgorithm":
		if e.checksumAlgorithm == "" {
			e.checksumAlgorithm = text
		}
	case "Size":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err == nil && n < 0 {
			err = errors.New("negative")
		}
		if err != nil {
			return fmt.Errorf("listed size %q: %w", text, err)
		}
		e.size = n
	case "LastModified":
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("listed last-modified %q: %w", text, err)
		}
		e.modTime = t
	}
	return nil
}

type token int

const (
	tokEOF token = iota
	tokStart
	tokEnd
	tokText
)

// xmlScanner splits an XML document into start tags, end tags and
// character data. It knows what S3's listings contain: no DTD, no
// namespaces that matter, no CDATA (refused rather than misread).
type xmlScanner struct {
	doc []byte
	pos int
	raw []byte // the character data last returned as tokText
	// pendingEnd is the end of a self-closing element, returned next.
	pendingEnd []byte
}

// next returns the next token: the element's name for tokStart and tokEnd.
// A self-closing element is returned as a start; the end follows.
func (x *xmlScanner) next() (token, []byte, error) {
	if x.pendingEnd != nil {
		name := x.pendingEnd
		x.pendingEnd = nil
		return tokEnd, name, nil
	}
	for x.pos < len(x.doc) {
		if x.doc[x.pos] != '<' {
			i := bytes.IndexByte(x.doc[x.pos:], '<')
			if i < 0 {
				i = len(x.doc) - x.pos
			}
			x.raw = x.doc[x.pos : x.pos+i]
			x.pos += i
			return tokText, nil, nil
		}
		rest := x.doc[x.pos:]
		switch {
		case len(rest) < 2 || rest[1] != '?' && rest[1] != '!':
			// an element's tag: the common case
		case bytes.HasPrefix(rest, []byte("<?")):
			i := bytes.Index(rest, []byte("?>"))
			if i < 0 {
				return 0, nil, errors.New("unterminated processing instruction")
			}
			x.pos += i + 2
			continue
		case bytes.HasPrefix(rest, []byte("<!--")):
			i := bytes.Index(rest[4:], []byte("-->"))
			if i < 0 {
				return 0, nil, errors.New("unterminated comment")
			}
			x.pos += 4 + i + 3
			continue
		case bytes.HasPrefix(rest, []byte("<!")):
			return 0, nil, errors.New("CDATA or DTD in a listing")
		}
		end := bytes.IndexByte(rest, '>')
		if end < 0 {
			return 0, nil, errors.New("unterminated tag")
		}
		tag := rest[1:end]
		x.pos += end + 1
		closing := len(tag) > 0 && tag[0] == '/'
		if closing {
			tag = tag[1:]
		}
		selfClosing := !closing && len(tag) > 0 && tag[len(tag)-1] == '/'
		if selfClosing {
			tag = tag[:len(tag)-1]
		}
		for i, c := range tag { // bytes.IndexAny costs more than the rest of a tag
			if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				tag = tag[:i] // attributes (xmlns) are not needed
				break
			}
		}
		if len(tag) == 0 {
			return 0, nil, errors.New("empty tag name")
		}
		if closing {
			return tokEnd, tag, nil
		}
		if selfClosing {
			x.pendingEnd = tag
		}
		return tokStart, tag, nil
	}
	return tokEOF, nil, nil
}

// text returns the character data last scanned, with entities decoded.
func (x *xmlScanner) text() (string, error) {
	if bytes.IndexByte(x.raw, '&') < 0 {
		return string(x.raw), nil
	}
	return unescapeXML(x.raw)
}

// unescapeXML decodes the predefined entities and character references.
func unescapeXML(raw []byte) (string, error) {
	var b strings.Builder
	b.Grow(len(raw))
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '&')
		if i < 0 {
			b.Write(raw)
			break
		}
		b.Write(raw[:i])
		raw = raw[i:]
		semi := bytes.IndexByte(raw, ';')
		if semi < 0 {
			return "", errors.New("unterminated entity")
		}
		ent := raw[1:semi]
		raw = raw[semi+1:]
		switch string(ent) { // no allocation: a switch on bytes
		case "amp":
			b.WriteByte('&')
		case "lt":
			b.WriteByte('<')
		case "gt":
			b.WriteByte('>')
		case "quot", "#34": // S3 writes &quot;, encoding/xml &#34;
			b.WriteByte('"')
		case "apos", "#39":
			b.WriteByte('\'')
		default:
			r, ok := charRef(ent)
			if !ok {
				return "", fmt.Errorf("unknown entity &%s;", ent)
			}
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

// charRef reads "#NNN" or "#xHHH".
func charRef(ent []byte) (rune, bool) {
	num, ok := bytes.CutPrefix(ent, []byte("#"))
	if !ok || len(num) == 0 {
		return 0, false
	}
	base := 10
	if h, ok := bytes.CutPrefix(num, []byte("x")); ok {
		num, base = h, 16
	}
	v, err := strconv.ParseUint(string(num), base, 32)
	if err != nil || v > 0x10FFFF {
		return 0, false
	}
	return rune(v), true
}
