package s3emu

import (
	"bytes"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"

	"github.com/minio/crc64nvme"
)

// MinPartSize is S3's smallest part but the last of a multipart upload.
const MinPartSize = 5 << 20

// partSizes remembers the size of every part uploaded, so Complete can
// check them as S3 does (gofakes3 keeps no sizes it will tell).
type partSizes struct {
	m sync.Map // uploadID + "/" + partNumber -> int64
}

func (p *partSizes) put(uploadID, part string, size int64) { p.m.Store(uploadID+"/"+part, size) }

func (p *partSizes) get(uploadID string, part int) (int64, bool) {
	v, ok := p.m.Load(uploadID + "/" + strconv.Itoa(part))
	if !ok {
		return 0, false
	}
	return v.(int64), true
}

func (p *partSizes) forget(uploadID string, parts []completedPart) {
	for _, cp := range parts {
		p.m.Delete(uploadID + "/" + strconv.Itoa(cp.PartNumber))
	}
}

type completedPart struct {
	PartNumber int
	ETag       string
}

// maxCompleteBody bounds a CompleteMultipartUpload body (10,000 parts of
// about 100 bytes each).
const maxCompleteBody = 4 << 20

// checkComplete reads a CompleteMultipartUpload body, checks the parts'
// sizes (each but the last at least Options.MinPartSize) and the total
// against x-amz-mp-object-size, and puts the body back for gofakes3. It
// returns the parts listed.
func (s *Server) checkComplete(r *http.Request, uploadID string) ([]completedPart, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCompleteBody))
	if err != nil {
		return nil, fmt.Errorf("complete upload %s: read body: %w", uploadID, err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		Parts []completedPart `xml:"Part"`
	}
	if err := xml.Unmarshal(body, &in); err != nil {
		return nil, &apiError{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."}
	}
	var total int64
	known := true
	for i, cp := range in.Parts {
		size, ok := s.parts.get(uploadID, cp.PartNumber)
		if !ok {
			known = false
			continue
		}
		total += size
		if i < len(in.Parts)-1 && s.opts.MinPartSize > 0 && size < s.opts.MinPartSize {
			return nil, &apiError{http.StatusBadRequest, "EntityTooSmall",
				fmt.Sprintf("Your proposed upload is smaller than the minimum allowed object size: part %d is %d bytes, the minimum is %d", cp.PartNumber, size, s.opts.MinPartSize)}
		}
	}
	if v := r.Header.Get("X-Amz-Mp-Object-Size"); v != "" && known {
		want, err := strconv.ParseInt(v, 10, 64)
		if err != nil || want < 0 {
			return nil, &apiError{http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("x-amz-mp-object-size %q is not a size", v)}
		}
		if want != total {
			return nil, &apiError{http.StatusBadRequest, "InvalidRequest",
				fmt.Sprintf("The provided 'x-amz-mp-object-size' header value %d does not match what was computed: %d", want, total)}
		}
	}
	return in.Parts, nil
}

// completeResult is CompleteMultipartUploadResult with the object's
// full-object checksum, as S3 answers it.
type completeResult struct {
	XMLName           xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns             string   `xml:"xmlns,attr"`
	Location          string
	Bucket            string
	Key               string
	ETag              string
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumType      string `xml:",omitempty"`
}

// completeUpload handles CompleteMultipartUpload: it checks the parts,
// lets gofakes3 join them and, for the memory backend, remembers the
// multipart ETag and the object's CRC64NVME, which the answer carries.
func (s *Server) completeUpload(w *respWriter, r *http.Request, bucket, key string) error {
	uploadID := r.URL.Query().Get("uploadId")
	parts, err := s.checkComplete(r, uploadID)
	if err != nil {
		return err
	}
	rec := &recorder{header: http.Header{}}
	s.fake.ServeHTTP(rec, r)
	var res completeResult
	if rec.status == 0 || rec.status == http.StatusOK {
		s.parts.forget(uploadID, parts)
		if xml.Unmarshal(rec.body.Bytes(), &res) != nil || res.ETag == "" || s.discard != nil {
			return replay(w, rec)
		}
	} else {
		return replay(w, rec)
	}
	obj, err := s.backend.b.GetObject(bucket, key, nil)
	if err != nil {
		return replay(w, rec)
	}
	defer obj.Contents.Close()
	h := crc64nvme.New()
	if _, err := io.Copy(h, obj.Contents); err != nil {
		return replay(w, rec)
	}
	sum := crc64Value(h.Sum64())
	s.backend.remember(bucket, key, &sideEntry{hashHex: hex.EncodeToString(obj.Hash), etag: res.ETag, algorithm: AlgCRC64NVME, value: sum})
	res.Xmlns = "http://s3.amazonaws.com/doc/2006-03-01/"
	res.ChecksumCRC64NVME, res.ChecksumType = sum, "FULL_OBJECT"
	copyHeader(w.Header(), rec.header)
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, xml.Header)
	return xml.NewEncoder(w).Encode(res)
}

// replay sends what gofakes3 answered.
func replay(w *respWriter, rec *recorder) error {
	copyHeader(w.Header(), rec.header)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	w.WriteHeader(rec.status)
	_, err := w.Write(rec.body.Bytes())
	return err
}

func copyHeader(dst, src http.Header) {
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		dst[k] = src[k]
	}
}
