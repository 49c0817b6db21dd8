package s3emu

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/johannesboyne/gofakes3"
)

// MinPartSize is S3's smallest part but the last of a multipart upload.
const MinPartSize = 5 << 20

// Checksum types, as S3 names them.
const (
	TypeFullObject = "FULL_OBJECT"
	TypeComposite  = "COMPOSITE"
)

// upload is what the emulator keeps of a multipart upload besides what
// gofakes3 keeps: its checksum algorithm and type and each part's size
// and checksum, so Complete can check them and answer as S3 does.
type upload struct {
	alg, ctype string // "" when created without a checksum algorithm

	mu    sync.Mutex
	parts map[int]partInfo
	// done is Complete's answer once completed: S3 answers a repeated
	// Complete the same while the object stands.
	done *completeResult
}

type partInfo struct {
	size     int64
	checksum string // base64, in the upload's algorithm ("" without one)
}

// uploads are the multipart uploads in progress or completed.
type uploads struct {
	m sync.Map // uploadID -> *upload
}

func (u *uploads) get(id string) *upload {
	if v, ok := u.m.Load(id); ok {
		return v.(*upload)
	}
	return nil
}

func (up *upload) setPart(n int, p partInfo) {
	up.mu.Lock()
	up.parts[n] = p
	up.mu.Unlock()
}

// createUpload handles CreateMultipartUpload: gofakes3 makes the upload,
// the emulator remembers its checksum algorithm and type and answers
// them as S3 does.
func (s *Server) createUpload(w *respWriter, r *http.Request) error {
	alg := strings.ToUpper(r.Header.Get("X-Amz-Checksum-Algorithm"))
	ctype := strings.ToUpper(r.Header.Get("X-Amz-Checksum-Type"))
	if alg != "" && newHash(alg) == nil {
		return &apiError{http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("Checksum algorithm %q is not supported", alg)}
	}
	switch {
	case alg == "" && ctype != "":
		return &apiError{http.StatusBadRequest, "InvalidRequest", "x-amz-checksum-type needs x-amz-checksum-algorithm"}
	case ctype == "" && alg == AlgCRC64NVME:
		ctype = TypeFullObject
	case ctype == "" && alg != "":
		ctype = TypeComposite
	case ctype == TypeFullObject && (alg == AlgSHA1 || alg == AlgSHA256):
		return &apiError{http.StatusBadRequest, "InvalidRequest", "The " + alg + " checksum is not supported with FULL_OBJECT"}
	case ctype == TypeComposite && alg == AlgCRC64NVME:
		return &apiError{http.StatusBadRequest, "InvalidRequest", "The CRC64NVME checksum is supported only with FULL_OBJECT"}
	case ctype != "" && ctype != TypeFullObject && ctype != TypeComposite:
		return &apiError{http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("x-amz-checksum-type %q: want FULL_OBJECT or COMPOSITE", ctype)}
	}
	for _, h := range []string{"X-Amz-Checksum-Algorithm", "X-Amz-Checksum-Type"} {
		r.Header.Del(h) // gofakes3 would store them as metadata
	}
	keepHeaders(r.Header)
	dropChunkedEncoding(r.Header)
	rec := &recorder{header: http.Header{}}
	s.fake.ServeHTTP(rec, r)
	if rec.ok() {
		var res struct{ UploadId string }
		if xml.Unmarshal(rec.body.Bytes(), &res) == nil && res.UploadId != "" {
			s.uploads.m.Store(res.UploadId, &upload{alg: alg, ctype: ctype, parts: map[int]partInfo{}})
		}
		if alg != "" {
			rec.header.Set("X-Amz-Checksum-Algorithm", alg)
			rec.header.Set("X-Amz-Checksum-Type", ctype)
		}
	}
	return replay(w, rec)
}

type completedPart struct {
	PartNumber        int
	ETag              string
	ChecksumCRC64NVME string
	ChecksumCRC32C    string
	ChecksumCRC32     string
	ChecksumSHA1      string
	ChecksumSHA256    string
}

