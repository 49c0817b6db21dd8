// Package bench measures s3pd against the ceiling of the machine and its
// peers. Everything lives in its tests: `go test -bench . ./bench` runs
// the emulator in a child process and every contender as a child process
// of its own (the s3pd binary, the bare reference clients of
// internal/bare, aws-sdk-go-v2's transfermanager and manager, s5cmd), so
// each pays the same process start and is measured with its own rusage.
// run.sh is the entry point of `make bench`; docs/BENCHMARKS.md holds the
// results.
package bench
