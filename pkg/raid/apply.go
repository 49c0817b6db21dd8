package raid

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Env is what Apply and Teardown act through.
type Env struct {
	Runner    Runner
	MountInfo string        // normally /proc/self/mountinfo
	Report    func(Outcome) // called after each step; may be nil
}

// Outcome is what happened to one step.
type Outcome struct {
	Step    Step   `json:"step"`
	Changed bool   `json:"changed"` // false when it was already in place
	Note    string `json:"note,omitempty"`
}

// Result is what Apply or Teardown did, step by step.
type Result struct {
	Outcomes []Outcome `json:"outcomes"`
	UUID     string    `json:"uuid,omitempty"` // the filesystem's UUID
}

// Changed reports whether any step changed the machine.
func (r *Result) Changed() bool {
	for _, o := range r.Outcomes {
		if o.Changed {
			return true
		}
	}
	return false
}

// state is what the machine holds, as far as the plan is concerned.
type state struct {
	arrayUp bool   // md: the array runs with exactly the plan's members
	fsType  string // on the target, "" for none
	uuid    string
	mounted bool // the target is mounted at the mount point
	dirOK   bool
	fstabOK bool // the fstab file already has this volume's line
}

// applier carries one Apply call.
type applier struct {
	p       *Plan
	env     Env
	st      state
	res     *Result
	changed []string   // what this run changed, in order
	kept    []string   // what was already in place
	undo    [][]string // per changed step, the commands that undo it
}

// Apply makes the machine match the plan. It probes first and refuses,
// having changed nothing, when what it finds conflicts with the plan (an
// array with other members, another filesystem, another mount, another fstab
// line). Steps already in place are skipped, so a second run changes nothing.
// A failure part-way returns a *PartialError that says what was changed and
// how to undo it.
func Apply(ctx context.Context, p *Plan, env Env) (*Result, error) {
	a := &applier{p: p, env: env, res: &Result{}}
	if err := a.probe(ctx); err != nil {
		return nil, err
	}
	a.res.UUID = a.st.uuid
	steps := p.Steps()
	for i, s := range steps {
		if note, done := a.done(s); done {
			a.kept = append(a.kept, note)
			a.report(Outcome{Step: s, Note: note})
			continue
		}
		if err := a.do(ctx, s); err != nil {
			return a.res, a.partial(s, steps[i+1:], err)
		}
		a.report(Outcome{Step: s, Changed: true})
	}
	a.res.UUID = a.st.uuid
	return a.res, nil
}

func (a *applier) report(o Outcome) {
	a.res.Outcomes = append(a.res.Outcomes, o)
	if a.env.Report != nil {
		a.env.Report(o)
	}
}

// probe reads the state and rejects conflicts before anything changes.
func (a *applier) probe(ctx context.Context) error {
	p, r := a.p, a.env.Runner
	if p.Spec.Striping == StripingMD {
		members, found, err := mdMembers(ctx, r, p.Target)
		if err != nil {
			return err
		}
		if found {
			if !sameSet(members, p.memberPaths()) {
				return fmt.Errorf("apply: %s already exists with members %s, not %s; nothing was changed",
					p.Target, strings.Join(members, " "), strings.Join(p.memberPaths(), " "))
			}
			a.st.arrayUp = true
			a.st.fsType, a.st.uuid, err = blkid(ctx, r, p.Target)
			if err != nil {
				return err
			}
		}
	} else if err := a.probeBtrfs(ctx); err != nil {
		return err
	}
	if a.st.fsType != "" && a.st.fsType != p.Spec.FS {
		return fmt.Errorf("apply: %s holds %s, not %s; nothing was changed (tear it down with --teardown --wipe first)",
			p.Target, a.st.fsType, p.Spec.FS)
	}
	if err := a.probeMount(); err != nil {
		return err
	}
	if p.Spec.Fstab {
		line, err := fstabEntry(p.Spec.FstabFile, p.Spec.Mount)
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		if line != "" {
			f := strings.Fields(line)
			if a.st.uuid == "" || f[0] != "UUID="+a.st.uuid {
				return fmt.Errorf("apply: %s already has a line for %s: %q; nothing was changed (remove it, or leave out --fstab)",
					p.Spec.FstabFile, p.Spec.Mount, line)
			}
			a.st.fstabOK = true
		}
	}
	return nil
}

// probeBtrfs finds whether every member already carries this filesystem.
func (a *applier) probeBtrfs(ctx context.Context) error {
	p := a.p
	uuids := map[string]bool{}
	ours := 0
	for _, d := range p.Members {
		typ, uuid, err := blkid(ctx, a.env.Runner, d.Path)
		if err != nil {
			return err
		}
		if typ == "btrfs" && d.Label == p.Spec.Name {
			ours++
			uuids[uuid] = true
		}
	}
	switch {
	case ours == len(p.Members) && len(uuids) == 1 && len(p.Wipe) == 0:
		a.st.fsType = "btrfs"
		for u := range uuids {
			a.st.uuid = u
		}
	case ours > 0 && len(p.Wipe) == 0:
		return fmt.Errorf("apply: only some of %s carry the btrfs filesystem %q; nothing was changed",
			strings.Join(p.memberPaths(), " "), p.Spec.Name)
	}
	return nil
}

