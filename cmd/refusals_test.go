package cmd

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// refusal is one command line s3pd must refuse: exit 2, one line on
// stderr that matches want, nothing sent (the endpoint, 127.0.0.1:1,
// accepts nothing: a refusal that is removed fails its row with a
// connection error or another message).
type refusal struct {
	args []string
	want string            // a regular expression the error line matches
	env  map[string]string // set for the row
	// devNull gives the row /dev/null as standard input, as a closed
	// one is reopened.
	devNull bool
}

// endpoint points a row at no server.
var endpoint = []string{"--endpoint-url", "http://127.0.0.1:1", "--region", "us-east-1", "--no-sign-request"}

// refusals are every flag refusal of every command, in the manner of
// cli/cli's wantErr rows. {dir} is an empty directory, {file} a small
// file, {badfaults} a file that is no fault script, {missing} a path
// that does not exist.
func refusals() []refusal {
	s3 := func(args ...string) []string { return append(args, endpoint...) }
	return []refusal{
		// get
		{args: s3("get", "s3://bkt/k", "{dir}", "extra"), want: `get takes SRC and DEST \(SRC alone with --benchmark\), got 3`},
		{args: s3("get", "--benchmark", "s3://bkt/k", "{dir}"), want: `--benchmark keeps nothing: drop DEST`},
		{args: s3("get", "--overwrite", "--no-clobber", "s3://bkt/k", "{dir}"), want: `--overwrite and --no-clobber contradict each other`},
		{args: s3("get", "--verify-existing", "--no-clobber", "s3://bkt/k", "{dir}"), want: `--verify-existing replaces files that differ`},
		{args: s3("get", "--delete", "s3://bkt/p/", "-"), want: `--delete needs a directory DEST`},
		{args: s3("get", "--version-id", "v1", "s3://bkt/p/", "{dir}"), want: `--version-id names one object; s3://bkt/p/ is a prefix`},
		{args: s3("get", "--delete", "--shard", "0/2", "s3://bkt/p/", "{dir}"), want: `--delete with --shard`},
		{args: s3("get", "--delete", "--manifest", "{file}", "s3://bkt/p/", "{dir}"), want: `--delete with --manifest`},
		{args: s3("get", "--version-id", "v1", "--manifest", "{file}", "s3://bkt/k", "{dir}"), want: `--version-id with --manifest`},
		{args: s3("get", "--manifest", "{file}", "s3://bkt/p", "-"), want: `DEST - takes a single object, not a --manifest`},
		{args: s3("get", "--list-concurrency", "-1", "s3://bkt/p/", "{dir}"), want: `--list-concurrency -1: want 1 or more`},
		{args: s3("get", "--request-payer", "me", "s3://bkt/k", "{dir}"), want: `--request-payer "me": the only value is requester`},
		{args: s3("get", "--verify", "sometimes", "s3://bkt/k", "{dir}"), want: `--verify "sometimes": want auto, full, require or off`},
		{args: s3("get", "--adaptive", "maybe", "s3://bkt/k", "{dir}"), want: `--adaptive "maybe": want on or off`},
		{args: s3("get", "--sse-c-key", "k", "--sse-c-key-file", "{file}", "s3://bkt/k", "{dir}"), want: `--sse-c-key and --sse-c-key-file: give the key once`},
		{args: s3("get", "--sse-c-key-file", "{missing}", "s3://bkt/k", "{dir}"), want: `read the SSE-C key \(--sse-c-key-file\)`},
		{args: s3("get", "--sse-c-key", "short", "s3://bkt/k", "{dir}"), want: `the SSE-C key from --sse-c-key must be 32 bytes, got 5`},
		{args: s3("get", "--shard", "3/2", "s3://bkt/p/", "{dir}"), want: `--shard`},
		{args: s3("get", "--interval", "-1s", "s3://bkt/k", "{dir}"), want: `--interval -1s: want a positive duration`},
		{args: s3("get", "--report", "{dir}", "s3://bkt/k", "{missing}"), want: `--report .* is a directory: give a file name`},
		{args: s3("get", "--report", "{dir}/sub/r.html", "s3://bkt/k", "{dir}"), want: `--report .* is inside DEST .*: write it elsewhere`},
		{args: s3("get", "--report", "{file}/r.html", "s3://bkt/k", "{dir}"), want: `--report .*/r.html: `},
		// get --fleet
		{args: s3("get", "--peers", "127.0.0.1:7001", "s3://bkt/p/", "{dir}"), want: `--peers is for a fleet: give --fleet K/N too`},
		{args: s3("get", "--fleet", "0/2", "--shard", "0/2", "s3://bkt/p/", "{dir}"), want: `--fleet with --shard: a fleet node lands the whole prefix`},
		{args: s3("get", "--fleet", "0/2", "--verify", "off", "s3://bkt/p/", "{dir}"), want: `--fleet with --verify off: `},
		{args: s3("get", "--fleet", "0/2", "s3://bkt/p/", "-"), want: `--fleet lands the prefix in a local directory`},
		{args: s3("get", "--fleet", "0/2", "--dry-run", "s3://bkt/p/", "{dir}"), want: `--fleet with --dry-run: `},
		{args: s3("get", "--fleet", "0/2", "--fleet-tls-cert", "{file}", "s3://bkt/p/", "{dir}"), want: `--fleet-tls-cert and --fleet-tls-key go together`},
		{args: s3("get", "--fleet", "0/2", "--fleet-ca", "{file}", "s3://bkt/p/", "{dir}"), want: `--fleet-ca trusts the peers' TLS certificates: give --fleet-tls-cert`},
		{args: s3("get", "--fleet", "0/2", "--fleet-port", "0", "s3://bkt/p/", "{dir}"), want: `--fleet-port 0: want a port from 1 to 65535`},
		{args: s3("get", "--fleet", "0/2", "s3://bkt/p/", "{dir}"), want: `--fleet 0/2 needs --peers HOST:PORT`},
		{args: s3("get", "--fleet", "auto", "s3://bkt/p/", "{dir}"), want: `^s3pd: --fleet auto: neither `},
		{args: s3("get", "--fleet", "2/2", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "s3://bkt/p/", "{dir}"), want: `--fleet "2/2": want K/N with 0 <= K < N, or auto`},
		{args: s3("get", "--fleet", "0/3", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "s3://bkt/p/", "{dir}"), want: `--fleet 0/3 names 3 nodes, --peers 2: give every node's address`},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,nohost", "s3://bkt/p/", "{dir}"), want: `--peers: "nohost": want HOST:PORT`},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:99999", "s3://bkt/p/", "{dir}"), want: `--peers: "127.0.0.1:99999": want a port from 1 to 65535`},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:7001", "s3://bkt/p/", "{dir}"), want: `--peers: 127.0.0.1:7001 is named twice`},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "s3://bkt/p/", "{dir}"), env: map[string]string{"S3PD_FLEET_TOKEN": ""}, want: `--fleet needs the fleet's token: set S3PD_FLEET_TOKEN or give --fleet-token-file FILE`},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "--fleet-token-file", "{missing}", "s3://bkt/p/", "{dir}"), want: `read the fleet's token \(--fleet-token-file\): `},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "--fleet-token-file", os.DevNull, "s3://bkt/p/", "{dir}"), want: `--fleet-token-file /dev/null is empty: the fleet needs a token`},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "--fleet-tls-cert", "{file}", "--fleet-tls-key", "{file}", "s3://bkt/p/", "{dir}"), env: map[string]string{"S3PD_FLEET_TOKEN": "t"}, want: `--fleet-tls-cert .*, --fleet-tls-key .*: `},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "--fleet-tls-cert", "{file}", "--fleet-tls-key", "{file}", "--fleet-ca", "{missing}", "s3://bkt/p/", "{dir}"), env: map[string]string{"S3PD_FLEET_TOKEN": "t"}, want: `--fleet-ca: `},
		{args: s3("get", "--fleet", "0/2", "--peers", "127.0.0.1:7001,127.0.0.1:7002", "--fleet-tls-cert", "{file}", "--fleet-tls-key", "{file}", "--fleet-ca", "{file}", "s3://bkt/p/", "{dir}"), env: map[string]string{"S3PD_FLEET_TOKEN": "t"}, want: `--fleet-ca .*: no PEM certificate in it`},
		{args: s3("get", "--fleet", "0/2", "http://127.0.0.1:1/f", "{dir}"), want: `--fleet shares an S3 prefix among nodes, not files fetched over http\(s\)://`},
		{args: s3("copy", "--fleet", "0/2", "{dir}", "s3://bkt/p/"), want: `--fleet applies to copies from S3 to local files \(as get\), not local to S3`},
		// get from http(s)://
		{args: s3("get", "--checksum", "md5:"+strings.Repeat("0", 32), "s3://bkt/k", "{dir}"), want: `--checksum checks a file fetched from an http\(s\):// URL`},
		{args: s3("get", "--checksum", "sha256:abc", "http://127.0.0.1:1/f", "{dir}"), want: `--checksum "sha256:abc": the value is not hex`},
		{args: s3("get", "--version-id", "v1", "http://127.0.0.1:1/f", "{dir}"), want: `--version-id applies to S3 objects, not to files fetched over http\(s\)://`},
		{args: s3("get", "--input-file", "{file}", "s3://bkt/k", "{dir}"), want: `--input-file lists the URLs: give DEST alone, not a SRC too`},
		{args: s3("get", "--input-file", "{file}"), want: `get --input-file FILE takes DEST, the directory the files land in \(none with --benchmark\), got 0`},
		{args: s3("get", "--input-file", "{file}", "--checksum", "md5:"+strings.Repeat("0", 32), "{dir}"), want: `--checksum checks the one URL of SRC`},
		{args: s3("get", "--input-file", "{file}", "-"), want: `--input-file lands its files in the directory DEST: DEST - takes one URL`},
		{args: s3("get", "--input-file", "{file}", "{file}"), want: `--input-file lands its files in the directory DEST: .* is a file`},
		{args: s3("get", "--input-file", os.DevNull, "{dir}"), want: `input file /dev/null lists no URL`},
		{args: s3("get", "--input-file", "{file}", "{dir}"), want: `input file .*: line 1: x: not an http:// or https:// URL`},
		{args: s3("get", "--json-file", "{missing}/x.json", "s3://bkt/k", "{dir}"), want: `--json-file: `},
		{args: s3("get", "--workers", "0", "s3://bkt/k", "{dir}"), want: `workers`},
		{args: s3("get", "--log-format", "xml", "s3://bkt/k", "{dir}"), want: `log_format`},
		{args: s3("get", "s3://b/k", "{dir}"), want: `bucket name "b" must be 3 to 63 characters`},
		{args: []string{"config", "show", "s3://"}, want: `config show s3://: want an s3://bucket URL`},
		// what a directory bucket lacks
		{args: s3("get", "--version-id", "v1", "s3://d--use1-az4--x-s3/k", "{dir}"), want: `--version-id: directory bucket d--use1-az4--x-s3 has no versioning`},
		{args: s3("get", "--sse-c-key", "0123456789abcdef0123456789abcdef", "s3://d--use1-az4--x-s3/k", "{dir}"), want: `--sse-c: directory bucket d--use1-az4--x-s3 does not support customer-provided keys`},
		{args: s3("get", "--request-payer", "requester", "s3://d--use1-az4--x-s3/k", "{dir}"), want: `--request-payer: directory bucket d--use1-az4--x-s3 does not support request-payer`},
		{args: s3("copy", "--storage-class", "STANDARD_IA", "{file}", "s3://d--use1-az4--x-s3/k"), want: `--storage-class STANDARD_IA: directory bucket d--use1-az4--x-s3 stores only EXPRESS_ONEZONE`},
		{args: s3("copy", "--sse", "aws:kms:dsse", "{file}", "s3://d--use1-az4--x-s3/k"), want: `--sse aws:kms:dsse: directory bucket d--use1-az4--x-s3 supports only AES256 and aws:kms`},
		{args: s3("get", "--nics", "doesnotexist0", "s3://bkt/k", "{dir}"), want: `doesnotexist0`},
		{args: s3("get", "--ca-bundle", "{missing}", "s3://bkt/k", "{dir}"), want: `ca_bundle: `},
		{args: s3("get", "--ca-bundle", "{file}", "s3://bkt/k", "{dir}"), want: `ca_bundle .*: no PEM certificate in it`},

		// copy
		{args: s3("copy", "{dir}"), want: `copy takes SRC and DEST \(SRC alone with --benchmark\), got 1`},
		{args: s3("copy", "--benchmark", "{dir}", "s3://bkt/p/"), want: `--benchmark keeps nothing: drop DEST`},
		{args: s3("copy", "--checksum-algorithm", "MD5", "{dir}", "s3://bkt/p/"), want: `--checksum-algorithm "MD5": want CRC64NVME or CRC32C`},
		{args: s3("copy", "--sse", "rot13", "{dir}", "s3://bkt/p/"), want: `--sse "rot13": want AES256, aws:kms or aws:kms:dsse`},
		{args: s3("copy", "--sse-kms-key-id", "k", "{dir}", "s3://bkt/p/"), want: `--sse-kms-key-id needs --sse aws:kms`},
		{args: s3("copy", "--request-payer", "me", "{dir}", "s3://bkt/p/"), want: `--request-payer "me": the only value is requester`},
		{args: s3("copy", "--storage-class", "COLD", "{dir}", "s3://bkt/p/"), want: `--storage-class "COLD": want one of`},
		{args: s3("copy", "--overwrite", "--no-clobber", "{dir}", "s3://bkt/p/"), want: `--overwrite and --no-clobber contradict each other`},
		{args: s3("copy", "--delete", "s3://bkt/p/", "-"), want: `--delete needs a directory DEST`}, // S3 to local is get
		{args: s3("copy", "--benchmark", "--delete", "{dir}"), want: `--delete needs a directory or a prefix as DEST`},
		{args: s3("copy", "--version-id", "v1", "{dir}", "s3://bkt/p/"), want: `--version-id applies to copies from S3 to local files \(as get\), not local to S3`},
		{args: s3("copy", "--no-resume", "s3://bkt/a/", "s3://bkt/b/"), want: `--no-resume applies to copies from S3 to local files \(as get\), not S3 to S3`},
		{args: s3("copy", "--report", "{missing}.html", "{dir}", "{missing}"), want: `--report applies to copies from S3 to local files \(as get\), not local to local`},
		{args: s3("copy", "--verify-existing", "--benchmark", "{dir}"), want: `--verify-existing applies to copies from S3 to local files \(as get\), not a --benchmark of local files`},
		{args: s3("copy", "--conflict-suffix", ".obj", "-", "s3://bkt/k"), want: `--conflict-suffix applies to copies from S3 to local files \(as get\), not standard input to S3`},
		{args: s3("copy", "--version-id", "v1", "s3://bkt/p/", "{dir}"), want: `--version-id names one object; s3://bkt/p/ is a prefix`}, // get's check
		{args: s3("copy", "--report", "{dir}/sub/r.html", "s3://bkt/k", "{dir}"), want: `--report .* is inside DEST .*: write it elsewhere`},
		{args: s3("copy", "--copy-threshold", "6GiB", "s3://bkt/a/", "s3://bkt/b/"), want: `--copy-threshold "6GiB": want a size from 1 byte to 5GiB`},
		{args: s3("copy", "--manifest", "{file}", "{dir}", "s3://bkt/p/"), want: `--manifest names S3 objects; SRC .* is local`},
		{args: s3("copy", "--source-region", "eu-west-1", "{dir}", "s3://bkt/p/"), want: `--source-endpoint-url, --source-region and --source-profile apply to S3 to S3 copies`},
		{args: s3("copy", "--nics", "doesnotexist0", "{dir}", "s3://bkt/p/"), want: `doesnotexist0`},
		{args: s3("copy", "--nics", "doesnotexist0", "{dir}", "{missing}"), want: `doesnotexist0`},
		{args: s3("copy", "--nics", "doesnotexist0", "s3://bkt/a/", "s3://bkt/b/"), want: `doesnotexist0`},
		{args: s3("copy", "--ca-bundle", "{missing}", "{dir}", "s3://bkt/p/"), want: `ca_bundle: `},
		{args: s3("copy", "--ca-bundle", "{missing}", "s3://bkt/a/", "s3://bkt/b/"), want: `ca_bundle: `},
		{args: s3("copy", "--ca-bundle", "{missing}", "s3://bkt/a/", "{dir}"), want: `ca_bundle: `},
		{args: s3("copy", "--shard", "0/0", "{dir}", "s3://bkt/p/"), want: `--shard`},

		{args: s3("get", "--size-only", "--overwrite", "s3://bkt/p/", "{dir}"), want: `--size-only keeps files by their size alone: not with --overwrite`},
		{args: s3("copy", "--size-only", "--overwrite", "{dir}", "s3://bkt/p/"), want: `--size-only keeps files and objects by their size alone`},
		{args: s3("copy", "--size-only", "s3://bkt/a/", "s3://bkt/b/"), want: `--size-only: a server-side copy skips objects by size and ETag`},
		{args: s3("copy", "--sse-c", "AES256", "--sse-c-key", "0123456789abcdef0123456789abcdef", "{dir}", "s3://bkt/p/"), want: `--sse-c and its key apply to downloads`},
		{args: s3("get", "--sse-c=DES", "--sse-c-key", "0123456789abcdef0123456789abcdef", "s3://bkt/k", "{dir}"), want: `--sse-c "DES": the only SSE-C algorithm is AES256`},
		{args: s3("get", "--sse-c", "AES256", "s3://bkt/k", "{dir}"), env: map[string]string{"S3PD_SSE_C_KEY": ""}, want: `--sse-c needs the key: --sse-c-key, --sse-c-key-file or`},
		{args: s3("copy", "--expected-size", "1GiB", "{dir}", "s3://bkt/p/"), want: `--expected-size is the size of standard input: SRC -`},
		{args: s3("copy", "-", "{dir}"), want: `SRC - uploads standard input: DEST is an s3://bucket/key URL, not`},
		{args: s3("copy", "-", "s3://bkt/p/"), want: `SRC - uploads standard input to one object: DEST s3://bkt/p/ names no key`},
		{args: s3("copy", "--delete", "-", "s3://bkt/k"), want: `SRC - is one stream to one object: not with --benchmark`},
		{args: s3("copy", "--expected-size", "lots", "-", "s3://bkt/k"), want: `--expected-size "lots": want a size`},
		{args: s3("copy", "-", "s3://bkt/k"), devNull: true, want: `SRC -: standard input is closed or /dev/null, so there is nothing to upload to s3://bkt/k`},

		{args: s3("get", "--conflict-suffix", "/../b", "s3://bkt/p/", "{dir}"), want: `--conflict-suffix /../b: a suffix cannot hold "/"`},
		{args: s3("get", "--expected-bucket-owner", "a\nb", "s3://bkt/p/", "{dir}"), want: `--expected-bucket-owner .*: a header value cannot hold a control character`},

		// ls, du, cat
		{args: s3("ls", "s3://bkt/a", "s3://bkt/b"), want: `ls takes at most one s3://bucket\[/prefix\], got 2`},
		{args: s3("ls", "s3://b"), want: `bucket name "b" must be 3 to 63 characters`},
		{args: s3("ls", "--ca-bundle", "{missing}", "s3://bkt/p/"), want: `ca_bundle: `},
		{args: s3("ls", "--nics", "doesnotexist0", "s3://bkt/p/"), want: `doesnotexist0`},
		{args: s3("du"), want: `du takes one s3://bucket\[/prefix\], got 0 argument\(s\)`},
		{args: s3("du", "s3://b/p/"), want: `bucket name "b" must be 3 to 63 characters`},
		{args: s3("du", "--bytes", "--human-readable", "s3://bkt/p/"), want: `--bytes and --human-readable contradict each other`},
		{args: s3("du", "--ca-bundle", "{missing}", "s3://bkt/p/"), want: `ca_bundle: `},
		{args: s3("cat"), want: `cat takes one s3://bucket/key, got 0 argument\(s\)`},
		{args: s3("cat", "--ca-bundle", "{missing}", "s3://bkt/k"), want: `ca_bundle: `},

		// bench
		{args: s3("bench", "s3://bkt/a/", "s3://bkt/b/"), want: `bench takes at most one s3:// URL, got 2`},
		{args: s3("bench", "--repeat", "0", "s3://bkt/p/"), want: `--repeat 0: want at least 1 round`},
		{args: s3("bench", "--http", "s3://bkt/p/"), want: `--http is for the embedded emulator: the URL's endpoint has its own scheme`},
		{args: s3("bench", "--sweep", "--repeat", "2", "s3://bkt/p/"), want: `--sweep runs one short measurement per setting`},
		{args: s3("bench", "--sweep", "--duration", "10s", "s3://bkt/p/"), want: `--sweep measures each setting for --sweep-time: --duration and --warmup do not apply`},
		{args: s3("bench", "--duration", "soon", "s3://bkt/p/"), want: `invalid argument "soon" for "--duration" flag: want auto or a duration \(30s, 2m\)`},
		{args: s3("bench", "--warmup", "-1s", "s3://bkt/p/"), want: `invalid argument "-1s" for "--warmup" flag: want auto or a duration \(30s, 2m\)`},
		{args: []string{"bench", "--endpoint-url", "http://127.0.0.1:1"}, want: `bench without a URL runs the embedded emulator`},
		{args: []string{"bench", "--conn-rate", "fast"}, want: `--conn-rate "fast": `},
		{args: []string{"bench", "--dataset", "nonsense"}, want: `--dataset "nonsense": `},
		{args: s3("bench", "--save-preset", "p1", "s3://bkt/p/"), want: `--save-preset needs --sweep`},
		{args: s3("bench", "--sweep", "--sweep-time", "0s", "s3://bkt/p/"), want: `--sweep-time 0s: want a positive duration`},
		{args: s3("bench", "--sweep", "--save-preset", "a/b", "s3://bkt/p/"), want: `--save-preset "a/b": use letters, digits`},
		{args: s3("bench", "--sweep", "--save-preset", "m6in.32xlarge", "s3://bkt/p/"), want: `--save-preset "m6in.32xlarge" is a built-in preset`},
		{args: s3("bench", "--sweep", "--sweep-parts", "1KiB", "s3://bkt/p/"), want: `--sweep-parts "1KiB": want sizes from 1MiB to`},
		{args: s3("bench", "--sweep", "--sweep-requests", "0", "s3://bkt/p/"), want: `--sweep-requests "0": want whole numbers from 1 to`},
		{args: s3("bench", "--sweep", "--save-preset", "mine", "--sweep-time", "1ms", "s3://bkt/p/"),
			env: map[string]string{"HOME": "", "XDG_CONFIG_HOME": ""}, want: `--save-preset: no config folder`},
		{args: s3("bench", "--ca-bundle", "{missing}", "s3://bkt/p/"), want: `ca_bundle: `},
		{args: s3("bench", "--sweep", "--sweep-time", "1ms", "--ca-bundle", "{missing}", "s3://bkt/p/"), want: `ca_bundle: `},
		{args: s3("bench", "--nics", "doesnotexist0", "s3://bkt/p/"), want: `doesnotexist0`},
		{args: []string{"bench", "compare", "a.json"}, want: `bench compare takes two files, A.json and B.json, got 1 argument\(s\)`},
		{args: []string{"bench", "compare", "{missing}", "{missing}"}, want: `no such file`},
		{args: []string{"bench", "disk"}, want: `bench disk takes one directory, got 0 argument\(s\)`},
		{args: []string{"bench", "disk", "--file-size", "1KiB", "{dir}"}, want: `--file-size "1KiB": want at least 1MiB`},
		{args: []string{"bench", "disk", "--part-size", "1000", "{dir}"}, want: `--partsize "1000": want a multiple of 4KiB`},
		{args: []string{"bench", "disk", "--partsize", "16M", "{dir}"}, want: `--partsize: .*16MiB`},
		{args: []string{"bench", "disk", "--file-size", "16M", "{dir}"}, want: `--file-size: .*16MiB`},
		{args: []string{"bench", "disk", "--files", "0", "{dir}"}, want: `--files and --writers must be at least 1`},
		{args: []string{"bench", "disk", "{missing}"}, want: `bench disk: .* is not a directory`},
		{args: []string{"bench", "disk", "--network-rate", "fast", "{dir}"}, want: `--network-rate "fast": want a rate`},
		{args: []string{"bench", "serve", "extra"}, want: `bench serve takes no arguments`},
		{args: []string{"config", "list"}, want: `unknown command "list" for "s3pd config": did you mean "s3pd config show"`},
		{args: []string{"config", "zzzz"}, want: `unknown command "zzzz" for "s3pd config": "s3pd config --help" lists its commands`},
		{args: []string{"bench", "serve", "--conn-rate", "fast"}, want: `--conn-rate: `},
		{args: []string{"bench", "serve", "--min-part-size", "big"}, want: `--min-part-size "big": `},
		{args: []string{"bench", "serve", "--cors-origin", "localhost:3000"}, want: `--cors-origin "localhost:3000": want scheme://host`},
		{args: []string{"bench", "serve", "--ttfb", "-1s"}, want: `a duration cannot be negative`},
		{args: []string{"bench", "serve", "--faults", "{missing}"}, want: `--faults: `},
		{args: []string{"bench", "serve", "--faults", "{badfaults}"}, want: `--faults .*: `},
		{args: []string{"bench", "serve", "--listen", "256.1.1.1:1", "--allow-remote"}, want: `--listen 256.1.1.1:1: `},
		{args: []string{"bench", "serve", "--listen", "0.0.0.0:0"}, want: `--listen 0.0.0.0:0 can be reached from other hosts, .* give --allow-remote`},
		{args: []string{"bench", "serve", "--tls-cert", "{file}"}, want: `--tls-cert and --tls-key go together`},
		{args: []string{"bench", "serve", "--ca-out", "{dir}/ca.pem"}, want: `--ca-out needs --tls`},
		{args: []string{"bench", "serve", "--tls-cert", "{file}", "--tls-key", "{file}", "--ca-out", "{dir}/ca.pem"}, want: `--ca-out is for the self-signed certificate`},
		{args: []string{"bench", "serve", "--tls", "--tls-key-type", "dsa"}, want: `--tls-key-type "dsa": want rsa or ecdsa`},
		{args: []string{"bench", "serve", "--tls", "--tls-key-type", "ecdsa", "--listen", "127.0.0.1:0", "--ca-out", "{missing}/ca.pem"}, want: `--ca-out: `},

		// raid-setup
		{args: []string{"raid-setup", "--list", "--yes"}, want: `--list takes only --json`},
		{args: []string{"raid-setup", "--devices", "/dev/x"}, want: `--mount is required`},
		{args: []string{"raid-setup", "--mount", "/m", "--yes", "--dry-run", "--devices", "/dev/x"}, want: `--yes and --dry-run contradict each other`},
		{args: []string{"raid-setup", "--mount", "/m", "--wipe", "--devices", "/dev/x"}, want: `--wipe works with --teardown only`},
		{args: []string{"raid-setup", "--mount", "/m", "--teardown", "--all-ebs"}, want: `--teardown takes --devices`},
		{args: []string{"raid-setup", "--mount", "/m"}, want: `choose the devices: --devices, --all-instance-store or --all-ebs`},
		{args: []string{"raid-setup", "--mount", "/m", "--devices", "/dev/x", "--all-ebs"}, want: `--devices, --all-instance-store and --all-ebs exclude each other`},
		{args: []string{"raid-setup", "--mount", "/m", "--devices", "/dev/x", "--fstab-file", "{file}"}, want: `--fstab-file needs --fstab`},
		{args: []string{"raid-setup", "--mount", "/m", "--devices", "/dev/x", "--chunk", "huge"}, want: `--chunk: `},

		// the rest
		{args: []string{"shards", "check"}, want: `shards check takes the --json output of every shard`},
		{args: []string{"completion", "tcsh2"}, want: `unknown command "tcsh2"`},
		{args: s3("copy", "--adaptive", "maybe", "{dir}", "s3://bkt/p/"), want: `--adaptive "maybe": want on or off`},
		{args: s3("bench", "--verify", "sometimes", "s3://bkt/p/"), want: `--verify "sometimes": want auto, full, require or off`},
		{args: []string{"man"}, want: `man takes one directory, got 0 argument\(s\)`},
		{args: []string{"man", "{file}/sub"}, want: `man: `},
		{args: []string{"sync", "s3://bkt/p/", "{dir}"}, want: `s3pd has no sync command`},
		{args: s3("get", "--preset", "p4d.24xlarge", "s3://bkt/p/", "{dir}"), want: `preset p4d.24xlarge sets nics en0,en1,en2,en3, which this machine cannot use \(en0: .*\): name its cards with --nics or S3PD_NICS`},
		{args: []string{"get", "--region", "s3://bkt/p/", "{dir}"}, want: `--region took s3://bkt/p/ as its value: give --region a value of its own`},
		{args: s3("get", "--include", "*.json", "s3://bkt/p/", "{dir}"), want: `--include '\*\.json' with no --exclude before it would select everything .*: s3pd get --exclude '\*' --include '\*\.json' s3://bkt/p/`},
		{args: s3("copy", "--include", "*.json", "{dir}", "s3://bkt/p/"), want: `to take only what matches: s3pd copy --exclude '\*' --include '\*\.json'`},
		{args: []string{"gte", "s3://bkt/k", "{dir}"}, want: `unknown command "gte": did you mean get\?`},
		{args: []string{"./a", "./b"}, want: `unknown command "./a": without a command s3pd takes the original s3pd's form`},
		{args: []string{"frob"}, want: `unknown command "frob": "s3pd --help" lists the commands`},
	}
}

