package cmd

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/fleet"
	"github.com/s3pd/s3pd/pkg/shard"
	"github.com/s3pd/s3pd/pkg/transfer"
)

// envFleetToken is where the fleet's token is read from when no
// --fleet-token-file names a file: never a flag, so that it stays out of
// process listings.
const envFleetToken = "S3PD_FLEET_TOKEN"

// fleetFlags are get's --fleet and the flags that go with it.
type fleetFlags struct {
	fleet, peers                   string
	tokenFile, tlsCert, tlsKey, ca string
	linger                         time.Duration
	port                           int
	trustPeers                     bool
}

func (f *fleetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.fleet, "fleet", "", `be node K of a fleet of N that each land the whole prefix, fetching it from S3 about once in all: each node fetches its share (the split of --shard K/N) from S3 and the other shares from their owners (--peers); "auto" reads K and N as --peers auto does`)
	fs.StringVar(&f.peers, "peers", "", `the fleet's nodes in node order, HOST:PORT each, comma-separated: entry K is this node's own address, the one its server binds; "auto" reads them from a Kubernetes indexed Job or a Slurm job`)
	fs.StringVar(&f.tokenFile, "fleet-token-file", "", "read the fleet's shared secret from this file (else from $"+envFleetToken+"): peers refuse every request without it")
	fs.StringVar(&f.tlsCert, "fleet-tls-cert", "", "serve peers over TLS with this certificate (PEM; with --fleet-tls-key), and ask them over TLS")
	fs.StringVar(&f.tlsKey, "fleet-tls-key", "", "the private key of --fleet-tls-cert (PEM)")
	fs.StringVar(&f.ca, "fleet-ca", "", "trust the peers' TLS certificates signed by these CAs (PEM; default: the system's roots)")
	nonNegativeDurationVar(fs, &f.linger, "fleet-linger", 5*time.Minute, "after its own run, keep serving peers until each said it finished, for this long at most (0: tell them and stop)")
	fs.BoolVar(&f.trustPeers, "fleet-trust-peers", false, "take from peers, unchecked, the objects S3 gives nothing to verify against (no CRC, and an ETag that is no MD5 of the bytes: SSE-KMS, SSE-C); without it those come from S3 only")
	fs.IntVar(&f.port, "fleet-port", fleet.DefaultPort, "the peers' port when --fleet auto or --peers auto discover only their hosts")
}

// given says a fleet flag other than --fleet was set: those mean
// nothing without it.
func (f *fleetFlags) given(fs *pflag.FlagSet) string {
	for _, name := range []string{"peers", "fleet-token-file", "fleet-tls-cert", "fleet-tls-key", "fleet-ca", "fleet-linger", "fleet-port", "fleet-trust-peers"} {
		if fs != nil && fs.Changed(name) {
			return name
		}
	}
	return ""
}

// checkFleet refuses what --fleet cannot do with get's other flags and
// resolves it into the job's spec (nil without --fleet): the node and
// its peers, the token, TLS.
func (opts *getOptions) checkFleet(getenv func(string) string, sh *shard.Spec) (*job.FleetSpec, error) {
	f := &opts.fleet
	if f.fleet == "" {
		if name := f.given(opts.flags); name != "" {
			return nil, usageErrorf("--%s is for a fleet: give --fleet K/N too", name)
		}
		return nil, nil
	}
	verify, err := opts.output.verifyMode()
	switch {
	case err != nil:
		return nil, err
	case sh != nil:
		return nil, usageErrorf("--fleet with --shard: a fleet node lands the whole prefix and fetches only its own share from S3; give one of them")
	case verify == transfer.VerifyOff:
		return nil, usageErrorf("--fleet with --verify off: the bytes peers send are checked against S3's checksums, which needs verification")
	case opts.benchmark || opts.dest == "-" || opts.dest == "":
		return nil, usageErrorf("--fleet lands the prefix in a local directory, which it serves to its peers: not onto standard output (DEST -) or into nothing (--benchmark)")
	case opts.output.dryRun:
		return nil, usageErrorf("--fleet with --dry-run: a dry run fetches nothing to share; run it without --fleet")
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return nil, usageErrorf("--fleet-tls-cert and --fleet-tls-key go together: give both")
	case f.ca != "" && f.tlsCert == "":
		return nil, usageErrorf("--fleet-ca trusts the peers' TLS certificates: give --fleet-tls-cert and --fleet-tls-key too, as every node does")
	case f.port < 1 || f.port > 65535:
		return nil, usageErrorf("--fleet-port %d: want a port from 1 to 65535", f.port)
	}
	spec := &job.FleetSpec{Linger: f.linger, TrustPeers: f.trustPeers}
	if spec.Self, spec.Peers, err = f.nodes(getenv); err != nil {
		return nil, err
	}
	if spec.Token, err = f.token(getenv); err != nil {
		return nil, err
	}
	if spec.ServerTLS, spec.ClientTLS, err = f.tls(); err != nil {
		return nil, err
	}
	return spec, nil
}

