package s3store

import (
	"errors"
	"fmt"
	"strings"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// StatusError is an error answer from S3: an HTTP status and S3's error
// code ("SlowDown", "NoSuchKey", ...). It is where S3's vocabulary is
// turned into the behaviours the engine reads: Retriable, Throttle,
// SkipReason, and the engine's sentinels transfer.ErrNotFound and
// transfer.ErrModified through Unwrap.
type StatusError struct {
	Status  int
	Code    string
	Message string
}

func (e *StatusError) Error() string {
	switch {
	case e.Status == 412 || e.Code == "PreconditionFailed":
		return fmt.Sprintf("%s (%d %s)", transfer.ErrModified, e.Status, e.Code)
	case e.Code != "" && e.Message != "":
		return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
	case e.Code != "":
		return fmt.Sprintf("%d %s", e.Status, e.Code)
	default:
		return fmt.Sprintf("http status %d", e.Status)
	}
}

// Retriable reports whether the request may succeed if sent again.
func (e *StatusError) Retriable() bool {
	switch e.Code {
	case "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "RequestTimeTooSkewed":
		return true
	case "NoSuchKey", "NoSuchBucket", "AccessDenied", "ExpiredToken", "InvalidObjectState",
		"PreconditionFailed", "InvalidAccessKeyId", "SignatureDoesNotMatch":
		return false
	}
	switch e.Status {
	case 500, 502, 503, 504, 408, 429:
		return true
	}
	return false
}

// SkipReason says why an object is skipped rather than failed: one in an
// archive storage class must be restored before it can be read.
func (e *StatusError) SkipReason() string {
	if e.Code == "InvalidObjectState" {
		return "archived (InvalidObjectState): restore the object first"
	}
	return ""
}

// Throttle reports whether the server asked the client to slow down.
func (e *StatusError) Throttle() bool {
	return e.Code == "SlowDown" || e.Status == 503 || e.Status == 429
}

// NoSuchBucket reports whether err is S3's answer that the bucket does
// not exist: a missing object under it is no prefix either.
func NoSuchBucket(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == "NoSuchBucket"
}

// Unwrap maps the answers that mean "not there" to transfer.ErrNotFound
// and a failed If-Match to transfer.ErrModified.
func (e *StatusError) Unwrap() error {
	if e.Status == 404 || e.Code == "NoSuchKey" || e.Code == "NoSuchBucket" {
		return transfer.ErrNotFound
	}
	if e.Status == 412 || e.Code == "PreconditionFailed" {
		return transfer.ErrModified
	}
	return nil
}

// statusError turns an SDK error into a *StatusError where the server
// answered, so the engine can classify it.
func statusError(err error) error {
	var ce *CertificateError
	if errors.As(err, &ce) {
		// One line, without the SDK's chain around it.
		return ce
	}
	if NoCredentials(err) {
		return withCredentials(err)
	}
	if errors.Is(err, transfer.ErrModified) {
		// The body the request was sending failed because its source
		// changed: that is the error (the SDK's wrapping says only
		// that the request was not sent), and it is permanent.
		return transfer.Permanent(innermost(err, transfer.ErrModified))
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	if re.HTTPStatusCode() == 0 {
		// No answer: the request was not sent or its connection broke.
		// The cause is the error ("http status 0" says nothing), and
		// the engine classifies it (a reset is retried).
		return err
	}
	se := &StatusError{Status: re.HTTPStatusCode()}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		se.Code, se.Message = ae.ErrorCode(), ae.ErrorMessage()
	}
	if se.Code == "" {
		se.Code = codeOfStatus(se.Status)
	}
	if isRedirect(se.Status) && re.Response != nil {
		h := re.Response.Header
		return &RedirectError{Status: se.Status, Location: h.Get("Location"), Region: h.Get("X-Amz-Bucket-Region"), Err: se}
	}
	return se
}

// innermost is the deepest error in err's chain that is target, so a
// message starts at the cause, not at the layers that passed it on.
func innermost(err, target error) error {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if errors.Is(e, target) {
					next = e
					break
				}
			}
		}
		if next == nil || !errors.Is(next, target) {
			return err
		}
		err = next
	}
}

func codeOfStatus(status int) string {
	switch status {
	case 403:
		return "AccessDenied"
	case 404:
		return "NotFound"
	case 412:
		return "PreconditionFailed"
	case 503:
		return "SlowDown"
	}
	return ""
}

// ErrNoCredentials reports that no credentials were found to sign a
// request with.
var ErrNoCredentials = errors.New("no AWS credentials found: run `aws configure`, set AWS_PROFILE, or use --no-sign-request")

// credentialsError is a failed credentials lookup: it reads as
// ErrNoCredentials and keeps the SDK's chain for --log-level debug.
type credentialsError struct{ err error }

func (e credentialsError) Error() string   { return ErrNoCredentials.Error() }
func (e credentialsError) Unwrap() []error { return []error{ErrNoCredentials, e.err} }
func (e credentialsError) Retriable() bool { return false }

// NoCredentials reports whether err is a failed credentials lookup, from
// s3pd's own signer or the SDK's.
func NoCredentials(err error) bool {
	if errors.Is(err, ErrNoCredentials) {
		return true
	}
	var se *v4.SigningError
	return errors.As(err, &se) && strings.Contains(se.Error(), "retrieve credentials")
}

// withCredentials rewrites a failed credentials lookup as ErrNoCredentials.
func withCredentials(err error) error {
	if err != nil && !errors.Is(err, ErrNoCredentials) && NoCredentials(err) {
		return credentialsError{fmt.Errorf("%w", err)}
	}
	return err
}
