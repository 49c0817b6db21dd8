package s3emu

import (
	"bufio"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const maxListKeys = 1000

// emulatorOwnerID is the owner of every bucket and object.
const emulatorOwnerID = "s3emu"

type listContent struct {
	Key, LastModified, ETag, ChecksumAlgorithm string
	Size                                       int64
}

// listResult is a ListBucketResult (V1 or V2). It is written by hand:
// encoding/xml's reflection costs more than everything else in a listing.
type listResult struct {
	Name, Prefix, Delimiter, EncodingType string
	MaxKeys                               int
	V2                                    bool
	KeyCount                              int
	IsTruncated                           bool
	Marker, NextMarker                    string
	ContinuationToken, NextToken          string
	StartAfter                            string
	// hasToken: the request named a continuation-token, maybe empty.
	hasToken bool
	// Owner puts each object's owner in the listing (V1 always, V2 with
	// fetch-owner=true).
	Owner bool
	// Versions makes it a ListVersionsResult of an unversioned bucket:
	// every object is its one version, "null"; Marker is the key-marker.
	Versions       bool
	Contents       []listContent
	CommonPrefixes []string
	// emptyNextToken writes an empty NextContinuationToken element (a
	// listing fault).
	emptyNextToken bool
}

func (res *listResult) writeTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	// el writes one element; most values need no escaping, and skipping
	// xml.EscapeText for them halves the cost of a page.
	el := func(name, v string) {
		bw.WriteByte('<')
		bw.WriteString(name)
		bw.WriteByte('>')
		escapeText(bw, v)
		bw.WriteString("</")
		bw.WriteString(name)
		bw.WriteByte('>')
	}
	root := "ListBucketResult"
	if res.Versions {
		root = "ListVersionsResult"
	}
	bw.WriteString(xml.Header)
	bw.WriteString(`<` + root + ` xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`)
	el("Name", res.Name)
	el("Prefix", res.Prefix)
	if res.Delimiter != "" {
		el("Delimiter", res.Delimiter)
	}
	el("MaxKeys", strconv.Itoa(res.MaxKeys))
	if res.EncodingType != "" {
		el("EncodingType", res.EncodingType)
	}
	el("IsTruncated", strconv.FormatBool(res.IsTruncated))
	if res.V2 {
		el("KeyCount", strconv.Itoa(res.KeyCount))
		if res.ContinuationToken != "" || res.hasToken {
			el("ContinuationToken", res.ContinuationToken)
		}
		if res.NextToken != "" || res.emptyNextToken {
			el("NextContinuationToken", res.NextToken)
		}
		if res.StartAfter != "" {
			el("StartAfter", res.StartAfter)
		}
	} else if res.Versions {
		el("KeyMarker", res.Marker)
		el("VersionIdMarker", "")
		if res.NextMarker != "" {
			el("NextKeyMarker", res.NextMarker)
			el("NextVersionIdMarker", "null")
		}
	} else {
		el("Marker", res.Marker)
		if res.NextMarker != "" {
			el("NextMarker", res.NextMarker)
		}
	}
	item := "Contents"
	if res.Versions {
		item = "Version"
	}
	for _, c := range res.Contents {
		bw.WriteString("<" + item + ">")
		el("Key", c.Key)
		if res.Versions {
			el("VersionId", "null")
			el("IsLatest", "true")
		}
		el("LastModified", c.LastModified)
		el("ETag", c.ETag)
		if c.ChecksumAlgorithm != "" {
			el("ChecksumAlgorithm", c.ChecksumAlgorithm)
			el("ChecksumType", "FULL_OBJECT")
		}
		el("Size", strconv.FormatInt(c.Size, 10))
		el("StorageClass", "STANDARD")
		if res.Versions || res.Owner {
			bw.WriteString("<Owner><ID>" + emulatorOwnerID + "</ID><DisplayName>s3emu</DisplayName></Owner>")
		}
		bw.WriteString("</" + item + ">")
	}
	for _, p := range res.CommonPrefixes {
		bw.WriteString("<CommonPrefixes>")
		el("Prefix", p)
		bw.WriteString("</CommonPrefixes>")
	}
	bw.WriteString("</" + root + ">")
	return bw.Flush()
}

// escapeText writes v as XML character data, as xml.EscapeText does,
// without converting it to bytes: printable ASCII (every key and ETag a
// test makes, quotes included) in one pass, the rest through EscapeText.
func escapeText(bw *bufio.Writer, v string) {
	start := 0
	for i := 0; i < len(v); i++ {
		var esc string
		switch c := v[i]; {
		case c == '"':
			esc = "&#34;"
		case c == '\'':
			esc = "&#39;"
		case c == '&':
			esc = "&amp;"
		case c == '<':
			esc = "&lt;"
		case c == '>':
			esc = "&gt;"
		case c < 0x20 || c >= 0x7f:
			bw.WriteString(v[start:i])
			xml.EscapeText(bw, []byte(v[i:]))
			return
		default:
			continue
		}
		bw.WriteString(v[start:i])
		bw.WriteString(esc)
		start = i + 1
	}
	bw.WriteString(v[start:])
}