// nodes resolves --fleet and --peers: this node's index and the fleet's
// addresses, from the flags or discovered.
func (f *fleetFlags) nodes(getenv func(string) string) (int, []string, error) {
	if f.peers == "" && f.fleet != "auto" {
		return 0, nil, usageErrorf("--fleet %s needs --peers HOST:PORT,... (the N nodes' addresses in node order) or --peers auto", f.fleet)
	}
	var found *fleet.Discovered
	if f.fleet == "auto" || f.peers == "auto" || f.peers == "" {
		d, err := fleet.Discover(getenv, f.port)
		if err != nil {
			return 0, nil, usageError(err)
		}
		found = &d
	}
	var k, n int
	if f.fleet == "auto" {
		k, n = found.Self, len(found.Peers)
	} else {
		sp, err := shard.Parse(f.fleet)
		if err != nil {
			return 0, nil, usageErrorf("--fleet %q: want K/N with 0 <= K < N, or auto", f.fleet)
		}
		k, n = sp.K, sp.N
	}
	var peers []string
	if found != nil && (f.peers == "auto" || f.peers == "") {
		peers = found.Peers
	} else {
		var err error
		if peers, err = parsePeers(f.peers); err != nil {
			return 0, nil, err
		}
	}
	if n != len(peers) {
		return 0, nil, usageErrorf("--fleet %d/%d names %d nodes, --peers %d: give every node's address, this node's included, in node order", k, n, n, len(peers))
	}
	return k, peers, nil
}

// parsePeers reads --peers: HOST:PORT, ... with a host each, no address
// twice.
func parsePeers(v string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		host, port, err := net.SplitHostPort(p)
		if err != nil || host == "" || port == "" {
			return nil, usageErrorf("--peers: %q: want HOST:PORT", p)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, usageErrorf("--peers: %q: want a port from 1 to 65535", p)
		}
		if seen[p] {
			return nil, usageErrorf("--peers: %s is named twice: each node has its own address", p)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

// token reads the fleet's token: --fleet-token-file, else the
// environment; none, or an empty one, is refused.
func (f *fleetFlags) token(getenv func(string) string) (string, error) {
	if f.tokenFile == "" {
		t := strings.TrimSpace(getenv(envFleetToken))
		if t == "" {
			return "", usageErrorf("--fleet needs the fleet's token: set %s or give --fleet-token-file FILE, the same on every node", envFleetToken)
		}
		return t, nil
	}
	b, err := os.ReadFile(f.tokenFile)
	if err != nil {
		return "", usageErrorf("read the fleet's token (--fleet-token-file): %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", usageErrorf("--fleet-token-file %s is empty: the fleet needs a token", f.tokenFile)
	}
	return t, nil
}

// tls loads --fleet-tls-cert, --fleet-tls-key and --fleet-ca: the
// server's configuration and the client's (both nil without TLS).
func (f *fleetFlags) tls() (server, client *tls.Config, err error) {
	if f.tlsCert == "" {
		return nil, nil, nil
	}
	client = &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, nil, usageErrorf("--fleet-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, usageErrorf("--fleet-ca %s: no PEM certificate in it", f.ca)
		}
		client.RootCAs = pool
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
	if err != nil {
		return nil, nil, usageErrorf("--fleet-tls-cert %s, --fleet-tls-key %s: %w", f.tlsCert, f.tlsKey, err)
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return server, client, nil
}

// fleetLingering says on stderr (unless quiet) that the node's run is
// over and it serves on for the peers named, so that a run that seems
// to hang is explained: a note, or a log line where stderr carries JSON
// lines only.
func fleetLingering(f *runEnv, quiet bool) func([]int, time.Duration) {
	return func(waiting []int, max time.Duration) {
		msg := fmt.Sprintf("fleet: this node is done and serves its peers, waiting for %s to finish, %s at most (--fleet-linger)", nodesText(waiting), max)
		switch {
		case f.LogJSON:
			f.Logger.Info(msg)
		case !quiet:
			fmt.Fprintln(f.IO.ErrOut, "s3pd: note: "+msg)
		}
	}
}

// nodesText names nodes: "node 2", "nodes 0 and 2", "nodes 0, 1 and 3".
func nodesText(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	if len(s) == 1 {
		return "node " + s[0]
	}
	return "nodes " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
