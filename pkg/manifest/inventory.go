package manifest

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// inventoryManifest is what s3pd reads of an S3 Inventory manifest.json.
type inventoryManifest struct {
	SourceBucket      string `json:"sourceBucket"`
	DestinationBucket string `json:"destinationBucket"` // arn:aws:s3:::NAME
	FileFormat        string `json:"fileFormat"`
	FileSchema        string `json:"fileSchema"`
	Files             []struct {
		Key string `json:"key"`
	} `json:"files"`
}

// inventory reads an S3 Inventory: its manifest.json from br, then each
// of its gzipped CSV files in order.
func (l *Lister) inventory(ctx context.Context, br *bufio.Reader, add func(transfer.Object) error) error {
	var m inventoryManifest
	if err := json.NewDecoder(io.LimitReader(br, 256<<20)).Decode(&m); err != nil {
		return &LineError{Location: l.opts.Location, Line: 1, Err: fmt.Errorf("inventory manifest.json: %w", err)}
	}
	if !strings.EqualFold(m.FileFormat, "CSV") {
		return fmt.Errorf("manifest %s: inventory format %q: s3pd reads CSV inventories", l.opts.Location, m.FileFormat)
	}
	if m.SourceBucket != "" && m.SourceBucket != l.opts.Bucket {
		return fmt.Errorf("manifest %s: an inventory of bucket %s, not %s", l.opts.Location, m.SourceBucket, l.opts.Bucket)
	}
	cols, err := newColumns(m.FileSchema)
	if err != nil {
		return fmt.Errorf("manifest %s: %w", l.opts.Location, err)
	}
	for _, f := range m.Files {
		loc := l.dataLocation(m.DestinationBucket, f.Key)
		if err := l.inventoryFile(ctx, loc, cols, add); err != nil {
			return err
		}
	}
	return nil
}

// dataLocation is where one of the inventory's CSV files is: in its
// destination bucket when the manifest was read from S3; for a local
// manifest, where an inventory copied with its layout has it (data/NAME
// beside the dated folder that holds manifest.json), else beside it.
func (l *Lister) dataLocation(destARN, key string) string {
	if strings.HasPrefix(l.opts.Location, "s3://") {
		bucket := destARN[strings.LastIndex(destARN, ":")+1:]
		return "s3://" + bucket + "/" + key
	}
	dir := "."
	if l.opts.Location != "-" {
		dir = filepath.Dir(l.opts.Location)
	}
	laid := filepath.Join(filepath.Dir(dir), "data", path.Base(key))
	if _, err := os.Stat(laid); err == nil {
		return laid
	}
	return filepath.Join(dir, path.Base(key))
}

// columns are the positions of the inventory fields s3pd reads (-1 when
// the inventory does not have them).
type columns struct {
	n                                                                  int
	bucket, key, size, etag, modTime, latest, deleteMarker, class, alg int
}

func newColumns(schema string) (columns, error) {
	c := columns{bucket: -1, key: -1, size: -1, etag: -1, modTime: -1, latest: -1, deleteMarker: -1, class: -1, alg: -1}
	fields := strings.Split(schema, ",")
	c.n = len(fields)
	for i, f := range fields {
		switch strings.TrimSpace(f) {
		case "Bucket":
			c.bucket = i
		case "Key":
			c.key = i
		case "Size":
			c.size = i
		case "ETag":
			c.etag = i
		case "LastModifiedDate":
			c.modTime = i
		case "IsLatest":
			c.latest = i
		case "IsDeleteMarker":
			c.deleteMarker = i
		case "StorageClass":
			c.class = i
		case "ChecksumAlgorithm":
			c.alg = i
		}
	}
	if c.key < 0 {
		return c, fmt.Errorf("inventory schema %q has no Key", schema)
	}
	return c, nil
}

// inventoryFile reads one gzipped CSV file of an inventory.
func (l *Lister) inventoryFile(ctx context.Context, loc string, cols columns, add func(transfer.Object) error) error {
	rc, err := l.opts.Open(ctx, loc)
	if err != nil {
		return fmt.Errorf("inventory file %s: %w", loc, err)
	}
	defer rc.Close()
	zr, err := gzip.NewReader(bufio.NewReaderSize(rc, 1<<20))
	if err != nil {
		return fmt.Errorf("inventory file %s: %w", loc, err)
	}
	cr := csv.NewReader(zr)
	cr.FieldsPerRecord = cols.n
	cr.ReuseRecord = true
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &LineError{Location: loc, Line: line, Err: err}
		}
		o, ok, err := l.row(rec, cols)
		if err != nil {
			return &LineError{Location: loc, Line: line, Err: err}
		}
		if !ok {
			continue
		}
		if err := add(o); err != nil {
			return err
		}
	}
}

// row reads one inventory row; ok is false for rows that are not
// transferred: other buckets, keys outside the prefix, versions that are
// not the latest, delete markers.
func (l *Lister) row(rec []string, c columns) (o transfer.Object, ok bool, err error) {
	field := func(i int) string {
		if i < 0 {
			return ""
		}
		return rec[i]
	}
	if b := field(c.bucket); b != "" && b != l.opts.Bucket {
		return o, false, nil
	}
	if field(c.latest) == "false" || field(c.deleteMarker) == "true" {
		return o, false, nil
	}
	key, err := url.QueryUnescape(rec[c.key])
	if err != nil {
		return o, false, fmt.Errorf("key %q: %w", rec[c.key], err)
	}
	name, ok := strings.CutPrefix(key, l.opts.Prefix)
	if !ok || name == "" {
		return o, false, nil
	}
	o = transfer.Object{Key: key, Name: name, Size: -1, StorageClass: field(c.class), ChecksumAlgorithm: field(c.alg)}
	if s := field(c.size); s != "" {
		if o.Size, err = strconv.ParseInt(s, 10, 64); err != nil || o.Size < 0 {
			return o, false, fmt.Errorf("size %q of %q", s, key)
		}
	}
	if e := field(c.etag); e != "" {
		o.ETag = e
		if !strings.HasPrefix(e, `"`) {
			o.ETag = `"` + e + `"`
		}
	}
	if t := field(c.modTime); t != "" {
		if o.ModTime, err = time.Parse(time.RFC3339Nano, t); err != nil {
			return o, false, fmt.Errorf("last modified %q of %q: %w", t, key, err)
		}
	}
	return o, true, nil
}