// serveList answers ListObjects and ListObjectsV2. It walks the bucket's
// keys from the marker and stops after max-keys entries, so a synthetic
// listing costs O(page) whatever the dataset's size.
func (s *Server) serveList(w *respWriter, r *http.Request, bucket string, q url.Values, fault Action) error {
	st := s.storeFor(bucket)
	v2 := q.Get("list-type") == "2"
	prefix, delim := q.Get("prefix"), q.Get("delimiter")
	maxKeys := maxListKeys
	if s.opts.MaxKeys > 0 {
		maxKeys = s.opts.MaxKeys
	}
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return &apiError{http.StatusBadRequest, "InvalidArgument", "max-keys must be a non-negative integer"}
		}
		maxKeys = min(n, maxKeys)
	}
	directory := IsDirectoryBucket(bucket)
	if directory {
		if err := directoryListRule(prefix, delim); err != nil {
			return err
		}
	}
	versions := q.Has("versions")
	var marker string
	if versions {
		marker = q.Get("key-marker")
	} else if v2 {
		marker = q.Get("start-after")
		if tok := q.Get("continuation-token"); tok != "" {
			b, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil {
				return &apiError{http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect"}
			}
			marker = string(b)
		}
	} else {
		marker = q.Get("marker")
	}
	it, err := st.list(bucket, prefix)
	if err != nil {
		return err
	}

	res := listResult{Name: bucket, Prefix: prefix, Delimiter: delim, MaxKeys: maxKeys, V2: v2 && !versions, Versions: versions,
		Owner: !v2 || q.Get("fetch-owner") == "true", hasToken: q.Has("continuation-token")}
	enc := func(s string) string { return s }
	if q.Get("encoding-type") == "url" {
		res.EncodingType = "url"
		enc = urlEncodeKey
		res.Delimiter = enc(delim)
		if res.V2 {
			res.Prefix = enc(prefix) // V1 sends its Prefix as given, as S3 does
		}
	}

	// Start after the marker; a marker inside a rolled-up common prefix
	// skips the whole prefix.
	from := prefix
	if marker >= from {
		from = marker + "\x00"
		if delim != "" && strings.HasPrefix(marker, prefix) {
			if i := strings.Index(marker[len(prefix):], delim); i >= 0 {
				from = max(from, successor(marker[:len(prefix)+i+len(delim)]))
			}
		}
	}
	it.seekGE(from)
	if maxKeys == 0 {
		it = &sliceIter{} // max-keys=0: an empty page, not truncated (as S3)
	}
	var last string
	count := 0
	res.Contents = make([]listContent, 0, min(maxKeys, maxListKeys))
	var lastTime time.Time // objects mostly share a date: format it once
	var lastMod string
	for {
		e, ok := it.next()
		if !ok {
			break
		}
		if !strings.HasPrefix(e.Key, prefix) {
			if e.Key > prefix {
				break
			}
			continue
		}
		if delim != "" {
			if i := strings.Index(e.Key[len(prefix):], delim); i >= 0 {
				cp := e.Key[:len(prefix)+i+len(delim)]
				if count == maxKeys {
					res.IsTruncated = true
					break
				}
				res.CommonPrefixes = append(res.CommonPrefixes, enc(cp))
				count++
				last = cp
				it.seekGE(successor(cp))
				continue
			}
		}
		if count == maxKeys {
			res.IsTruncated = true
			break
		}
		if !e.LastModified.Equal(lastTime) || lastMod == "" {
			lastTime, lastMod = e.LastModified, e.LastModified.UTC().Format("2006-01-02T15:04:05.000Z")
		}
		if s.opts.NoChecksums {
			e.Algorithm = ""
		}
		c := listContent{Key: enc(e.Key), LastModified: lastMod, ETag: e.ETag, Size: e.Size, ChecksumAlgorithm: e.Algorithm}
		res.Contents = append(res.Contents, c)
		count++
		last = e.Key
	}
	if res.V2 {
		res.KeyCount = count
		res.ContinuationToken = q.Get("continuation-token")
		res.StartAfter = enc(q.Get("start-after"))
		if res.IsTruncated {
			res.NextToken = base64.RawURLEncoding.EncodeToString([]byte(last))
		}
		applyListFault(&res, fault, q.Get("continuation-token"))
	} else {
		res.Marker = enc(marker)
		if res.IsTruncated {
			res.NextMarker = enc(last)
		}
	}
	if directory {
		unorder(&res)
		for i := range res.Contents {
			res.Contents[i].ETag = opaqueETag(res.Contents[i].ETag)
		}
	}
	w.Header().Set("Content-Type", "application/xml")
	return res.writeTo(w)
}

// successor returns the least string greater than every string that
// starts with p.
func successor(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return "\xff\xff\xff\xff" // p is all 0xff: nothing follows in practice
}

// urlEncodeKey encodes a key for a listing with encoding-type=url as S3
// does: percent-encoding with spaces as %20 and "/" left as it is.
func urlEncodeKey(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(url.QueryEscape(s), "+", "%20"), "%2F", "/")
}
