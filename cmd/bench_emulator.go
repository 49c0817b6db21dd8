package cmd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// emulatorProcess is bench's emulator, run as a child process (`s3pd
// bench serve` of this very binary), so that its CPU time and memory are
// its own and the client's figures are the client's alone.
type emulatorProcess struct {
	cmd      *exec.Cmd
	endpoint string
	// ca is the self-signed certificate's file ("" over plain HTTP).
	ca string
	// stderr keeps what the child said, for the error of a failed start.
	stderr *capped
	done   chan struct{}
	// last is the latest reading of the child's CPU time and peak
	// memory, kept for when the child is gone (an interrupted run).
	mu      sync.Mutex
	lastCPU time.Duration
	lastRSS int64
}

// emulatorStartTimeout bounds the child's start, its dataset's digests
// included (about 3 s for the default 5.25 GiB on two cores).
const emulatorStartTimeout = 2 * time.Minute

// servingLine is the endpoint in the first line `bench serve` prints.
var servingLine = regexp.MustCompile(` at (https?://[0-9.]+:[0-9]+)`)

// startEmulatorProcess starts the emulator with args (bench serve's
// flags beside --listen, --prepare and --ca-out) and waits until it
// serves; tls says it serves HTTPS with a self-signed certificate.
func startEmulatorProcess(ctx context.Context, args []string, tls bool) (*emulatorProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start emulator: find this program: %w", err)
	}
	p := &emulatorProcess{stderr: &capped{max: 16 << 10}, done: make(chan struct{})}
	args = append([]string{"bench", "serve", "--listen", "127.0.0.1:0", "--prepare"}, args...)
	if tls {
		f, err := os.CreateTemp("", "s3pd-bench-ca-*.pem")
		if err != nil {
			return nil, fmt.Errorf("emulator certificate: %w", err)
		}
		f.Close()
		p.ca = f.Name()
		args = append(args, "--tls", "--ca-out", p.ca)
	}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = childAttr()
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		p.removeCA()
		return nil, fmt.Errorf("start emulator: %w", err)
	}
	if err := p.cmd.Start(); err != nil {
		p.removeCA()
		return nil, fmt.Errorf("start emulator: %s: %w", exe, err)
	}
	found := make(chan string, 1)
	go p.read(out, found)
	go func() { p.cmd.Wait(); close(p.done) }()
	timer := time.NewTimer(emulatorStartTimeout)
	defer timer.Stop()
	select {
	case ep, ok := <-found:
		if ok {
			p.endpoint = ep
			return p, nil
		}
		<-p.done
		p.removeCA()
		return nil, fmt.Errorf("start emulator: %s exited before serving: %s", exe, oneLine(strings.TrimSpace(p.stderr.String())))
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	case <-timer.C:
		p.stop()
		return nil, fmt.Errorf("start emulator: not serving after %s", emulatorStartTimeout)
	}
}

// read hands the endpoint of the child's first line to found (closed
// without one when the child ends first) and drains the rest.
func (p *emulatorProcess) read(out io.Reader, found chan<- string) {
	sc := bufio.NewScanner(out)
	sent := false
	for sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); !sent && m != nil {
			found <- m[1]
			sent = true
		}
	}
	if !sent {
		close(found)
	}
}

// cpu is the child's CPU time (user and system) so far: the latest
// reading when /proc no longer tells (0 where it never did).
func (p *emulatorProcess) cpu() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastCPU = max(p.lastCPU, procCPU(p.cmd.Process.Pid))
	return p.lastCPU
}

// peakRSSKiB is the child's peak resident memory so far (VmHWM).
func (p *emulatorProcess) peakRSSKiB() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastRSS = max(p.lastRSS, peakRSSOf(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)))
	return p.lastRSS
}

// stop interrupts the child, as a user's Ctrl-C would, waits for it
// (killing it after a while) and removes its certificate.
func (p *emulatorProcess) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.removeCA()
}

func (p *emulatorProcess) removeCA() {
	if p.ca != "" {
		os.Remove(p.ca)
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// procCPU is process pid's user and system time from /proc/PID/stat
// (fields 14 and 15, after the command name in parentheses), 0 where
// it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// capped keeps the first max bytes written to it.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
