package nics

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoInterface is wrapped by every error Select returns for a --nics value
// that names no usable interface.
var ErrNoInterface = errors.New("no usable interface")

// Resolve turns a --nics value ("eth0,eth1" or "all") into the machine's
// interfaces, or a clear error when one is unknown, down or has no address.
func Resolve(spec string) ([]Interface, error) {
	ifaces, err := List(Options{})
	if err != nil {
		return nil, err
	}
	return Select(ifaces, spec)
}

// Select is Resolve over a given list of interfaces. "all" picks every
// interface that is up, not the loopback, not a bridge and has an address;
// a list keeps its order and drops repeats.
func Select(ifaces []Interface, spec string) ([]Interface, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("--nics: empty value: %w", ErrNoInterface)
	}
	if spec == "all" {
		var out []Interface
		for _, i := range ifaces {
			if i.Candidate() {
				out = append(out, i)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("--nics all: no interface is up, not loopback and has an address: %w", ErrNoInterface)
		}
		return out, nil
	}
	byName := make(map[string]Interface, len(ifaces))
	for _, i := range ifaces {
		byName[i.Name] = i
	}
	var out []Interface
	seen := map[string]bool{}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		i, ok := byName[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("--nics %s: unknown interface (have %s): %w", name, names(ifaces), ErrNoInterface)
		case !i.Up:
			return nil, fmt.Errorf("--nics %s: interface is down: %w", name, ErrNoInterface)
		case i.Loopback:
			return nil, fmt.Errorf("--nics %s: the loopback interface cannot reach S3: %w", name, ErrNoInterface)
		}
		if _, ok := i.SourceAddr(); !ok {
			return nil, fmt.Errorf("--nics %s: interface has no IPv4 or global IPv6 address: %w", name, ErrNoInterface)
		}
		out = append(out, i)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--nics %q: no interface named: %w", spec, ErrNoInterface)
	}
	return out, nil
}

func names(ifaces []Interface) string {
	n := make([]string, len(ifaces))
	for k, i := range ifaces {
		n[k] = i.Name
	}
	return strings.Join(n, ", ")
}
