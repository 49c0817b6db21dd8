package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// roleEnv selects what the test binary does when a benchmark re-executes
// it: "serve" (the emulator), "budget-servers" (BenchmarkBudget's
// emulators) or "client" (one contender).
const roleEnv = "S3PD_BENCH_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		// The binary s3pdBinary built serves every test and benchmark of
		// the process: it goes when they all have run.
		code := m.Run()
		cleanBuiltBinary()
		os.Exit(code)
	case "serve":
		exitOn(serve())
	case "budget-servers":
		exitOn(serveBudget())
	case "client":
		exitOn(runClient(context.Background()))
	default:
		exitOn(fmt.Errorf("unknown %s %q", roleEnv, os.Getenv(roleEnv)))
	}
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve runs the emulator from S3PD_BENCH_DATASET, _TTFB, _RATE and, in
// JSON, _THROTTLE (s3emu.Throttle) and _STALLS (s3emu.Stalls), prints
// "endpoint URL" once its ETags are computed, and stops when stdin
// closes (the benchmark that started it ended) or on a signal. With
// S3PD_BENCH_TLS_CA set it serves HTTPS with a self-signed RSA-2048
// certificate (as S3's), written to that file before the endpoint is
// printed.
func serve() error {
	ttfb, err := time.ParseDuration(envOr("S3PD_BENCH_TTFB", "0s"))
	if err != nil {
		return fmt.Errorf("S3PD_BENCH_TTFB: %w", err)
	}
	rate, err := strconv.ParseInt(envOr("S3PD_BENCH_RATE", "0"), 10, 64)
	if err != nil {
		return fmt.Errorf("S3PD_BENCH_RATE: %w", err)
	}
	opts := s3emu.Options{Dataset: os.Getenv("S3PD_BENCH_DATASET"), TTFB: ttfb, ConnRate: rate}
	for name, v := range map[string]any{"S3PD_BENCH_THROTTLE": &opts.Throttle, "S3PD_BENCH_STALLS": &opts.Stalls} {
		if js := os.Getenv(name); js != "" {
			if err := json.Unmarshal([]byte(js), v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	ca := os.Getenv("S3PD_BENCH_TLS_CA")
	if ca != "" {
		opts.TLS = &s3emu.TLSOptions{Key: s3emu.KeyRSA}
	}
	srv, err := s3emu.New(opts)
	if err != nil {
		return err
	}
	if ca != "" {
		if err := srv.WriteCertificate(ca); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent ends
		stop()
	}()
	return s3emu.Serve(ctx, srv, "127.0.0.1:0", func(endpoint string) { fmt.Println("endpoint", endpoint) })
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
