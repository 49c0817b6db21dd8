package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRegistryFindsTheDestination: a location's entry is its scheme's;
// one without a destination side takes no writes (ErrNoWrites) and is
// named by its scheme, one with it locates what the location names.
func TestRegistryFindsTheDestination(t *testing.T) {
	located := 0
	w := &Dest{
		Locate: func(loc string) (Place, error) {
			located++
			return Place{Path: strings.TrimPrefix(loc, "w://"), Dir: strings.HasSuffix(loc, "/")}, nil
		},
		Open: func(context.Context, string, DestOptions) (*Sink, error) { return &Sink{}, nil },
	}
	r := Registry{{Scheme: "w", Name: "the writable store", Dest: w}, {Scheme: "ro"}, {Scheme: ""}}
	e, err := r.EntryOf("w://k/")
	if err != nil || !e.Writes() || e.NameOf() != "the writable store" {
		t.Fatalf("w://: %+v, %v", e, err)
	}
	if p, err := e.Locate("w://k/"); err != nil || p != (Place{Path: "k/", Dir: true}) || located != 1 {
		t.Errorf("Locate(w://k/) = %+v, %v", p, err)
	}
	ro, err := r.EntryOf("RO://x")
	if err != nil || ro.Writes() || ro.NameOf() != "ro:// URLs" {
		t.Fatalf("ro://: %+v, %v", ro, err)
	}
	if _, err := ro.Locate("ro://x"); !errors.Is(err, ErrNoWrites) {
		t.Errorf("a store without writes located: %v", err)
	}
	if e, err := r.EntryOf("some/path"); err != nil || e.Scheme != "" || e.NameOf() != "local paths" {
		t.Errorf("a path: %+v, %v", e, err)
	}
	if _, err := r.EntryOf("gs://b/k"); !errors.Is(err, ErrNoStore) {
		t.Errorf("gs://: %v, want ErrNoStore", err)
	}
	if _, ok := r.Entry("gs"); ok {
		t.Error("Entry(gs) found one")
	}
	var s *Sink
	if err := s.Release(); err != nil {
		t.Errorf("a nil sink released: %v", err)
	}
}