// notARow are refusals no command line can reach, each with why: a row
// would have nothing to remove.
var notARow = map[string]string{
	"log level %q: want debug, info, warn or error":                                     "the log_level setting's parser refuses the value first (row --log-format's twin: settings)",
	"--nics: no card reaches %s (%s)":                                                   "needs a card that cannot reach the endpoint: internal/netnstest TestCopyOverNICs",
	"no usable %s devices found (see --list); nothing was changed":                      "needs block devices: pkg/raid's tests",
	"not running the plan without --yes (stdin is not a terminal); nothing was changed": "needs block devices: TestRaidSetup* in raid_test.go",
	"%s: %v":                      "bench compare's file errors: the row \"bench compare {missing} {missing}\"",
	"--ttfb must not be negative": "the duration flag refuses a negative value first (its row: bench serve --ttfb -1s)",
	"completion %q: want bash, zsh, fish or powershell": "cobra refuses an unknown shell as an unknown command first (its row: completion tcsh2)",
}

// TestEveryRefusal runs every refusal through Execute: exit 2, one line
// naming the problem. Then every usageErrorf in cmd/ must have matched
// some row's line (or be in notARow): a refusal without a row fails.
func TestEveryRefusal(t *testing.T) {
	var lines []string
	for _, r := range refusals() {
		name := strings.Join(r.args, " ")
		t.Run(name, func(t *testing.T) {
			copyEnv(t)
			for k, v := range r.env {
				t.Setenv(k, v)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "f")
			if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(t.TempDir(), "faults")
			if err := os.WriteFile(bad, []byte("key=a action=explode\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			empty := t.TempDir()
			repl := strings.NewReplacer("{dir}", empty, "{file}", file, "{badfaults}", bad, "{missing}", filepath.Join(dir, "missing"))
			args := make([]string, len(r.args))
			for i, a := range r.args {
				args[i] = repl.Replace(a)
			}
			var out, errOut bytes.Buffer
			var in io.Reader = strings.NewReader("")
			if r.devNull {
				null, err := os.Open(os.DevNull)
				if err != nil {
					t.Fatal(err)
				}
				defer null.Close()
				in = null
			}
			code := Execute(context.Background(), &IOStreams{In: in, Out: &out, ErrOut: &errOut}, "test", args)
			line := strings.TrimSpace(errOut.String())
			lines = append(lines, line)
			if code != ExitUsage || !regexp.MustCompile(r.want).MatchString(line) {
				t.Errorf("exit %d, stderr %q; want exit 2 and /%s/", code, line, r.want)
			}
			if strings.Count(line, "\n") > 0 {
				t.Errorf("stderr has %d lines, want one: %q", strings.Count(line, "\n")+1, line)
			}
			if ents, _ := os.ReadDir(empty); len(ents) > 0 {
				t.Errorf("a refused run wrote %d entries into a directory it was given", len(ents))
			}
		})
	}
	for _, site := range usageErrorfSites(t) {
		if _, ok := notARow[site.format]; ok {
			continue
		}
		re := formatRegexp(site.format)
		found := false
		for _, l := range lines {
			found = found || re.MatchString(l)
		}
		if !found {
			t.Errorf("%s: refusal %q has no row in refusals()", site.at, site.format)
		}
	}
}

// usageErrorfSite is one usageErrorf call in cmd/ with a literal format.
type usageErrorfSite struct{ at, format string }

// usageErrorfSites finds every usageErrorf call of cmd's own files.
func usageErrorfSites(t *testing.T) []usageErrorfSite {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile("usageErrorf\\((`[^`]*`|\"(?:[^\"\\\\]|\\\\.)*\")")
	var out []usageErrorfSite
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllSubmatchIndex(b, -1) {
			lit := string(b[m[2]:m[3]])
			format, err := strconv.Unquote(lit)
			if err != nil {
				t.Fatalf("%s: unquote %s: %v", f, lit, err)
			}
			if format == "format" {
				continue
			}
			line := bytes.Count(b[:m[0]], []byte("\n")) + 1
			out = append(out, usageErrorfSite{at: f + ":" + strconv.Itoa(line), format: format})
		}
	}
	if len(out) < 50 {
		t.Fatalf("found %d usageErrorf calls in cmd/, want the ~100 there are", len(out))
	}
	return out
}

// formatRegexp matches what a format prints: its verbs match anything.
func formatRegexp(format string) *regexp.Regexp {
	verb := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`)
	var b strings.Builder
	last := 0
	for _, m := range verb.FindAllStringIndex(format, -1) {
		b.WriteString(regexp.QuoteMeta(format[last:m[0]]))
		b.WriteString(".*")
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(format[last:]))
	return regexp.MustCompile(b.String())
}
