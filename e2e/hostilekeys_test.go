package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/s3pd/s3pd/pkg/s3emu"
)

// The differential fuzz of hostile keys: each round puts a random set of
// keys from a hostile alphabet into two kinds of server, the embedded
// emulator (which answers encoding-type=url as S3 does) and gofakes3's
// memory backend in-process (which ignores it and rolls keys that start
// with "/" up wrongly), then runs get, get --exclude, copy s3://... DIR,
// get --delete
// into a folder with a stray file, and --shard K/4 for every K, and
// checks what every run must hold whatever the keys:
//
//   - every key the server lists has one verdict: the run's listed count
//     is the server's own flat listing, and listed = transferred +
//     skipped + excluded + failed;
//   - each verdict names a key that exists; a failed one says why;
//   - every file at a final name is inside DEST, named after a key that
//     exists, and holds that key's bytes exactly; no file is left at a
//     name no key gives (a temporary one, the stray after a clean
//     --delete);
//   - the exit code is 1 when an object failed, 0 otherwise;
//   - the four shards' verdicts are the whole run's, each key in one
//     shard, and shards check agrees exactly when none failed;
//   - a key both servers list has the same verdict on both.
//
// S3PD_KEYFUZZ_ROUNDS sets the rounds (default 18, about 30 s with the
// race detector on two cores; `make fuzz KEYFUZZ=N` runs N), and
// S3PD_KEYFUZZ_SEED the first round's seed (default: from the clock);
// a failing round prints the seed that replays it alone.
func TestHostileKeys(t *testing.T) {
	rounds := 18
	if v := os.Getenv("S3PD_KEYFUZZ_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("S3PD_KEYFUZZ_ROUNDS=%q: want a count of rounds", v)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("S3PD_KEYFUZZ_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("S3PD_KEYFUZZ_SEED=%q: want a number", v)
		}
		seed = n
	}
	t.Logf("seed %d, %d rounds", seed, rounds)
	for i := range uint64(rounds) {
		rs := seed + i
		t.Run(fmt.Sprintf("seed=%d", rs), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("replay this round: S3PD_KEYFUZZ_SEED=%d S3PD_KEYFUZZ_ROUNDS=1 go test -run '^TestHostileKeys$' ./e2e/", rs)
				}
			})
			hostileRound(t, rs)
		})
	}
}