func (p completedPart) checksum(alg string) string {
	switch alg {
	case AlgCRC64NVME:
		return p.ChecksumCRC64NVME
	case AlgCRC32C:
		return p.ChecksumCRC32C
	case AlgCRC32:
		return p.ChecksumCRC32
	case AlgSHA1:
		return p.ChecksumSHA1
	case AlgSHA256:
		return p.ChecksumSHA256
	}
	return ""
}

// etagElement is an ETag element of a CompleteMultipartUpload body.
var etagElement = regexp.MustCompile(`<ETag>([^<]*)</ETag>`)

// maxCompleteBody bounds a CompleteMultipartUpload body (10,000 parts of
// a few hundred bytes each).
const maxCompleteBody = 8 << 20

// checkComplete reads a CompleteMultipartUpload body, checks the parts'
// sizes (each but the last at least Options.MinPartSize), the total
// against x-amz-mp-object-size and the parts' checksums against those
// uploaded, and puts the body back for gofakes3. It returns the parts
// listed with their sizes.
func (s *Server) checkComplete(r *http.Request, up *upload, opaque bool) ([]completedPart, []partInfo, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCompleteBody))
	if err != nil {
		return nil, nil, fmt.Errorf("complete upload: read body: %w", err)
	}
	if opaque {
		// A directory bucket's part ETags were answered opaque.
		body = etagElement.ReplaceAllFunc(body, func(el []byte) []byte {
			v := etagElement.FindSubmatch(el)[1]
			v = bytes.ReplaceAll(bytes.ReplaceAll(v, []byte("&#34;"), []byte(`"`)), []byte("&quot;"), []byte(`"`))
			return []byte("<ETag>" + opaqueETag(string(v)) + "</ETag>")
		})
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		Parts []completedPart `xml:"Part"`
	}
	if err := xml.Unmarshal(body, &in); err != nil || len(in.Parts) == 0 {
		return nil, nil, &apiError{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	last := 0
	for _, cp := range in.Parts {
		last = max(last, cp.PartNumber)
	}
	var total int64
	infos := make([]partInfo, 0, len(in.Parts))
	for _, cp := range in.Parts {
		p, ok := up.parts[cp.PartNumber]
		if !ok {
			return nil, nil, &apiError{http.StatusBadRequest, "InvalidPart", fmt.Sprintf("One or more of the specified parts could not be found: part %d", cp.PartNumber)}
		}
		if cp.PartNumber != last && s.opts.MinPartSize > 0 && p.size < s.opts.MinPartSize {
			return nil, nil, &apiError{http.StatusBadRequest, "EntityTooSmall",
				fmt.Sprintf("Your proposed upload is smaller than the minimum allowed object size: part %d is %d bytes, the minimum is %d", cp.PartNumber, p.size, s.opts.MinPartSize)}
		}
		if up.alg != "" {
			if got := cp.checksum(up.alg); got != "" && got != p.checksum {
				return nil, nil, &apiError{http.StatusBadRequest, "InvalidPart", fmt.Sprintf("The %s of part %d is not the one uploaded", strings.ToLower(up.alg), cp.PartNumber)}
			}
		}
		total += p.size
		infos = append(infos, p)
	}
	if v := r.Header.Get("X-Amz-Mp-Object-Size"); v != "" {
		want, err := strconv.ParseInt(v, 10, 64)
		if err != nil || want < 0 {
			return nil, nil, &apiError{http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("x-amz-mp-object-size %q is not a size", v)}
		}
		if want != total {
			return nil, nil, &apiError{http.StatusBadRequest, "InvalidRequest",
				fmt.Sprintf("The provided 'x-amz-mp-object-size' header value %d does not match what was computed: %d", want, total)}
		}
	}
	return in.Parts, infos, nil
}

// objectChecksum is the checksum of a completed upload: for a
// COMPOSITE one, the checksum of the parts' checksums with "-N"; for a
// FULL_OBJECT one (and CRC64NVME when the upload named none), that of
// the object's bytes, read back.
func (s *Server) objectChecksum(up *upload, parts []partInfo, bucket, key string) (alg, ctype, value string, err error) {
	alg, ctype = up.alg, up.ctype
	if alg == "" {
		alg, ctype = AlgCRC64NVME, TypeFullObject
	}
	if ctype == TypeComposite {
		h := newHash(alg)
		for _, p := range parts {
			raw, err := base64.StdEncoding.DecodeString(p.checksum)
			if err != nil {
				return "", "", "", fmt.Errorf("composite checksum: part checksum %q: %w", p.checksum, err)
			}
			h.Write(raw)
		}
		return alg, ctype, base64.StdEncoding.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(parts)), nil
	}
	obj, err := s.backend.b.GetObject(bucket, key, nil)
	if err != nil {
		return "", "", "", err
	}
	defer obj.Contents.Close()
	h := newHash(alg)
	if _, err := io.Copy(h, obj.Contents); err != nil {
		return "", "", "", err
	}
	return alg, ctype, base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// completeResult is CompleteMultipartUploadResult with the object's
// checksum, as S3 answers it.
type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Location string
	Bucket   string
	Key      string
	ETag     string
	attrChecksum
}