// probeMount checks the mount point and where the target is mounted.
func (a *applier) probeMount() error {
	p := a.p
	ms, err := ReadMountInfo(a.env.MountInfo)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	ours := map[string]bool{resolveDevice(p.Target): true}
	if p.Spec.Striping == StripingBtrfs {
		for _, m := range p.memberPaths() {
			ours[resolveDevice(m)] = true
		}
	}
	for _, m := range ms {
		src := resolveDevice(m.Source)
		switch {
		case m.Point == p.Spec.Mount && ours[src] && a.st.fsType != "":
			a.st.mounted = true
		case m.Point == p.Spec.Mount:
			return fmt.Errorf("apply: %s is already mounted at %s; nothing was changed", m.Source, m.Point)
		case ours[src]:
			return fmt.Errorf("apply: %s is already mounted at %s; nothing was changed", m.Source, m.Point)
		}
	}
	fi, err := os.Stat(p.Spec.Mount)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("apply: mount point %s exists and is not a directory; nothing was changed", p.Spec.Mount)
	case err == nil:
		a.st.dirOK = true
	}
	return nil
}

// done reports whether a step is already in place, and says so.
func (a *applier) done(s Step) (string, bool) {
	st, p := a.st, a.p
	switch s.Action {
	case ActWipe:
		return "array or filesystem already in place", st.arrayUp || st.fsType != ""
	case ActCreate:
		return fmt.Sprintf("array %s already runs with these members", p.Target), st.arrayUp
	case ActMkfs:
		return fmt.Sprintf("%s already holds %s (UUID %s)", p.Target, st.fsType, st.uuid), st.fsType != ""
	case ActScan:
		return "already mounted", st.mounted
	case ActMkdir:
		return p.Spec.Mount + " already exists", st.dirOK
	case ActMount:
		return fmt.Sprintf("%s already mounted at %s", p.Target, p.Spec.Mount), st.mounted
	case ActChown:
		return fmt.Sprintf("%s already owned by %s", p.Spec.Mount, p.Spec.Owner), ownedBy(p.Spec.Mount, p.Spec.Owner)
	case ActFstab:
		return p.Spec.FstabFile + " already has the line", st.fstabOK
	}
	return "", false
}

// do runs one step and records what it changed and how to undo it.
func (a *applier) do(ctx context.Context, s Step) error {
	p, r := a.p, a.env.Runner
	members := strings.Join(p.memberPaths(), " ")
	if s.Action == ActFstab {
		line := p.FstabLine(a.st.uuid)
		if err := appendFstab(s.File, line); err != nil {
			return err
		}
		a.record(fmt.Sprintf("added to %s: %s", s.File, line), []string{fmt.Sprintf("sed -i '\\#^UUID=%s #d' %s", a.st.uuid, s.File)})
		return nil
	}
	if _, err := r.Run(ctx, s.Cmd[0], s.Cmd[1:]...); err != nil {
		a.failed(ctx, s)
		return err
	}
	switch s.Action {
	case ActWipe:
		a.record("erased old signatures on "+strings.Join(p.Wipe, " ")+" (not recoverable)", nil)
	case ActCreate:
		a.st.arrayUp = true
		a.record(fmt.Sprintf("created array %s (raid0 over %s); it is running", p.Target, members),
			[]string{"mdadm --stop " + p.Target, "mdadm --zero-superblock " + members})
	case ActMkfs:
		typ, uuid, err := blkid(ctx, r, p.Target)
		if err == nil && typ != p.Spec.FS {
			err = fmt.Errorf("mkfs: %s shows type %q after mkfs, want %s", p.Target, typ, p.Spec.FS)
		}
		a.st.fsType, a.st.uuid = typ, uuid
		a.record(fmt.Sprintf("made a %s filesystem on %s (UUID %s)", p.Spec.FS, a.fsOn(), uuid), []string{"wipefs -a " + a.fsOn()})
		if err != nil {
			return err
		}
	case ActMkdir:
		a.record("created directory "+p.Spec.Mount, []string{"rmdir " + p.Spec.Mount})
	case ActMount:
		a.st.mounted = true
		a.record(fmt.Sprintf("mounted %s at %s", p.Target, p.Spec.Mount), []string{"umount " + p.Spec.Mount})
	case ActChown:
		a.record(fmt.Sprintf("changed the owner of %s to %s", p.Spec.Mount, p.Spec.Owner), nil)
	}
	return nil
}

