package cmd

import (
	"fmt"
	"io"
	"os"
	"time"
)

// route says where one run's lines go. Stdout is the data when a command
// writes an object there (get DEST -, cat): then every human line goes to
// stderr with the logs, and --json lines go to stderr too. --json-file
// writes the same JSON lines to a file as well.
type route struct {
	human io.Writer
	json  io.Writer // nil: no JSON lines
}

// runOutput is how one run renders: the flags as given, and what the
// run learned of where its lines go and what it moves.
type runOutput struct {
	outputFlags
	// route is where lines go, set by openRoute; nil means stdout.
	route *route
	// logJSON: --log-format json, so stderr carries JSON lines only
	logJSON bool
	// embedded says the S3 server runs in this process (bench without a
	// URL), so its memory is in the peak this process reports.
	embedded bool
	// dryVerb is what a dry run says it would do with each object:
	// "fetch" (get, and copy from S3 to local) unless set ("copy").
	dryVerb string
	// localTo says where a copy from local files goes ("local" or "s3",
	// "stdin" for a stream to S3), "" when the source is S3: local files
	// carry no checksum, so the summary's advice on unverified objects
	// fits the direction.
	localTo string
	// noChecksumHint, when set, is the summary's advice on objects with
	// no checksum (an http(s):// source's, which --checksum checks).
	noChecksumHint string
	// upload says the destination is S3 (summary wording).
	upload bool
	// about names the run in its report.
	about reportAbout
	// server, when set, is the emulator's process (bench without a
	// URL): the summary gives its CPU and memory apart from the client's.
	server serverProcess
	// warmup is bench's --warmup (nil: auto, until the window settled).
	warmup *time.Duration
	// timed: the run ends at its time (bench --duration), so the objects
	// in flight then are cut, not interrupted.
	timed bool
}

// serverProcess is a server running beside the client whose CPU time
// and peak memory can be read (the emulator's process).
type serverProcess interface {
	cpu() time.Duration
	peakRSSKiB() int64
}

// output is how the run renders with flags o: over the route startRun
// opened.
func (f *runEnv) output(o outputFlags) runOutput {
	return runOutput{outputFlags: o, route: f.route, logJSON: f.LogJSON}
}

// openRoute decides where the run's lines go, once its command knows
// whether stdout carries data. It opens --json-file, and returns what
// closes it when the command ends.
func (o *outputFlags) openRoute(f *Factory, dataOnStdout bool) (*route, []func(), error) {
	if o.recursive {
		fmt.Fprintln(f.IO.ErrOut, "s3pd: note: --recursive is not needed: a prefix (s3://bucket/prefix/) is always copied with everything under it")
	}
	if o.exactTimestamps {
		fmt.Fprintln(f.IO.ErrOut, "s3pd: note: --exact-timestamps is not needed: s3pd keeps a file only when its size and modification time equal the object's (--size-only: its size alone)")
	}
	if o.pageSize != 0 {
		fmt.Fprintln(f.IO.ErrOut, "s3pd: note: --page-size is not needed: s3pd asks for the largest pages S3 gives (1,000 keys) and lists prefixes in parallel (--list-concurrency)")
	}
	var exits []func()
	r := &route{human: f.IO.Out}
	if dataOnStdout {
		r.human = f.IO.ErrOut
	}
	if o.asJSON {
		r.json = r.human
	}
	if o.jsonFile != "" {
		file, err := os.OpenFile(o.jsonFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, nil, usageErrorf("--json-file: %w", err)
		}
		exits = append(exits, func() { file.Close() })
		if r.json == nil {
			r.json = file
		} else {
			// Each JSON line is one Write, so both get whole lines.
			r.json = io.MultiWriter(r.json, file)
		}
	}
	return r, exits, nil
}

// humanOut is where summaries and dry-run lines go.
func (o runOutput) humanOut(f *Factory) io.Writer {
	if o.route == nil {
		return f.IO.Out
	}
	return o.route.human
}

// jsonOut is where JSON lines go, or nil without --json or --json-file.
func (o runOutput) jsonOut(f *Factory) io.Writer {
	switch {
	case o.route != nil:
		return o.route.json
	case o.asJSON:
		return f.IO.Out
	}
	return nil
}

// textOut is where human summaries go: nil with --json, whose lines take
// their place, and with --quiet, which prints nothing on success.
func (o runOutput) textOut(f *Factory) io.Writer {
	if o.asJSON || o.onlyErrors || o.quiet {
		return nil
	}
	return o.humanOut(f)
}
