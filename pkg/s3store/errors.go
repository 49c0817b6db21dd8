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

// statusError turns an SDK error into the engine's *transfer.StatusError
// where the server answered, so the engine can classify it.
func statusError(err error) error {
	if NoCredentials(err) {
		return withCredentials(err)
	}
	if errors.Is(err, transfer.ErrModified) {
		// The body the request was sending failed because its source
		// changed: that is the error, and it is permanent.
		return transfer.Permanent(err)
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	se := &transfer.StatusError{Status: re.HTTPStatusCode()}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		se.Code, se.Message = ae.ErrorCode(), ae.ErrorMessage()
	}
	if se.Code == "" {
		se.Code = codeOfStatus(se.Status)
	}
	return se
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
