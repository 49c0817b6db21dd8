package s3emu

import (
	"fmt"
	"strconv"
)

// Listing faults: a LIST rule with one of these actions answers a
// well-formed page whose content misbehaves, as a broken or hostile
// S3-compatible server might.

// NoToken marks the page truncated but sends no NextContinuationToken
// (Empty: an empty one).
type NoToken struct{ Empty bool }

// SameToken answers a page asked for with a continuation token as
// truncated, with that same token as the next one: a client that trusts
// it asks for the same page forever.
type SameToken struct{}

// BadTime gives the page's entry Index an unparsable LastModified.
type BadTime struct{ Index int }

// DupEntry lists the page's entry Index twice in a row.
type DupEntry struct{ Index int }

// ListSize gives the page's entry Index the size Size.
type ListSize struct {
	Size  int64
	Index int
}

func (NoToken) isAction()   {}
func (SameToken) isAction() {}
func (BadTime) isAction()   {}
func (DupEntry) isAction()  {}
func (ListSize) isAction()  {}

func (a NoToken) String() string {
	if a.Empty {
		return "notoken:empty"
	}
	return "notoken"
}
func (SameToken) String() string  { return "sametoken" }
func (a BadTime) String() string  { return fmt.Sprintf("badtime:%d", a.Index) }
func (a DupEntry) String() string { return fmt.Sprintf("dup:%d", a.Index) }
func (a ListSize) String() string { return fmt.Sprintf("listsize:%d:%d", a.Size, a.Index) }

// parseListAction parses the listing faults' text forms; ok is false for
// a name that is not one of them.
func parseListAction(name string, args []string) (a Action, ok bool, err error) {
	index := func(i int) (int, error) {
		if i >= len(args) {
			return 0, nil
		}
		return strconv.Atoi(args[i])
	}
	switch name {
	case "notoken":
		return NoToken{Empty: len(args) > 0 && args[0] == "empty"}, true, nil
	case "sametoken":
		return SameToken{}, true, nil
	case "badtime":
		i, err := index(0)
		return BadTime{Index: i}, true, err
	case "dup":
		i, err := index(0)
		return DupEntry{Index: i}, true, err
	case "listsize":
		if len(args) == 0 {
			return nil, true, fmt.Errorf("listsize needs a size")
		}
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			return nil, true, err
		}
		i, err := index(1)
		return ListSize{Size: n, Index: i}, true, err
	}
	return nil, false, nil
}

// applyListFault changes a V2 page (its tokens already set) as fault says.
// token is the continuation token the request carried.
func applyListFault(res *listResult, fault Action, token string) {
	entry := func(i int) *listContent {
		if i >= 0 && i < len(res.Contents) {
			return &res.Contents[i]
		}
		return nil
	}
	switch a := fault.(type) {
	case NoToken:
		res.IsTruncated = true
		res.NextToken = ""
		res.emptyNextToken = a.Empty
	case SameToken:
		if token != "" {
			res.IsTruncated, res.NextToken = true, token
		}
	case BadTime:
		if c := entry(a.Index); c != nil {
			c.LastModified = "yesterday-ish"
		}
	case DupEntry:
		if c := entry(a.Index); c != nil {
			dup := *c
			res.Contents = append(res.Contents[:a.Index+1], append([]listContent{dup}, res.Contents[a.Index+1:]...)...)
			res.KeyCount++
		}
	case ListSize:
		if c := entry(a.Index); c != nil {
			c.Size = a.Size
		}
	}
}
