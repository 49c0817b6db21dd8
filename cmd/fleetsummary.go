package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/s3pd/s3pd/internal/job"
	"github.com/s3pd/s3pd/pkg/report"
)

// fleetSummary is what the --json summary of a --fleet node says of
// its fleet (docs/JSON.md).
type fleetSummary struct {
	Node       int   `json:"fleet_node"`
	Nodes      int   `json:"fleet_nodes"`
	FromSource int64 `json:"fleet_bytes_from_source"`
	FromPeers  int64 `json:"fleet_bytes_from_peers"`
	ToPeers    int64 `json:"fleet_bytes_to_peers"`
	// Peers are the other nodes, in node order.
	Peers []fleetPeerLine `json:"fleet_peers"`
	// TrustedObjects are the objects taken from peers with no checksum
	// of S3's to check them against.
	TrustedObjects int64 `json:"fleet_trusted_objects"`
	// notDone are the peers that had not said they finished when this
	// node stopped serving (the text summary names them).
	notDone []int
}

// fleetPeerLine is one other node of the fleet.
type fleetPeerLine struct {
	Node     int    `json:"node"`
	Addr     string `json:"addr"`
	From     int64  `json:"bytes_from"`
	To       int64  `json:"bytes_to"`
	Bypassed bool   `json:"bypassed"`
	Reason   string `json:"reason,omitempty"`
}

func newFleetSummary(r *job.FleetReport) *fleetSummary {
	if r == nil {
		return nil
	}
	s := &fleetSummary{Node: r.Node, Nodes: r.Nodes, FromSource: r.FromSource, FromPeers: r.FromPeers, ToPeers: r.ToPeers,
		TrustedObjects: r.Trusted, Peers: []fleetPeerLine{}}
	for _, p := range r.Peers {
		s.Peers = append(s.Peers, fleetPeerLine{Node: p.Node, Addr: p.Addr, From: p.From, To: p.To, Bypassed: p.Bypassed, Reason: p.Reason})
		if !p.Done {
			s.notDone = append(s.notDone, p.Node)
		}
	}
	return s
}

// printFleet writes the fleet's line of the text summary: "fleet: node
// 1 of 4, 10.0 MiB from S3, 30.0 MiB from peers, 20.0 MiB served to
// peers; bypassed: node 2 (10.0.0.3:7373): why".
func printFleet(w io.Writer, s *fleetSummary) {
	line := fmt.Sprintf("fleet: node %d of %d, %s from S3, %s from peers, %s served to peers",
		s.Node, s.Nodes, humanBytes(s.FromSource), humanBytes(s.FromPeers), humanBytes(s.ToPeers))
	var gone []string
	for _, p := range s.Peers {
		if p.Bypassed {
			gone = append(gone, fmt.Sprintf("node %d (%s): %s", p.Node, p.Addr, oneLine(p.Reason)))
		}
	}
	if len(gone) > 0 {
		line += "; bypassed: " + strings.Join(gone, "; ")
	}
	if len(s.notDone) > 0 {
		line += "; not finished when this node stopped serving: " + nodesText(s.notDone)
	}
	if s.TrustedObjects > 0 {
		line += fmt.Sprintf("; %s taken from peers unchecked (--fleet-trust-peers)", plural(s.TrustedObjects, "object"))
	}
	fmt.Fprintln(w, line)
}

// reportFleet is a fleet node's part for its --report.
func reportFleet(r *job.FleetReport) *report.Fleet {
	if r == nil {
		return nil
	}
	f := &report.Fleet{Node: r.Node, Nodes: r.Nodes, FromSource: r.FromSource, FromPeers: r.FromPeers, ToPeers: r.ToPeers, Trusted: r.Trusted}
	for _, p := range r.Peers {
		if p.Bypassed {
			f.Bypassed = append(f.Bypassed, fmt.Sprintf("node %d (%s): %s", p.Node, p.Addr, oneLine(p.Reason)))
		}
	}
	return f
}
