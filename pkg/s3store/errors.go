package s3store

import (
	"errors"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// statusError turns an SDK error into the engine's *transfer.StatusError
// where the server answered, so the engine can classify it.
func statusError(err error) error {
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
