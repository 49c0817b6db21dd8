package s3emu

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseFaults parses a fault script. The text form has one rule per line
// (or per ';'), made of space-separated field=value pairs; '#' starts a
// comment:
//
//	key=model/00000001 attempt=1 action=reset:1000
//	key=* range=* times=2 action=status:503:SlowDown
//	method=HEAD key=small/* action=delay:2s
//
// Fields: bucket, key (required; exact, "*" or "prefix*"), method (GET,
// HEAD, PUT, LIST, COMPLETE for CompleteMultipartUpload, SESSION for a
// directory bucket's CreateSession, *), range ("", "*", "none" or a Range header such as
// bytes=0-99), attempt, times, action (required). Actions: status:CODE[:S3CODE[:MESSAGE]],
// reset:N, truncate:N, short:N, badrange[:SHIFT], norange, stall:N:DURATION,
// flip:N, replace, delay:DURATION; for LIST: notoken[:empty], sametoken,
// badtime[:I], dup[:I], listsize:N[:I]; body framing: noclamp, chunked,
// closebody.
//
// A script that starts with '[' is JSON instead: an array of objects with
// the same fields, e.g. [{"key":"a","attempt":1,"action":"reset:1000"}].
func ParseFaults(text string) (*Faults, error) {
	f := NewFaults()
	if strings.HasPrefix(strings.TrimSpace(text), "[") {
		var rules []struct {
			Bucket, Key, Method, Range, Action string
			Attempt, Times                     int
		}
		if err := json.Unmarshal([]byte(text), &rules); err != nil {
			return nil, fmt.Errorf("parse faults: %w", err)
		}
		for i, jr := range rules {
			a, err := ParseAction(jr.Action)
			if err != nil {
				return nil, fmt.Errorf("parse faults: rule %d: %w", i+1, err)
			}
			if jr.Key == "" {
				return nil, fmt.Errorf("parse faults: rule %d: no key", i+1)
			}
			f.Add(Rule{Bucket: jr.Bucket, Key: jr.Key, Method: jr.Method, Range: jr.Range, Attempt: jr.Attempt, Times: jr.Times, Action: a})
		}
		return f, nil
	}
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ';' })
	for n, line := range lines {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		r, err := parseRule(line)
		if err != nil {
			return nil, fmt.Errorf("parse faults: rule %d %q: %w", n+1, strings.TrimSpace(line), err)
		}
		f.Add(r)
	}
	return f, nil
}

func parseRule(line string) (Rule, error) {
	var r Rule
	for _, field := range strings.Fields(line) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return r, fmt.Errorf("%q is not field=value", field)
		}
		var err error
		switch k {
		case "bucket":
			r.Bucket = v
		case "key":
			r.Key = v
		case "method":
			r.Method = strings.ToUpper(v)
		case "range":
			r.Range = v
		case "attempt":
			r.Attempt, err = strconv.Atoi(v)
		case "times":
			r.Times, err = strconv.Atoi(v)
		case "action":
			r.Action, err = ParseAction(v)
		default:
			return r, fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return r, fmt.Errorf("field %s: %w", k, err)
		}
	}
	if r.Key == "" || r.Action == nil {
		return r, fmt.Errorf("a rule needs key= and action=")
	}
	return r, nil
}

// ParseAction parses an action's text form (see ParseFaults); it is the
// inverse of the actions' String methods.
func ParseAction(s string) (Action, error) {
	parts := strings.Split(s, ":")
	name, args := parts[0], parts[1:]
	num := func(i int) (int64, error) {
		if i >= len(args) {
			return 0, fmt.Errorf("action %q: missing argument %d", s, i+1)
		}
		return strconv.ParseInt(args[i], 10, 64)
	}
	dur := func(i int) (time.Duration, error) {
		if i >= len(args) {
			return 0, fmt.Errorf("action %q: missing duration", s)
		}
		return time.ParseDuration(args[i])
	}
	if a, ok, err := parseListAction(name, args); ok {
		if err != nil {
			return nil, fmt.Errorf("action %q: %w", s, err)
		}
		return a, nil
	}
	if a, ok, err := parseFramingAction(name, args); ok {
		if err != nil {
			return nil, fmt.Errorf("action %q: %w", s, err)
		}
		return a, nil
	}
	var err error
	switch name {
	case "status":
		var a Status
		var code int64
		if code, err = num(0); err == nil {
			a.Code = int(code)
			if len(args) > 1 {
				a.S3Code = args[1]
			}
			if len(args) > 2 {
				a.Message = strings.Join(args[2:], ":")
			}
			return a, nil
		}
	case "reset":
		var n int64
		if n, err = num(0); err == nil {
			return Reset{At: n}, nil
		}
	case "truncate":
		var n int64
		if n, err = num(0); err == nil {
			return Truncate{At: n}, nil
		}
	case "short":
		var n int64
		if n, err = num(0); err == nil {
			return ShortBody{At: n}, nil
		}
	case "badrange":
		if len(args) == 0 {
			return WrongRange{}, nil
		}
		var n int64
		if n, err = num(0); err == nil {
			return WrongRange{Shift: n}, nil
		}
	case "norange":
		return IgnoreRange{}, nil
	case "stall":
		var n int64
		var d time.Duration
		if n, err = num(0); err == nil {
			if d, err = dur(1); err == nil {
				return Stall{At: n, For: d}, nil
			}
		}
	case "flip":
		var n int64
		if n, err = num(0); err == nil {
			return Flip{At: n}, nil
		}
	case "replace":
		return Replace{}, nil
	case "delay":
		var d time.Duration
		if d, err = dur(0); err == nil {
			return Delay{For: d}, nil
		}
	default:
		return nil, fmt.Errorf("unknown action %q", s)
	}
	return nil, fmt.Errorf("action %q: %w", s, err)
}
