package s3emu

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Framing faults: an object GET answered with the right bytes but framed
// as some S3-compatible servers and proxies frame them.

// NoClamp answers a range whose end lies past the object's end with 416
// InvalidRange, where S3 clamps the range to the object.
type NoClamp struct{}

// Chunked sends the body with chunked transfer encoding and no
// Content-Length.
type Chunked struct{}

// CloseBody sends the body without Content-Length or chunking, delimited
// by closing the connection (as an HTTP/1.0 server does).
type CloseBody struct{}

func (NoClamp) isAction()   {}
func (Chunked) isAction()   {}
func (CloseBody) isAction() {}

func (NoClamp) String() string   { return "noclamp" }
func (Chunked) String() string   { return "chunked" }
func (CloseBody) String() string { return "closebody" }

// parseFramingAction parses the framing faults' text forms; ok is false
// for a name that is not one of them.
func parseFramingAction(name string, _ []string) (a Action, ok bool, err error) {
	switch name {
	case "noclamp":
		return NoClamp{}, true, nil
	case "chunked":
		return Chunked{}, true, nil
	case "closebody":
		return CloseBody{}, true, nil
	}
	return nil, false, nil
}

// pastEnd reports whether a Range header "bytes=A-B" asks for bytes past
// the end of an object of size bytes.
func pastEnd(rng string, size int64) bool {
	spec, ok := strings.CutPrefix(strings.TrimSpace(rng), "bytes=")
	if !ok {
		return false
	}
	_, b, ok := strings.Cut(spec, "-")
	if !ok || b == "" {
		return false
	}
	last, err := strconv.ParseInt(b, 10, 64)
	return err == nil && last >= size
}

// writeCloseDelimited takes the connection over and writes the response
// with the headers already set on w but no Content-Length, then body's n
// bytes, then closes the connection.
func writeCloseDelimited(w http.ResponseWriter, status int, body io.Reader, n int64) int64 {
	h := w.Header().Clone()
	h.Del("Content-Length")
	h.Set("Connection", "close")
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return 0
	}
	defer conn.Close()
	bw := rw.Writer
	fmt.Fprintf(bw, "HTTP/1.0 %d %s\r\n", status, http.StatusText(status))
	h.Write(bw)
	bw.WriteString("\r\n")
	var sent int64
	if body != nil {
		sent, _ = io.CopyN(bw, body, n)
	}
	bw.Flush()
	return sent
}
