#!/bin/sh
# Installs the tools the raid tests run for real (mkfs.xfs, mkfs.ext4,
# mkfs.btrfs on loop devices) and mdadm (whose --create cannot run in a
# kernel without md; the tests drive it through a fake runner), and
# fincore (the direct I/O tests count cached pages with it), when they
# are missing. Debian/Ubuntu only; does nothing when all are present.
set -eu

missing=""
for pair in mdadm:mdadm mkfs.xfs:xfsprogs xfs_info:xfsprogs mkfs.btrfs:btrfs-progs mkfs.ext4:e2fsprogs dumpe2fs:e2fsprogs fincore:util-linux-extra; do
	tool=${pair%%:*}
	pkg=${pair#*:}
	if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ] && [ ! -x "/sbin/$tool" ]; then
		case " $missing " in *" $pkg "*) ;; *) missing="$missing $pkg" ;; esac
	fi
done

if [ -z "$missing" ]; then
	echo "ci-raid-deps: mdadm, xfsprogs, btrfs-progs and e2fsprogs already installed"
	exit 0
fi
# Under CI=true the tests that need them fail rather than skip, so a
# machine that cannot install them fails here, saying why.
fail=0
[ "${CI:-}" = true ] && fail=1
if [ "$(id -u)" -ne 0 ]; then
	echo "ci-raid-deps: need root to install:$missing (the raid tests that need them skip, or fail under CI=true)" >&2
	exit $fail
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "ci-raid-deps: no apt-get; install$missing by hand (the raid tests that need them skip, or fail under CI=true)" >&2
	exit $fail
fi
echo "ci-raid-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# mdadm's postinst wants to write an initramfs and start a monitor; neither
# matters in CI, and --no-install-recommends keeps the download small.
apt-get install -y -q --no-install-recommends $missing
