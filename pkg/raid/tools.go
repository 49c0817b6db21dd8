package raid

import (
	"fmt"
	"strings"
)

// packages maps each tool raid-setup runs to the packages that ship it:
// Debian and Ubuntu first, then Amazon Linux.
var packages = map[string][2]string{
	"mdadm":      {"mdadm", "mdadm"},
	"mkfs.xfs":   {"xfsprogs", "xfsprogs"},
	"mkfs.ext4":  {"e2fsprogs", "e2fsprogs"},
	"mkfs.btrfs": {"btrfs-progs", ""},
	"btrfs":      {"btrfs-progs", ""},
	"wipefs":     {"util-linux", "util-linux"},
	"blkid":      {"util-linux", "util-linux"},
	"mount":      {"mount", "util-linux"},
	"umount":     {"mount", "util-linux"},
	"mkdir":      {"coreutils", "coreutils"},
	"chown":      {"coreutils", "coreutils"},
}

// Tools lists the programs Apply runs for the plan, probes included.
func (p *Plan) Tools() []string {
	tools := []string{"blkid"}
	seen := map[string]bool{"blkid": true}
	if p.Spec.Striping == StripingMD {
		tools, seen["mdadm"] = append(tools, "mdadm"), true
	}
	for _, s := range p.Steps() {
		if len(s.Cmd) > 0 && !seen[s.Cmd[0]] {
			seen[s.Cmd[0]] = true
			tools = append(tools, s.Cmd[0])
		}
	}
	return tools
}

// TeardownTools lists the programs Teardown runs for spec.
func TeardownTools(spec TeardownSpec) []string {
	tools := []string{"umount"}
	if spec.Striping == StripingMD || spec.Striping == "" {
		tools = append(tools, "mdadm")
	}
	if spec.Wipe {
		tools = append(tools, "blkid")
		if spec.Striping == StripingBtrfs {
			tools = append(tools, "wipefs")
		}
	}
	return tools
}

// CheckTools returns an error naming every missing tool and the package to
// install for it; lookPath is exec.LookPath outside tests.
func CheckTools(tools []string, lookPath func(string) (string, error)) error {
	var missing []string
	for _, t := range tools {
		if _, err := lookPath(t); err == nil {
			continue
		}
		missing = append(missing, t+" is not installed: "+InstallHint(t))
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools:\n  %s", strings.Join(missing, "\n  "))
	}
	return nil
}

// InstallHint says how to install tool on Debian, Ubuntu and Amazon Linux.
func InstallHint(tool string) string {
	pk, ok := packages[tool]
	if !ok {
		return "install the package that provides " + tool
	}
	hint := fmt.Sprintf("apt-get install %s (Debian, Ubuntu)", pk[0])
	if pk[1] == "" {
		return hint + "; Amazon Linux 2023 does not package it, use --engine md"
	}
	return hint + fmt.Sprintf(" or dnf install %s (Amazon Linux)", pk[1])
}
