// Package s3emu is an S3-compatible HTTP server for tests and benchmarks,
// built on gofakes3. It serves a synthetic dataset generated on the fly
// (deterministic, verifiable content, no memory per object), an in-memory
// store, or a discard store for upload benchmarks; it adds what gofakes3
// lacks (If-Match, full-object checksums, checksum verification on upload,
// UploadPartCopy, listings that never materialise the dataset), a network
// model (time to first byte, a per-connection rate cap) and scripted fault
// injection. docs/EMULATOR.md describes it.
package s3emu
