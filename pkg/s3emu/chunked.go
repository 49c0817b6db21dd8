package s3emu

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// aws-chunked request bodies (SigV4 streaming uploads): the body is a
// series of "HEXSIZE[;chunk-signature=SIG]\r\nDATA\r\n" chunks, ended by a
// zero-size chunk and, in the trailer forms, trailing headers (the
// checksum, maybe a trailer signature) and an empty line. S3 stores the
// decoded bytes; so does the emulator. Signatures are not checked, as no
// signature is anywhere in the emulator.

// maxChunkLine bounds a chunk header or trailer line.
const maxChunkLine = 4 << 10

// isAWSChunked reports whether a request body is aws-chunked: its
// x-amz-content-sha256 names a streaming payload, or its Content-Encoding
// says aws-chunked and x-amz-decoded-content-length gives the length
// (a client may name aws-chunked in Content-Encoding of a plain body).
func isAWSChunked(h http.Header) bool {
	if strings.HasPrefix(h.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		return true
	}
	if h.Get("X-Amz-Decoded-Content-Length") == "" {
		return false
	}
	for _, e := range strings.Split(h.Get("Content-Encoding"), ",") {
		if strings.TrimSpace(e) == "aws-chunked" {
			return true
		}
	}
	return false
}

// dropChunkedEncoding removes aws-chunked from Content-Encoding: it names
// the upload's framing, not the object's encoding, and S3 does not store it.
func dropChunkedEncoding(h http.Header) {
	if h.Get("Content-Encoding") == "" {
		return
	}
	var enc []string
	for _, e := range strings.Split(h.Get("Content-Encoding"), ",") {
		if e = strings.TrimSpace(e); e != "" && e != "aws-chunked" {
			enc = append(enc, e)
		}
	}
	h.Del("Content-Encoding")
	if len(enc) > 0 {
		h.Set("Content-Encoding", strings.Join(enc, ", "))
	}
}

// chunkedBody decodes an aws-chunked body. It reads the framing after a
// chunk's data as soon as the data is consumed, so the read that returns
// the last byte also returns io.EOF and the trailers are known by then.
type chunkedBody struct {
	br       *bufio.Reader
	want     int64 // x-amz-decoded-content-length
	n        int64 // decoded bytes returned
	left     int64 // data bytes left in the current chunk
	started  bool
	done     bool
	err      error
	trailers http.Header
}

func newChunkedBody(r io.Reader, decoded int64) *chunkedBody {
	return &chunkedBody{br: bufio.NewReaderSize(r, 64<<10), want: decoded, trailers: http.Header{}}
}

func (c *chunkedBody) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if !c.started {
		c.started = true
		if c.err = c.next(false); c.err != nil {
			return 0, c.err
		}
	}
	if c.done {
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	c.n += int64(n)
	switch {
	case c.n > c.want:
		c.err = incompleteBody(fmt.Sprintf("the aws-chunked body holds more than the %d bytes x-amz-decoded-content-length gives", c.want))
	case err == io.EOF:
		c.err = incompleteBody("the aws-chunked body ends inside a chunk")
	case err != nil:
		c.err = err
	case c.left == 0:
		c.err = c.next(true)
	}
	if c.err != nil {
		return n, c.err
	}
	if c.done {
		return n, io.EOF
	}
	return n, nil
}

// next reads the framing up to the next chunk's data: the CRLF that ends
// the previous chunk (after is true), the next chunk's header and, after
// the last chunk, the trailers. It sets done after the last chunk.
func (c *chunkedBody) next(after bool) error {
	if after {
		if line, err := c.line(); err != nil || line != "" {
			return malformedChunk("a chunk's data is not followed by CRLF")
		}
	}
	line, err := c.line()
	if err != nil {
		return malformedChunk("a chunk header is missing")
	}
	sz, _, _ := strings.Cut(line, ";")
	size, err := strconv.ParseInt(strings.TrimSpace(sz), 16, 64)
	if err != nil || size < 0 {
		return malformedChunk(fmt.Sprintf("bad chunk size %q", sz))
	}
	if size > 0 {
		c.left = size
		return nil
	}
	if err := c.readTrailers(); err != nil {
		return err
	}
	c.done = true
	if c.n != c.want {
		return incompleteBody(fmt.Sprintf("the aws-chunked body holds %d bytes, x-amz-decoded-content-length gives %d", c.n, c.want))
	}
	return nil
}

// readTrailers reads "name:value" lines up to an empty line or the end of
// the body.
func (c *chunkedBody) readTrailers() error {
	for {
		line, err := c.line()
		if err == io.EOF && line == "" || err == nil && line == "" {
			return nil
		}
		if err != nil && err != io.EOF {
			return malformedChunk("a trailer line is cut short")
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return &apiError{http.StatusBadRequest, "MalformedTrailerError", fmt.Sprintf("the trailer line %q is not name:value", line)}
		}
		c.trailers.Set(strings.TrimSpace(name), strings.TrimSpace(value))
		if err == io.EOF {
			return nil
		}
	}
}

// line reads one CRLF- (or LF-) terminated line without its terminator;
// at the end of the body it returns what is left and io.EOF.
func (c *chunkedBody) line() (string, error) {
	b, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull || len(b) > maxChunkLine {
		return "", malformedChunk("a chunk header or trailer line is too long")
	}
	if err != nil && err != io.EOF {
		return "", err
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if err == io.EOF {
		if len(b) == 0 {
			return "", io.EOF
		}
		return string(b), io.EOF
	}
	return string(b), nil
}

func malformedChunk(msg string) error {
	return &apiError{http.StatusBadRequest, "IncompleteBody", "malformed aws-chunked body: " + msg}
}

func incompleteBody(msg string) error {
	return &apiError{http.StatusBadRequest, "IncompleteBody", msg}
}

// decodeUpload replaces an aws-chunked request body with its decoded
// bytes and rewrites the headers gofakes3 reads (Content-Length,
// x-amz-content-sha256, Content-Encoding) to those of a plain upload of
// them. It returns the decoder (nil for a plain body) and the trailer
// that carries the body's checksum, if the request names one.
func decodeUpload(r *http.Request) (*chunkedBody, string, error) {
	if !isAWSChunked(r.Header) {
		dropChunkedEncoding(r.Header)
		return nil, "", nil
	}
	dl := r.Header.Get("X-Amz-Decoded-Content-Length")
	if dl == "" {
		return nil, "", &apiError{http.StatusLengthRequired, "MissingContentLength", "an aws-chunked upload needs x-amz-decoded-content-length"}
	}
	decoded, err := strconv.ParseInt(dl, 10, 64)
	if err != nil || decoded < 0 {
		return nil, "", &apiError{http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("x-amz-decoded-content-length %q is not a length", dl)}
	}
	trailer := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Amz-Trailer")))
	if trailer != "" && !strings.HasPrefix(trailer, "x-amz-checksum-") {
		return nil, "", &apiError{http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("x-amz-trailer %q names no checksum", trailer)}
	}
	cb := newChunkedBody(r.Body, decoded)
	r.Body = bodyCloser{cb, r.Body}
	r.ContentLength = decoded
	h := r.Header
	h.Set("Content-Length", strconv.FormatInt(decoded, 10))
	h.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	dropChunkedEncoding(h)
	for _, k := range []string{"X-Amz-Decoded-Content-Length", "X-Amz-Trailer"} {
		h.Del(k)
	}
	return cb, trailer, nil
}
