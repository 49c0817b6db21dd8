package s3store

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// An upload journal records a multipart upload s3pd started and the
// parts S3 acknowledged, so that a run interrupted in any way (an
// interrupt, a kill, a lost connection) is resumed by the next run of
// the same command: that run lists the upload's parts, keeps those the
// journal and the listing agree on, sends the rest and completes it. It
// is one file per destination object, UploadOptions.JournalDir/HASH.upload
// (HASH names the endpoint, bucket and key): a JSON header line, then one
// JSON line per part acknowledged. Lines are appended as parts are
// acknowledged, without a sync: a journal that lost its last lines only
// has those parts sent again, and every line is checked against the
// upload's own listing before a part is kept. A journal of a stream
// (standard input, which cannot be read twice) names only its upload,
// which the next run aborts.

// journalHeader is the first line of an upload journal.
type journalHeader struct {
	Magic    string `json:"s3pd_upload"`
	Endpoint string `json:"endpoint,omitempty"`
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	UploadID string `json:"upload_id"`
	// Source identifies the bytes uploaded (a file's device, inode,
	// size and modification time; an object's ETag): a rerun whose
	// source differs aborts the upload and starts again.
	Source    string `json:"source,omitempty"`
	Size      int64  `json:"size"`
	PartSize  int64  `json:"part_size"`
	Algorithm string `json:"algorithm"`
	// Stream: the upload is of a stream, which cannot be resumed.
	Stream bool `json:"stream,omitempty"`
}

// journalPart is one part S3 acknowledged.
type journalPart struct {
	Part int32  `json:"part"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
	// Sum is the part's checksum of the bytes sent (base64, the upload's
	// algorithm); Echoed says S3's answer carried it.
	Sum    string `json:"sum"`
	Echoed bool   `json:"echoed,omitempty"`
}

const journalMagic = "1"

// uploadJournal is the open journal of one upload.
type uploadJournal struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

// journalPath is where the journal of key lives ("" without a JournalDir).
func (u *UploadSink) journalPath(key string) string {
	if u.opts.JournalDir == "" {
		return ""
	}
	h := sha256.Sum256([]byte(aws.ToString(u.client.Options().BaseEndpoint) + "\x00" + u.bucket + "\x00" + key))
	return filepath.Join(u.opts.JournalDir, hex.EncodeToString(h[:16])+".upload")
}

// readJournal reads the journal of key: its header and parts by number.
// A journal that is missing, unreadable or of another object reads as
// none.
func (u *UploadSink) readJournal(key string) (*journalHeader, map[int32]journalPart) {
	p := u.journalPath(key)
	if p == "" {
		return nil, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var h journalHeader
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &h) != nil || h.Magic != journalMagic || h.Bucket != u.bucket || h.Key != key {
		return nil, nil
	}
	parts := map[int32]journalPart{}
	for sc.Scan() {
		var jp journalPart
		if json.Unmarshal(sc.Bytes(), &jp) != nil {
			break // a line cut short by a crash: the parts after it are sent again
		}
		parts[jp.Part] = jp
	}
	return &h, parts
}

// startJournal starts the journal of a new upload, replacing any. A
// journal that cannot be written (a cache directory on a read-only disk)
// costs the upload its journal, not the object: Report is told, and the
// upload goes on without one (nil), as without a JournalDir.
func (u *UploadSink) startJournal(h journalHeader) *uploadJournal {
	j, err := u.createJournal(h)
	if err != nil {
		u.report(fmt.Sprintf("no journal for the upload of %s: %v", u.url(h.Key), err))
		return nil
	}
	return j
}

// createJournal starts the journal of a new upload, replacing any.
func (u *UploadSink) createJournal(h journalHeader) (*uploadJournal, error) {
	p := u.journalPath(h.Key)
	if p == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("upload journal: %w", err)
	}
	h.Magic, h.Bucket, h.Endpoint = journalMagic, u.bucket, aws.ToString(u.client.Options().BaseEndpoint)
	line, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("upload journal: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return nil, fmt.Errorf("upload journal %s: %w", p, err)
	}
	return &uploadJournal{path: p, f: f}, nil
}

// reopenJournal opens the journal of a resumed upload to append to it.
func (u *UploadSink) reopenJournal(key string) *uploadJournal {
	p := u.journalPath(key)
	if p == "" {
		return nil
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return &uploadJournal{path: p, f: f}
}

// add records a part S3 acknowledged. A journal that cannot be written
// only costs a rerun that part.
func (j *uploadJournal) add(p journalPart) {
	if j == nil {
		return
	}
	line, err := json.Marshal(p)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		j.f.Write(append(line, '\n'))
	}
}

// close closes the journal and keeps it, for the next run.
func (j *uploadJournal) close() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		j.f.Close()
		j.f = nil
	}
}

// remove closes and removes the journal: the upload completed or was
// aborted.
func (j *uploadJournal) remove() {
	if j == nil {
		return
	}
	j.close()
	if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
}

// removeJournal removes the journal of key, if any.
func (u *UploadSink) removeJournal(key string) {
	if p := u.journalPath(key); p != "" {
		os.Remove(p)
	}
}
