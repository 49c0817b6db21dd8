package cmd

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/s3store"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// jsonSchema names the version of the --json lines; docs/JSON.md defines
// every field. A change that removes or renames a field bumps it.
const jsonSchema = "s3pd/1"

// Line types: the value of every line's "type".
const (
	lineObject   = "object"
	lineDelete   = "delete"
	lineInterval = "interval"
	lineSummary  = "summary"
	lineError    = "error"
)

// Object statuses: the value of an object line's "status".
const (
	statusOK            = "ok"
	statusFailed        = "failed"
	statusSkipped       = "skipped"
	statusWouldTransfer = "would-transfer"
	statusInterrupted   = "interrupted"
)

// header starts every line.
type header struct {
	Schema string `json:"schema"`
	Type   string `json:"type"`
}

func newHeader(typ string) header { return header{Schema: jsonSchema, Type: typ} }

// objectLine is one --json line per object that reached a verdict.
type objectLine struct {
	header
	Key              string   `json:"key"`
	Name             string   `json:"name"`
	Destination      string   `json:"destination,omitempty"`
	Size             int64    `json:"size"`
	Bytes            int64    `json:"bytes"`
	Status           string   `json:"status"`
	Reason           string   `json:"reason,omitempty"`
	Verification     string   `json:"verification,omitempty"`
	Checksums        []string `json:"checksums,omitempty"`
	Unverified       string   `json:"unverified,omitempty"`
	UnverifiedDetail string   `json:"unverified_detail,omitempty"`
	ResumedBytes     int64    `json:"resumed_bytes,omitempty"`
	Error            string   `json:"error,omitempty"`
	ErrorCode        string   `json:"error_code,omitempty"`
	HTTPStatus       int      `json:"http_status,omitempty"`
	Seconds          float64  `json:"seconds"`
	BytesPerSecond   float64  `json:"bytes_per_second"`
}

// deleteLine is one --json line per file removed by --delete.
type deleteLine struct {
	header
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	DryRun bool   `json:"dry_run,omitempty"`
}

// errorLine is the --json line of a run that ended in an error before or
// instead of a summary.
type errorLine struct {
	header
	Error      string `json:"error"`
	ErrorCode  string `json:"error_code"`
	HTTPStatus int    `json:"http_status,omitempty"`
	ExitCode   int    `json:"exit_code"`
}

func writeJSONLine(w io.Writer, v any) { json.NewEncoder(w).Encode(v) }

// Error codes of s3pd's own (an S3 error code such as NoSuchKey or
// AccessDenied is passed through as it is).
const (
	codeUsage       = "UsageError"
	codeCredentials = "NoCredentials"
	codeChecksum    = "ChecksumMismatch"
	codeModified    = "ObjectModified"
	codeNetwork     = "NetworkError"
	codeLocalIO     = "LocalIOError"
	codeInterrupted = "Interrupted"
	codeUnaccounted = "Unaccounted"
	codeOther       = "Error"
)

// isStatus reports whether err carries the server's answer.
func isStatus(err error) bool {
	_, _, ok := statusOf(err)
	return ok
}

// errorCode classifies err for the error_code and http_status fields.
func errorCode(err error) (string, int) {
	var nf *job.NotFoundError
	var ne net.Error
	var pe *os.PathError
	var ee *ExitError
	switch {
	case err == nil:
		return "", 0
	case errors.As(err, &nf):
		// Nothing there: as S3 says of a missing key, which scripts read.
		return "NoSuchKey", 404
	case isStatus(err):
		status, code, _ := statusOf(err)
		return cmp.Or(code, codeOther), status
	case errors.Is(err, transfer.ErrChecksum):
		return codeChecksum, 0
	case errors.Is(err, transfer.ErrModified):
		return codeModified, 0
	case errors.Is(err, context.Canceled):
		return codeInterrupted, 0
	case errors.Is(err, transfer.ErrUnaccounted):
		return codeUnaccounted, 0
	case s3store.NoCredentials(err):
		return codeCredentials, 0
	case errors.As(err, &pe):
		// Before net.Error, which *fs.PathError satisfies.
		return codeLocalIO, 0
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.As(err, &ne):
		return codeNetwork, 0
	case errors.As(err, &ee) && ee.Code == ExitUsage:
		return codeUsage, 0
	}
	return codeOther, 0
}
