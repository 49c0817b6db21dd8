// Package raid discovers block devices and stripes them into one fast landing
// volume: it plans the commands (mdadm, mkfs, mount, chown, an fstab line),
// applies them idempotently through a Runner, and tears the volume down again.
// It never prints; callers render plans, reports and errors.
package raid

import "strings"

// Kind says what a block device is on EC2.
type Kind string

// The kinds of block device that Discover tells apart.
const (
	KindInstanceStore Kind = "instance-store" // "Amazon EC2 NVMe Instance Storage"
	KindEBS           Kind = "ebs"            // "Amazon Elastic Block Store"
	KindArray         Kind = "md-array"       // an md array itself (/sys/block/mdN)
	KindOther         Kind = "other"
)

// Model strings that EC2 NVMe controllers report in /sys/block/*/device/model.
const (
	ModelInstanceStore = "Amazon EC2 NVMe Instance Storage"
	ModelEBS           = "Amazon Elastic Block Store"
)

// kindOf classifies a device from its name and model.
func kindOf(name, model string) Kind {
	switch {
	case model == ModelInstanceStore:
		return KindInstanceStore
	case model == ModelEBS:
		return KindEBS
	case len(name) > 2 && name[:2] == "md":
		return KindArray
	}
	return KindOther
}

// Striping names what stripes the devices of a plan (the --engine flag):
// Linux md or btrfs.
type Striping string

// The striping engines.
const (
	// StripingMD stripes with Linux md (mdadm RAID0) and formats the array
	// with XFS or ext4.
	StripingMD Striping = "md"
	// StripingBtrfs stripes with btrfs itself: data raid0, metadata raid1.
	StripingBtrfs Striping = "btrfs"
)

// Device is one whole block device from /sys/block.
type Device struct {
	Name   string `json:"name"`   // nvme1n1
	Path   string `json:"path"`   // /dev/nvme1n1
	Size   int64  `json:"size"`   // bytes
	Model  string `json:"model"`  // from device/model, trimmed
	Serial string `json:"serial"` // EBS volumes carry their volume id here
	Kind   Kind   `json:"kind"`
	// Root is true for the device holding the root filesystem (directly,
	// through a partition, or through an array or device-mapper stack).
	Root        bool     `json:"root"`
	Partitions  []string `json:"partitions,omitempty"`
	Holders     []string `json:"holders,omitempty"` // arrays or dm devices built on it
	MountPoints []string `json:"mount_points,omitempty"`
	// Signature is what the first bytes hold: xfs, ext4, btrfs, swap,
	// md, gpt, dos, lvm2, or "" for none.
	Signature string `json:"signature,omitempty"`
	Label     string `json:"label,omitempty"` // filesystem label, when the signature has one
	// Unchecked says why the signature could not be read (not root), "" when it was.
	Unchecked string `json:"unchecked,omitempty"`
	// Reasons it must not be striped; empty when usable.
	Reasons []string `json:"reasons,omitempty"`
	Usable  bool     `json:"usable"`
}

// HoldsData reports whether the device holds something that striping would
// destroy: a filesystem or other signature, a partition table, a mount, or a
// place in an array.
func (d Device) HoldsData() bool {
	return d.Signature != "" || len(d.Partitions) > 0 || len(d.MountPoints) > 0 || len(d.Holders) > 0
}

// reasons lists why d is unusable, in a fixed order.
func (d Device) reasons() []string {
	var r []string
	if d.Root {
		r = append(r, "holds the root filesystem")
	}
	if d.Kind == KindArray {
		r = append(r, "is an md array")
	}
	for _, m := range d.MountPoints {
		r = append(r, "mounted at "+m)
	}
	if len(d.Partitions) > 0 {
		r = append(r, "partitioned ("+strings.Join(d.Partitions, ", ")+")")
	}
	if d.Signature != "" {
		r = append(r, "holds data ("+d.Signature+" signature)")
	}
	for _, h := range d.Holders {
		r = append(r, "member of "+h)
	}
	return r
}
