// Package fleet lets N nodes that download the same S3 prefix fetch it
// from S3 about once in all, not N times: each node fetches its own
// share from S3 (the byte-balanced split of --shard K/N, pkg/shard),
// serves what it has landed and checked to the other nodes over HTTP,
// each range as soon as it is written, and takes the other shares from
// the other nodes down each object's relay tree (from its owner, or
// from a node that already took it), falling back to S3 for whatever a
// peer cannot give.
//
// The parts, all of them built on the engine's own interfaces:
//
//   - Shares (SplitShares) says which node owns each object, and each
//     object's order of nodes (its owner, then Shares.Backup): the same
//     on every node, from the listing alone. Shares.Lister lists a
//     node's own share first, then the others' by its place in their
//     order, so that it lists the objects it relays to others (see When
//     a peer fails) before those it only takes.
//   - Server is an http.Handler (Start binds it to one given address;
//     StartWithin waits, a bounded time, for a name that does not
//     resolve to an address of this host yet) that serves byte ranges
//     of the objects this node is landing, as soon as they are written:
//     a range of an object being written once every byte of it was
//     marked Written (from the partial file, opened once: the commit's
//     rename keeps it), any range of an object marked Ready (committed
//     verified). 206 with Content-Range, the S3 ETag as its ETag,
//     If-Match honoured (412 for another version), 403 with no body for
//     a request without the fleet's token. A request for a range not
//     written yet is held, up to Wait (DefaultWait), until it is
//     written or the object committed: a channel per key, closed when
//     anything of it is marked, wakes it; then 404 as for anything not
//     marked. It counts the bytes it sent to each peer, and takes a
//     node's word that it finished its run (POST DonePath), which
//     Linger waits for.
//   - Source is a transfer.Source decorator around a lane's S3 source.
//     A range of an object of another node's share goes, pinned by the
//     ETag, to this node's parent in the object's relay tree (its owner,
//     or a node that took the object from the owner or from another
//     relay), or, once that node is bypassed, to the nearest node above
//     it (see When a peer fails); anything else goes to S3: objects of
//     this node's share, those of a bypassed owner that this node
//     stands in for, empty ones, those of no known owner, those whose
//     bytes failed their checksum, and those S3 gives nothing to verify
//     against (unless TrustPeers).
//     It is a transfer.Checksummer through S3, so the checksum the engine
//     checks is always S3's. Its Report says where the bytes came from
//     and which peers were dropped, and why.
//   - Observer joins the engine to the fleet: it marks each part the
//     engine wrote (transfer.Observer.PartDone: its bytes in the file,
//     their length, Content-Range and ETag checked) Written on the
//     Server, in the partial file the sink names (Writing); each object
//     the engine committed verified, from S3 or from peers alike (or
//     skipped as landed by an earlier run: of its size and dated with
//     its modification time) Ready; any other outcome drops what was
//     Written of it. A checksum failure (transfer.Observer.Retry with
//     ErrChecksum) drops it too, and is told to the Source, before the
//     engine fetches the object again. Parts resumed whole from an
//     earlier run's journal are not reported written: they are served
//     once the object is committed.
//   - Discover reads the fleet from the scheduler that started the
//     process (--fleet auto --peers auto): this node's index and every
//     node's address, from a Kubernetes Indexed Job's index and headless
//     Service, or from a Slurm job step's task id, node list and tasks
//     per node (docs/SCALE-OUT.md).
//
// When a peer fails. Every object has one order of nodes, the same on
// every node from the listing alone (Shares.Backup): its owner, then its
// first backup, chosen so that each share's objects are split about
// evenly by bytes between the other nodes, then the nodes after that
// one. The order is a tree of fan-out FanOut (2): the node at position
// p >= 1 takes the object from the one at (p-1)/FanOut, which took it
// from its own parent before (with four nodes, the second and third ask
// the owner, the fourth asks the second), and serves it in turn to its
// children once it landed and verified it. So the owner's uplink carries
// each object of its share FanOut times, not once per node, and as each
// node relays about as many objects of each share as the others, every
// node sends about (N-1)/N of the dataset. A parent is always before
// its child in the order, so no node waits on a chain that waits on
// itself.
//
// A peer that refuses the token, answers with the wrong range, length
// or ETag, cannot be reached, breaks a body off, or sends no byte for
// Stall (headers or body) is bypassed: dropped for the rest of the run,
// named in the Report with the reason, and the range (or the rest of
// it, from the byte reached, inside the same body) goes to the node
// above it in the tree: its parent, else that one's parent, up to the
// owner. When the chain reaches a bypassed owner, the first node of the
// order not bypassed stands in for it; when that is this node, it
// fetches the object from S3 and then serves it. So the share of a node
// that is gone is fetched from S3 about once, each other node its part,
// not once by every node; and as each node lists the objects it is the
// first backup of right after its own share, the backup is usually
// fetching them by the time the others ask. A peer whose bytes fail the
// object's checksum is bypassed the same way and the object is fetched
// again, whole, from S3. A peer that holds another version of the
// object (412) is not at fault: that object comes from S3 and the peer
// stays.
//
// A peer that does not hold a range yet holds the request, up to its
// Wait, for the range to be written. One that still lacks it (404: it
// is still fetching its share) is asked again, after a pause that
// starts at Poll and doubles up to a second, for at most WaitReady from
// the first time it was found missing (the clock is the object's, not
// the request's, so the engine's retries and takeovers of the range do
// not restart it).
// After that the object comes from S3 and the peer stays in the fleet:
// it may be slow on its own share, not wrong. Because every node lists
// its own share first, the owner is usually fetching an object by the
// time another node asks for it.
//
// Trust model. The token keeps out whoever is not of the fleet: it is a
// shared secret compared in constant time, carried in plain HTTP, so
// the fleet's network must be one the operator trusts not to be read
// (a cluster's private network); it is not encryption. Peers of the
// fleet are not trusted for the bytes themselves: every object that
// takes any byte from a peer is verified by the engine against what S3
// itself gave, from the listing, a HEAD or a ranged GET through the
// wrapped source, never from the peer: a full-object CRC (CRC64NVME,
// CRC32C or CRC32); else a checksum of part checksums ("...-N"), each
// part's CRC computed from the landed bytes as S3 says the object was
// cut (a HEAD with partNumber); else the MD5 ETag; else the ETag of
// parts ("HEX-N"), by the same part layout. The Source is a
// transfer.Vouching, so the engine makes that check whatever --verify
// says (a node also verifies so what it serves), and fetches an object
// again from S3 when nothing could be checked. An object whose ETag is
// no MD5 of its bytes (SSE-KMS, SSE-C: the checksum lookup's HEAD tells,
// else one byte of it asked of S3) and that has no CRC has nothing to
// check a peer's bytes by: it is fetched from S3 only, unless TrustPeers
// (--fleet-trust-peers) lets it come from peers unverified; the Report
// counts those (TrustedObjects), and the Observer marks them Ready too.
// The engine must run with verification on: under VerifyOff it checks
// nothing and asks the Source nothing. A Server serves only what this
// run landed and checked: the ranges of an object the engine reported
// written, each part's length, range and ETag checked as it arrived,
// before the whole object is verified (so bytes that later fail the
// object's checksum may have gone to a peer: the peer's own check of
// the whole object against S3's catches them, and bypasses this node
// as it would a lying peer, fetching the object again from S3); and
// files marked Ready after the engine verified and
// committed them (or found them landed; or, with TrustPeers, committed
// them with nothing to verify them by). It stops serving a committed
// file whose size or modification time changed since, and an object
// being written once its checksum failed or it ended otherwise than
// committed; it never maps a request to a path of its own: a key names
// an entry of what was marked, or nothing. The whole object is verified
// by every node that takes it, never by the node that serves it alone.
//
// # How the command uses it
//
// `s3pd get s3://bucket/prefix/ DEST --fleet K/N --peers HOST:PORT,...`
// (docs/SCALE-OUT.md) is node K of such a fleet. The command reads the
// flags and the token (S3PD_FLEET_TOKEN or --fleet-token-file, never a
// flag of its own) and hands them to the job (internal/job), which
// builds the node: a Server with the token (TLS when a certificate is
// given) started on the node's own entry of --peers (StartWithin,
// DefaultBindWait), AwaitPeers before
// the listing goes on, SplitShares over the source's lister with the
// run's include/exclude filter, the engine's Lister from
// Shares.Lister(K), every lane wrapped by Source.Lanes (a NewClient
// whose TLS trusts --fleet-ca), and an Observer among the engine's
// observers whose Path is the local sink's destination of a name and
// Writing the partial file it writes it into (local.Sink.Writing).
// Only a local destination takes part: the Server reads its files. The
// Server's Wait is half the peers' Stall when that is less than
// DefaultWait (a short --stall-timeout), so that a held request is not
// taken for a stalled peer.
// After the engine's run the job calls Server.Linger (DonePath: tell
// every peer it is done, serve until every peer said the same or
// --fleet-linger runs out), then closes the Server. Source.Report and
// Server.Served become the summary's fleet fields.
//
// Scale: Shares holds the listing in memory, and the Source's state
// per open object; for listings of many millions of keys the shares
// should come from the spooled split (pkg/shard) instead, and the
// Server answer "ready" for a whole share in one poll.
package fleet