// completeUpload handles CompleteMultipartUpload: it checks the parts,
// lets gofakes3 join them and, for the memory backend, remembers the
// multipart ETag, the object's checksum and its parts, which the answer
// carries. A repeated Complete of a completed upload whose object still
// stands gets the same answer, as on S3.
func (s *Server) completeUpload(w *respWriter, r *http.Request, bucket, key string) error {
	uploadID := r.URL.Query().Get("uploadId")
	up := s.uploads.get(uploadID)
	if up == nil {
		return gofakes3.ErrorMessage(gofakes3.ErrNoSuchUpload, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
	}
	if res := up.done; res != nil {
		if m, err := s.backend.stat(bucket, key); err == nil && m.ETag == res.ETag {
			return writeXML(w, res)
		}
	}
	if err := s.checkConditions(r, bucket, key); err != nil {
		return err
	}
	_, infos, err := s.checkComplete(r, up, w.opaque)
	if err != nil {
		return err
	}
	if up.ctype == TypeComposite {
		// The checksum of the parts' checksums is known before joining.
		_, _, sum, err := s.objectChecksum(up, infos, bucket, key)
		if err != nil {
			return err
		}
		if want := r.Header.Get(ChecksumHeader(up.alg)); want != "" && want != sum {
			return badDigest(up.alg)
		}
	}
	wantSums := map[string]string{}
	for _, a := range checksumAlgorithms {
		wantSums[a] = r.Header.Get(ChecksumHeader(a))
		r.Header.Del(ChecksumHeader(a)) // checked here: gofakes3 would store them
	}
	rec := &recorder{header: http.Header{}}
	s.fake.ServeHTTP(rec, r)
	var res completeResult
	if !rec.ok() || xml.Unmarshal(rec.body.Bytes(), &res) != nil || res.ETag == "" || s.discard != nil {
		return replay(w, rec)
	}
	alg, ctype, sum, err := s.objectChecksum(up, infos, bucket, key)
	if err != nil {
		return err
	}
	if want := wantSums[alg]; want != "" && want != sum {
		s.backend.b.DeleteObject(bucket, key)
		return badDigest(alg)
	}
	obj, err := s.backend.b.HeadObject(bucket, key)
	if err != nil {
		return err
	}
	obj.Contents.Close()
	sizes := make([]int64, len(infos))
	sums := make([]string, len(infos))
	for i, p := range infos {
		sizes[i], sums[i] = p.size, p.checksum
	}
	s.backend.remember(bucket, key, &sideEntry{hashHex: hex.EncodeToString(obj.Hash), etag: res.ETag, algorithm: alg, value: sum,
		ctype: ctype, partSizes: sizes, partSums: sums})
	res.Xmlns = "http://s3.amazonaws.com/doc/2006-03-01/"
	res.set(alg, sum)
	res.ChecksumType = ctype
	up.done = &res
	copyHeader(w.Header(), rec.header)
	w.Header().Del("Content-Length")
	return writeXML(w, &res)
}

// writeXML answers 200 with v as an XML document.
func writeXML(w *respWriter, v any) error {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, xml.Header)
	return xml.NewEncoder(w).Encode(v)
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