// hostileComponents are the pieces keys are made of, "/" apart.
var hostileComponents = []string{
	"", ".", "..", "a", "A", "b", "a b", " lead", "trail ", "tab\there", `back\slash`, `\`,
	"%41", "p%41q", "pAq", "%2F", "+", "a+b", "x\x01y", "del\x7f", "z\u200bw", "zw", "\ufeffbom", "bom",
	"\u00e9t\u00e9", "e\u0301te\u0301", // NFC and NFD of one name
	"Case", "case", "CASE", ".s3pd", "ü", "日本", strings.Repeat("l", 255), strings.Repeat("m", 256),
}

// hostileKeys returns a random set of keys, with some pairs put in on
// purpose: a key and a key under it ("a" and "a/b"), a 1,024-byte key,
// a directory marker with bytes and one without.
func hostileKeys(rng *rand.Rand) map[string][]byte {
	keys := map[string][]byte{}
	data := func() []byte {
		b := make([]byte, rng.IntN(48))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for range 5 + rng.IntN(8) {
		var parts []string
		for range 1 + rng.IntN(3) {
			parts = append(parts, hostileComponents[rng.IntN(len(hostileComponents))])
		}
		k := strings.Join(parts, "/")
		switch rng.IntN(10) {
		case 0:
			k = "/" + k
		case 1:
			k += "/"
		case 2:
			k = strings.Replace(k, "/", "//", 1)
		}
		if k == "" || len(k) > 1024 {
			continue
		}
		keys[k] = data()
	}
	if rng.IntN(2) == 0 {
		base := []string{"a", "x y", "z\u200bw"}[rng.IntN(3)]
		keys[base] = data()
		keys[base+"/b"] = data()
	}
	if rng.IntN(3) == 0 {
		k := "long/" + strings.Repeat("k", 250) + "/" + strings.Repeat("k", 250) + "/" + strings.Repeat("k", 250) + "/"
		keys[k+strings.Repeat("k", 1024-len(k))] = data()
	}
	if rng.IntN(3) == 0 {
		keys["dir/"] = nil
		keys["dir/in"] = data()
		keys["full/"] = []byte("a marker with bytes")
	}
	keys["ok/plain"] = data()
	return keys
}

// fakeStore starts gofakes3 with its memory backend in-process: a server
// that ignores encoding-type=url in listings.
func fakeStore(t *testing.T) *store {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	return startedStore(t, "gofakes3", srv.URL)
}

// hostileRound runs one key set through every command on both servers.
func hostileRound(t *testing.T, seed uint64) {
	keys := hostileKeys(rand.New(rand.NewPCG(seed, seed^0x5eed)))
	verdicts := map[string]map[string]string{} // server -> key -> status of get
	listings := map[string]map[string][]byte{}
	for _, s := range []*store{emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory}), fakeStore(t)} {
		for k, v := range keys {
			if _, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k), Body: bytes.NewReader(v)}); err != nil {
				t.Logf("%s refused the key %q: %v", s.name, k, err)
			}
		}
		listed := serverKeys(t, s)
		listings[s.name] = listed
		verdicts[s.name] = hostileRuns(t, s, listed)
	}
	// A key both servers list, with the same bytes, has one verdict.
	emu, fake := listings["emulator"], listings["gofakes3"]
	for k, v := range emu {
		if w, ok := fake[k]; !ok || !bytes.Equal(v, w) {
			continue
		}
		if a, b := verdicts["emulator"][k], verdicts["gofakes3"][k]; a != b && !contested(k, emu) && !contested(k, fake) {
			t.Errorf("key %q: %s on the emulator, %s on gofakes3", k, a, b)
		}
	}
}

// serverKeys is what the server's own flat listing holds, each key with
// its bytes: the keys decoded only when the answer says they are encoded.
func serverKeys(t *testing.T, s *store) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), EncodingType: types.EncodingTypeUrl})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("%s: list: %v", s.name, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if page.EncodingType == types.EncodingTypeUrl {
				if k, err = url.QueryUnescape(k); err != nil {
					t.Fatalf("%s: listed key %q: %v", s.name, aws.ToString(o.Key), err)
				}
			}
			got, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
			if err != nil {
				out[k] = nil // listed, but cannot be read back (a key the listing mangled)
				continue
			}
			var b bytes.Buffer
			b.ReadFrom(got.Body)
			got.Body.Close()
			out[k] = b.Bytes()
		}
	}
	return out
}

// jsonRun is what one run's --json output says.
type jsonRun struct {
	objects []struct {
		Key, Name, Status, Error string
	}
	summary *struct {
		Objects, Failed, Skipped, Listed, Excluded, Interrupted int64
	}
}

func parseJSONRun(t *testing.T, what, stdout string) jsonRun {
	t.Helper()
	var jr jsonRun
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		var h struct{ Type string }
		if json.Unmarshal(sc.Bytes(), &h) != nil {
			continue
		}
		switch h.Type {
		case "object":
			var o struct{ Key, Name, Status, Error string }
			if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
				t.Fatalf("%s: object line %s: %v", what, sc.Text(), err)
			}
			jr.objects = append(jr.objects, o)
		case "summary":
			jr.summary = &struct{ Objects, Failed, Skipped, Listed, Excluded, Interrupted int64 }{}
			if err := json.Unmarshal(sc.Bytes(), jr.summary); err != nil {
				t.Fatalf("%s: summary line %s: %v", what, sc.Text(), err)
			}
		}
	}
	if jr.summary == nil {
		t.Fatalf("%s: no summary line:\n%s", what, stdout)
	}
	return jr
}

// hostileRuns runs get, copy, get --delete and the four shards against s,
// whose flat listing is listed, checks each, and returns the verdict of
// get for each key.
func hostileRuns(t *testing.T, s *store, listed map[string][]byte) map[string]string {
	root := s.url("")
	dest := t.TempDir()
	jr := checkRun(t, s.name+": get", run(t, nil, s.cmd("get", "--json", root, dest)...), listed, int64(len(listed)), dest)
	verdicts := map[string]string{}
	for _, o := range jr.objects {
		verdicts[o.Key] = o.Status
	}

	// The rules take out every key with a "b" in it (its name, at the
	// bucket's root): each is listed and excluded, the rest as without.
	edest := t.TempDir()
	er := checkRun(t, s.name+": get --exclude", run(t, nil, s.cmd("get", "--json", "--exclude", "*b*", root, edest)...), listed, int64(len(listed)), edest)
	withB := 0
	for k := range listed {
		if strings.Contains(k, "b") {
			withB++
		}
	}
	if er.summary.Excluded != int64(withB) {
		t.Errorf("%s: get --exclude '*b*': %d excluded, %d keys hold a b", s.name, er.summary.Excluded, withB)
	}
	for _, o := range er.objects {
		if strings.Contains(o.Key, "b") {
			t.Errorf("%s: get --exclude '*b*': a verdict (%s) for %q, which the rules exclude", s.name, o.Status, o.Key)
		} else if verdicts[o.Key] != o.Status && !contested(o.Key, listed) {
			t.Errorf("%s: get --exclude: key %q: %s, want %s", s.name, o.Key, o.Status, verdicts[o.Key])
		}
	}

	cdest := t.TempDir()
	cr := checkRun(t, s.name+": copy", run(t, nil, s.cmd("copy", "--json", root, cdest)...), listed, int64(len(listed)), cdest)
	sameVerdicts(t, s.name+": copy against get", cr, verdicts, listed)

	sdest := t.TempDir()
	stray := filepath.Join(sdest, "stray-not-a-key")
	if err := os.WriteFile(stray, []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	sr := checkRun(t, s.name+": get --delete", run(t, nil, s.cmd("get", "--json", "--delete", root, sdest)...), listed, int64(len(listed)), sdest, "stray-not-a-key")
	sameVerdicts(t, s.name+": get --delete against get", sr, verdicts, listed)
	_, err := os.Stat(stray)
	switch {
	case sr.summary.Failed == 0 && err == nil:
		t.Errorf("%s: get --delete: no object failed, and the stray file is still there", s.name)
	case sr.summary.Failed > 0 && err != nil:
		t.Errorf("%s: get --delete: %d objects failed, yet the stray file was deleted (%v)", s.name, sr.summary.Failed, err)
	}

	var files []string
	var failed, shardListed int64
	union := map[string]string{}
	for k := range 4 {
		d := t.TempDir()
		what := fmt.Sprintf("%s: --shard %d/4", s.name, k)
		r := run(t, nil, s.cmd("get", "--json", "--shard", fmt.Sprintf("%d/4", k), root, d)...)
		jr := checkRun(t, what, r, listed, -1, d)
		shardListed += jr.summary.Listed
		failed += jr.summary.Failed
		for _, o := range jr.objects {
			if prev, twice := union[o.Key]; twice {
				t.Errorf("%s: key %q had a verdict in another shard too (%s)", what, o.Key, prev)
			}
			union[o.Key] = o.Status
		}
		f := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d.json", k))
		if err := os.WriteFile(f, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if shardListed != int64(len(listed)) {
		t.Errorf("%s: the shards listed %d objects, the server holds %d", s.name, shardListed, len(listed))
	}
	for k, v := range verdicts {
		if union[k] != v && !contested(k, listed) {
			t.Errorf("%s: key %q: %s in its shard, %s in the whole run", s.name, k, union[k], v)
		}
	}
	check := run(t, nil, append([]string{"shards", "check"}, files...)...)
	if want := min(failed, 1); int64(check.code) != want {
		t.Errorf("%s: shards check: exit %d with %d failed objects, want %d\n%s%s", s.name, check.code, failed, want, check.stdout, check.stderr)
	}
	return verdicts
}

// contested reports whether key lands where another key needs a folder
// ("a" against "a/b"): which of them lands first in one DEST, and so
// which one fails, depends on timing, so their verdicts are not compared
// between runs (each run still gives each one verdict, and checkRun
// checks the files).
func contested(key string, listed map[string][]byte) bool {
	for k := range listed {
		if strings.HasPrefix(k, key+"/") {
			return true
		}
	}
	return strings.Contains(key, "/") && func() bool {
		for i := range len(key) {
			if key[i] == '/' {
				if _, ok := listed[key[:i]]; ok {
					return true
				}
			}
		}
		return false
	}()
}

// sameVerdicts fails unless jr gave each key the verdict want has
// (contested keys aside).
func sameVerdicts(t *testing.T, what string, jr jsonRun, want map[string]string, listed map[string][]byte) {
	t.Helper()
	for _, o := range jr.objects {
		if want[o.Key] != o.Status && !contested(o.Key, listed) {
			t.Errorf("%s: key %q: %s, want %s", what, o.Key, o.Status, want[o.Key])
		}
	}
}

// checkRun checks one run's conservation, its verdicts, its files and
// its exit code; wantListed is the count it must list (-1: a shard's
// share, checked by the caller); spare names files DEST held before the
// run that a run with failures keeps.
func checkRun(t *testing.T, what string, r result, listed map[string][]byte, wantListed int64, dest string, spare ...string) jsonRun {
	t.Helper()
	jr := parseJSONRun(t, what, r.stdout)
	s := jr.summary
	if s.Interrupted != 0 {
		t.Errorf("%s: %d interrupted", what, s.Interrupted)
	}
	if wantListed >= 0 && s.Listed != wantListed {
		t.Errorf("%s: listed %d, the server's flat listing holds %d keys", what, s.Listed, wantListed)
	}
	if got := s.Objects + s.Skipped + s.Excluded + s.Failed; got != s.Listed {
		t.Errorf("%s: listed %d, but %d transferred + %d skipped + %d excluded + %d failed = %d", what, s.Listed, s.Objects, s.Skipped, s.Excluded, s.Failed, got)
	}
	if int64(len(jr.objects)) != s.Listed-s.Excluded {
		t.Errorf("%s: %d object lines for %d listed, %d excluded", what, len(jr.objects), s.Listed, s.Excluded)
	}
	want := 0
	if s.Failed > 0 {
		want = 1
	}
	if r.code != want {
		t.Errorf("%s: exit %d with %d failed, want %d\n%s", what, r.code, s.Failed, want, r.stderr)
	}
	ok := map[string]bool{}
	for _, o := range jr.objects {
		data, exists := listed[o.Key]
		switch {
		case !exists:
			t.Errorf("%s: a verdict (%s) for %q, which the server does not list", what, o.Status, o.Key)
		case o.Status == "failed" && o.Error == "":
			t.Errorf("%s: %q failed without a reason", what, o.Key)
		case o.Status == "ok":
			ok[o.Name] = true
			if got, err := os.ReadFile(filepath.Join(dest, o.Name)); err != nil || !bytes.Equal(got, data) {
				t.Errorf("%s: %q transferred, but its file %q holds other bytes (%v)", what, o.Key, o.Name, err)
			}
		}
	}
	// Every file in DEST is a transferred key's, byte-exact; nothing else
	// is left (the work folder may stay, empty).
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		switch {
		case d.IsDir() && rel == ".s3pd":
			if left, _ := os.ReadDir(p); len(left) > 0 && s.Failed == 0 {
				t.Errorf("%s: the work folder keeps %d entries after a clean run", what, len(left))
			}
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			t.Errorf("%s: %q in DEST is not a regular file (%s)", what, rel, d.Type())
			return nil
		}
		name := filepath.ToSlash(rel)
		if slices.Contains(spare, name) {
			return nil
		}
		data, exists := listed[name]
		got, rerr := os.ReadFile(p)
		switch {
		case !exists:
			t.Errorf("%s: file %q in DEST is named after no key", what, name)
		case rerr != nil || !bytes.Equal(got, data):
			t.Errorf("%s: file %q does not hold its key's bytes (%v)", what, name, rerr)
		case !ok[name]:
			t.Errorf("%s: file %q is in DEST, yet its key was not transferred", what, name)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: walk DEST: %v", what, err)
	}
	return jr
}

// TestLeadingSlashKeyRefusedOnBothServers: "/abs-x" beside "ok/plain" is
// refused and named, exit 1, two objects listed, whether the server
// encodes its listings (the emulator) or not (gofakes3, whose delimited
// listing rolls "/abs-x" up into a prefix "abs-x" that holds nothing: the
// key was dropped without a word, exit 0, before); ls shows "PRE /" from
// both (it showed "PRE abs-x" from gofakes3 before).
func TestLeadingSlashKeyRefusedOnBothServers(t *testing.T) {
	for _, s := range []*store{emuStore(t, s3emu.Options{Backend: s3emu.BackendMemory}), fakeStore(t)} {
		s.put(t, "/abs-x", []byte("abs"))
		s.put(t, "ok/plain", []byte("plain"))
		dest := t.TempDir()
		r := run(t, nil, s.cmd("get", s.url(""), dest)...)
		if r.code != 1 || !strings.Contains(r.stderr, "/abs-x: unsafe key \"/abs-x\": absolute path") ||
			!strings.Contains(r.stdout, "objects: 1 transferred, 0 skipped, 1 failed; 2 listed") {
			t.Errorf("%s: exit %d, want 1 with /abs-x refused and 2 listed\n%s%s", s.name, r.code, r.stdout, r.stderr)
		}
		sameTree(t, dest, map[string][]byte{"ok/plain": []byte("plain")})
		ls := run(t, nil, s.cmd("ls", s.url(""))...)
		if ls.code != 0 || !strings.Contains(ls.stdout, "PRE /\n") || !strings.Contains(ls.stdout, "PRE ok/\n") || strings.Contains(ls.stdout, "abs-x") {
			t.Errorf("%s: ls: exit %d, want PRE / and PRE ok/\n%s%s", s.name, ls.code, ls.stdout, ls.stderr)
		}
	}
}
