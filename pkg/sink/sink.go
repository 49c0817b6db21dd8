// Package sink holds destinations that are not files: Discard, which
// counts and drops the bytes (for benchmarks), and Ordered, which writes
// one object to a stream in order through a bounded reorder window.
package sink

import (
	"context"

	"github.com/s3pd/s3pd/pkg/transfer"
)

// Discard drops every byte it is given.
type Discard struct{}

// Create implements transfer.Sink.
func (Discard) Create(context.Context, transfer.Object) (transfer.File, error) {
	return discardFile{}, nil
}

type discardFile struct{}

func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (discardFile) Commit() error                          { return nil }
func (discardFile) Abort() error                           { return nil }
