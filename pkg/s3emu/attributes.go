package s3emu

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
)

// objectAttributes is GetObjectAttributes' answer.
type objectAttributes struct {
	XMLName      xml.Name         `xml:"GetObjectAttributesResponse"`
	Xmlns        string           `xml:"xmlns,attr"`
	ETag         string           `xml:",omitempty"`
	Checksum     *attrChecksum    `xml:",omitempty"`
	ObjectParts  *attrObjectParts `xml:",omitempty"`
	StorageClass string           `xml:",omitempty"`
	ObjectSize   *int64           `xml:",omitempty"`
}

type attrChecksum struct {
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumCRC32C    string `xml:",omitempty"`
	ChecksumCRC32     string `xml:",omitempty"`
	ChecksumSHA1      string `xml:",omitempty"`
	ChecksumSHA256    string `xml:",omitempty"`
	ChecksumType      string `xml:",omitempty"`
}

func (c *attrChecksum) set(alg, v string) {
	switch alg {
	case AlgCRC64NVME:
		c.ChecksumCRC64NVME = v
	case AlgCRC32C:
		c.ChecksumCRC32C = v
	case AlgCRC32:
		c.ChecksumCRC32 = v
	case AlgSHA1:
		c.ChecksumSHA1 = v
	case AlgSHA256:
		c.ChecksumSHA256 = v
	}
}

type attrObjectParts struct {
	PartsCount           int
	PartNumberMarker     int
	NextPartNumberMarker int
	MaxParts             int
	IsTruncated          bool
	Parts                []attrPart `xml:"Part"`
}

type attrPart struct {
	PartNumber        int
	Size              int64
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumCRC32C    string `xml:",omitempty"`
	ChecksumCRC32     string `xml:",omitempty"`
	ChecksumSHA1      string `xml:",omitempty"`
	ChecksumSHA256    string `xml:",omitempty"`
}

// serveAttributes answers GetObjectAttributes (GET ?attributes) with the
// attributes x-amz-object-attributes names: ETag (unquoted), Checksum,
// ObjectParts (multipart objects only, paged by max-parts and
// part-number-marker), StorageClass and ObjectSize.
func (s *Server) serveAttributes(w *respWriter, r *http.Request, bucket, key string) error {
	m, err := s.storeFor(bucket).stat(bucket, key)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, v := range r.Header.Values("X-Amz-Object-Attributes") {
		for _, a := range strings.Split(v, ",") {
			want[strings.TrimSpace(a)] = true
		}
	}
	if len(want) == 0 {
		return &apiError{http.StatusBadRequest, "InvalidArgument", "x-amz-object-attributes names no attribute"}
	}
	res := objectAttributes{Xmlns: "http://s3.amazonaws.com/doc/2006-03-01/"}
	if want["ETag"] {
		res.ETag = strings.Trim(m.ETag, `"`)
	}
	if want["Checksum"] && m.Algorithm != "" && !s.opts.NoChecksums {
		if v := m.checksum(); v != "" {
			c := &attrChecksum{ChecksumType: checksumType(m)}
			c.set(m.Algorithm, v)
			res.Checksum = c
		}
	}
	if want["ObjectParts"] && len(m.PartSizes) > 0 {
		res.ObjectParts = objectParts(m, r)
	}
	if want["StorageClass"] {
		res.StorageClass = "STANDARD"
	}
	if want["ObjectSize"] {
		res.ObjectSize = &m.Size
	}
	w.Header().Set("Last-Modified", m.LastModified.UTC().Format(http.TimeFormat))
	return writeXML(w, &res)
}

// objectParts lists a multipart object's parts from part-number-marker,
// at most max-parts (default 1,000).
func objectParts(m objectMeta, r *http.Request) *attrObjectParts {
	maxParts := 1000
	if v, err := strconv.Atoi(r.Header.Get("X-Amz-Max-Parts")); err == nil && v >= 0 {
		maxParts = min(v, 1000)
	}
	marker, _ := strconv.Atoi(r.Header.Get("X-Amz-Part-Number-Marker"))
	op := &attrObjectParts{PartsCount: len(m.PartSizes), PartNumberMarker: marker, MaxParts: maxParts}
	for i := marker; i < len(m.PartSizes); i++ {
		if len(op.Parts) == maxParts {
			op.IsTruncated = true
			break
		}
		p := attrPart{PartNumber: i + 1, Size: m.PartSizes[i]}
		if i < len(m.PartSums) && m.PartSums[i] != "" {
			switch m.Algorithm {
			case AlgCRC64NVME:
				p.ChecksumCRC64NVME = m.PartSums[i]
			case AlgCRC32C:
				p.ChecksumCRC32C = m.PartSums[i]
			case AlgCRC32:
				p.ChecksumCRC32 = m.PartSums[i]
			case AlgSHA1:
				p.ChecksumSHA1 = m.PartSums[i]
			case AlgSHA256:
				p.ChecksumSHA256 = m.PartSums[i]
			}
		}
		op.Parts = append(op.Parts, p)
		op.NextPartNumberMarker = i + 1
	}
	return op
}