// failed records what a failing step may have left behind.
func (a *applier) failed(ctx context.Context, s Step) {
	p := a.p
	switch s.Action {
	case ActCreate:
		if members, found, err := mdMembers(ctx, a.env.Runner, p.Target); err == nil && found {
			a.record(fmt.Sprintf("array %s exists (members %s) although mdadm reported an error", p.Target, strings.Join(members, " ")),
				[]string{"mdadm --stop " + p.Target, "mdadm --zero-superblock " + strings.Join(members, " ")})
		}
	case ActMkfs:
		a.record(fmt.Sprintf("%s may hold a partly made filesystem", a.fsOn()), []string{"wipefs -a " + a.fsOn()})
	}
}

// fsOn names the devices that carry the filesystem.
func (a *applier) fsOn() string {
	if a.p.Spec.Striping == StripingBtrfs {
		return strings.Join(a.p.memberPaths(), " ")
	}
	return a.p.Target
}

func (a *applier) record(what string, undo []string) {
	a.changed = append(a.changed, what)
	a.undo = append(a.undo, undo)
}

// partial builds the error for a failure at step s.
func (a *applier) partial(s Step, rest []Step, err error) *PartialError {
	pe := &PartialError{Step: s, Err: err, Changed: a.changed, Kept: a.kept}
	for _, r := range rest {
		pe.NotDone = append(pe.NotDone, r.Action)
	}
	for i := len(a.undo) - 1; i >= 0; i-- {
		pe.Undo = append(pe.Undo, a.undo[i]...)
	}
	return pe
}

// PartialError is a failure part-way through Apply: it says what the run
// changed, what was already in place, what was not done, and the commands
// that undo the changes, in order.
type PartialError struct {
	Step    Step
	Err     error
	Changed []string
	Kept    []string
	NotDone []Action
	Undo    []string
}

func (e *PartialError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apply: step %s: %v\n", e.Step.Action, e.Err)
	b.WriteString("state of the machine:\n")
	if len(e.Changed) == 0 {
		b.WriteString("  nothing was changed by this run\n")
	}
	for _, c := range e.Changed {
		fmt.Fprintf(&b, "  changed: %s\n", c)
	}
	for _, k := range e.Kept {
		fmt.Fprintf(&b, "  already in place: %s\n", k)
	}
	if len(e.NotDone) > 0 {
		fmt.Fprintf(&b, "  not done: %s\n", joinActions(e.NotDone))
	}
	if len(e.Undo) > 0 {
		b.WriteString("to undo, run:\n")
		for _, u := range e.Undo {
			fmt.Fprintf(&b, "  %s\n", u)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func (e *PartialError) Unwrap() error { return e.Err }

func joinActions(as []Action) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// mdMembers asks mdadm for an array's members; found is false when the
// array does not exist.
func mdMembers(ctx context.Context, r Runner, array string) (members []string, found bool, err error) {
	out, err := r.Run(ctx, "mdadm", "--detail", "--export", array)
	if code := exitCode(err); err != nil && code > 0 {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("probe %s: %w", array, err)
	}
	kv := parseExport(out)
	type member struct {
		dev  string
		role int
	}
	var ms []member
	for k, v := range kv {
		if strings.HasPrefix(k, "MD_DEVICE_") && strings.HasSuffix(k, "_DEV") {
			role, err := strconv.Atoi(kv[strings.TrimSuffix(k, "_DEV")+"_ROLE"])
			if err != nil {
				role = len(kv) // spares and unknown roles go last
			}
			ms = append(ms, member{v, role})
		}
	}
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].role != ms[j].role {
			return ms[i].role < ms[j].role
		}
		return ms[i].dev < ms[j].dev
	})
	for _, m := range ms {
		members = append(members, m.dev)
	}
	return members, true, nil
}

// blkid probes dev for a filesystem, bypassing blkid's cache; typ is ""
// when there is none.
func blkid(ctx context.Context, r Runner, dev string) (typ, uuid string, err error) {
	out, err := r.Run(ctx, "blkid", "-p", "-o", "export", dev)
	if exitCode(err) == 2 {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("probe %s: %w", dev, err)
	}
	kv := parseExport(out)
	return kv["TYPE"], kv["UUID"], nil
}

// parseExport parses KEY=value lines.
func parseExport(b []byte) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			kv[k] = v
		}
	}
	return kv
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]bool{}
	for _, x := range a {
		in[resolveDevice(x)] = true
	}
	for _, x := range b {
		if !in[resolveDevice(x)] {
			return false
		}
	}
	return true
}

// ownedBy reports whether path is owned by owner ("user" with its login
// group, or "user:group"); false when either cannot be looked up.
func ownedBy(path, owner string) bool {
	name, group, _ := strings.Cut(owner, ":")
	u, err := user.Lookup(name)
	if err != nil {
		return false
	}
	gid := u.Gid
	if group != "" {
		g, err := user.LookupGroup(group)
		if err != nil {
			return false
		}
		gid = g.Gid
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && strconv.FormatUint(uint64(st.Uid), 10) == u.Uid && strconv.FormatUint(uint64(st.Gid), 10) == gid
}
