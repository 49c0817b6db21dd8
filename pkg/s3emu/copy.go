package s3emu

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// storedPrefix carries, through gofakes3's metadata (which keeps only
// X-Amz-* headers and three others), the headers S3 stores that gofakes3
// drops; the emulator replays them under their own names.
const storedPrefix = "X-Amz-S3emu-"

// keptHeaders are the headers S3 stores with an object that gofakes3
// does not.
var keptHeaders = []string{"Cache-Control", "Content-Language", "Expires"}

// keepHeaders renames an upload's keptHeaders so gofakes3 stores them.
func keepHeaders(h http.Header) {
	for _, k := range keptHeaders {
		if v := h.Get(k); v != "" {
			h.Set(storedPrefix+k, v)
		}
	}
}

// uploadMeta returns the metadata gofakes3 stores for an upload with
// headers h, as its own handler would make it.
func uploadMeta(h http.Header) map[string]string {
	meta := map[string]string{}
	for k, v := range h {
		if len(v) == 0 {
			continue
		}
		switch {
		case strings.HasPrefix(k, "X-Amz-Meta-"), k == "Content-Type", k == "Content-Disposition", k == "Content-Encoding":
			meta[k] = v[0]
		}
	}
	for _, k := range keptHeaders {
		if v := h.Get(k); v != "" {
			meta[storedPrefix+k] = v
		}
	}
	return meta
}

// copyObject handles CopyObject: the source's x-amz-copy-source-if-*
// conditions, x-amz-metadata-directive (COPY keeps the source's
// metadata, REPLACE takes the request's), and S3's refusal of a copy
// onto itself that changes nothing.
func (s *Server) copyObject(w *respWriter, r *http.Request, bucket, key string) error {
	sb, sk, err := parseCopySource(r.Header.Get("X-Amz-Copy-Source"))
	if err != nil {
		return err
	}
	if ok, _ := s.backend.b.BucketExists(bucket); !ok && !(s.synth != nil && bucket == DefaultBucket) {
		return gofakes3.BucketNotFound(bucket)
	}
	st := s.storeFor(sb)
	m, err := st.stat(sb, sk)
	if err != nil {
		return err
	}
	cond := m
	if IsDirectoryBucket(sb) {
		cond.ETag = opaqueETag(m.ETag) // what the client was shown
	}
	if err := copySourceConditions(r.Header, cond); err != nil {
		return err
	}
	directive := strings.ToUpper(r.Header.Get("X-Amz-Metadata-Directive"))
	switch directive {
	case "", "COPY", "REPLACE":
	default:
		return &apiError{http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("Unknown metadata directive %q", directive)}
	}
	if sb == bucket && sk == key && directive != "REPLACE" && r.Header.Get("X-Amz-Storage-Class") == "" {
		return &apiError{http.StatusBadRequest, "InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes."}
	}
	if err := s.checkConditions(r, bucket, key); err != nil {
		return err
	}
	meta := uploadMeta(r.Header)
	if directive != "REPLACE" {
		meta = map[string]string{}
		for k, v := range m.Header {
			meta[k] = v
		}
		for k, v := range m.Header {
			for _, kept := range keptHeaders {
				if k == kept {
					delete(meta, k)
					meta[storedPrefix+k] = v
				}
			}
		}
	}
	s.tombstones(bucket, key, func(k string) {
		if _, ok := meta[k]; !ok {
			meta[k] = tombstone
		}
	})
	now := time.Now().UTC()
	meta["Last-Modified"] = now.Format(http.TimeFormat)
	var body io.ReadCloser = io.NopCloser(strings.NewReader(""))
	if m.Size > 0 {
		if body, err = st.open(sb, sk, 0, m.Size); err != nil {
			return err
		}
	}
	defer body.Close()
	vr := newVerifyingReader(body, m.Size, "", "")
	if _, err := s.backend.b.PutObject(bucket, key, meta, vr, m.Size, nil); err != nil {
		return err
	}
	obj, err := s.backend.b.HeadObject(bucket, key)
	if err != nil {
		return err
	}
	obj.Contents.Close()
	etag := gofakes3.FormatETag(obj.Hash)
	s.backend.remember(bucket, key, &sideEntry{hashHex: strings.Trim(etag, `"`), etag: etag, algorithm: AlgCRC64NVME, value: vr.value()})
	return writeXML(w, &struct {
		XMLName           xml.Name `xml:"CopyObjectResult"`
		Xmlns             string   `xml:"xmlns,attr"`
		ETag              string
		LastModified      string
		ChecksumCRC64NVME string
		ChecksumType      string
	}{Xmlns: "http://s3.amazonaws.com/doc/2006-03-01/", ETag: etag, LastModified: now.Format("2006-01-02T15:04:05.000Z"),
		ChecksumCRC64NVME: vr.value(), ChecksumType: TypeFullObject})
}

// maxDeleteKeys is the most keys one DeleteObjects may name.
const maxDeleteKeys = 1000

// deleteMulti handles DeleteObjects, refusing more than 1,000 keys as S3
// does, then lets gofakes3 delete them.
func (s *Server) deleteMulti(w *respWriter, r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCompleteBody))
	if err != nil {
		return fmt.Errorf("delete objects: read body: %w", err)
	}
	var in struct {
		Objects []struct{ Key string } `xml:"Object"`
	}
	if err := xml.Unmarshal(body, &in); err != nil || len(in.Objects) > maxDeleteKeys {
		return &apiError{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."}
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	s.fake.ServeHTTP(w, r)
	return nil
}

// serveObjectACL answers GetObjectAcl: the emulator's owner has
// FULL_CONTROL of every object.
func (s *Server) serveObjectACL(w *respWriter, r *http.Request, bucket, key string) error {
	if _, err := s.storeFor(bucket).stat(bucket, key); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, xml.Header+`<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Owner><ID>`+emulatorOwnerID+`</ID><DisplayName>s3emu</DisplayName></Owner>`+
		`<AccessControlList><Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID>`+emulatorOwnerID+`</ID><DisplayName>s3emu</DisplayName></Grantee><Permission>FULL_CONTROL</Permission></Grant></AccessControlList></AccessControlPolicy>`)
	return nil
}

// tombstone is the value of a stored header the object no longer has.
// gofakes3's memory backend carries an object's metadata over to the
// object that replaces it (S3 does not), unless the new one has the key:
// a tombstone is that key, skipped when headers are replayed. "\x00"
// cannot come in an HTTP header.
const tombstone = "\x00"

// tombstones calls mark with each stored header of bucket/key that a
// replacing object must not inherit.
func (s *Server) tombstones(bucket, key string, mark func(k string)) {
	obj, err := s.backend.b.HeadObject(bucket, key)
	if err != nil {
		return
	}
	obj.Contents.Close()
	for k := range obj.Metadata {
		if replayedHeader(k) || strings.HasPrefix(k, storedPrefix) {
			mark(k)
		}
	}
}
