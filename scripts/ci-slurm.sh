#!/bin/sh
# A real Slurm on this one machine, for the tests that submit s3pd's job
# templates (e2e/slurm_test.go): a controller and a node named by
# `hostname -s`, with every file (config, state, logs, PID files, munge's
# key and socket) under one directory.
#
#   scripts/ci-slurm.sh install      # Debian's slurm-wlm and munge (root)
#   scripts/ci-slurm.sh start DIR    # munged, slurmctld, slurmd under DIR
#   scripts/ci-slurm.sh stop DIR     # stop them, by the PIDs under DIR
#
# start writes DIR/slurm.conf; point the client commands at it with
# SLURM_CONF=DIR/slurm.conf. start is idempotent (a DIR whose daemons
# run is left as it is) and waits until the node takes jobs; stop kills
# only the PIDs it finds under DIR. SLURM_CI_PORT (default 6817) is the
# controller's port, and the node's is one more.
set -eu

install() {
	if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 &&
		command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
		return 0
	fi
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "ci-slurm: need root and apt-get to install slurm-wlm and munge" >&2
		return 1
	fi
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null
}

# alive PIDFILE says whether the process named in PIDFILE runs.
alive() {
	[ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

start() {
	dir=$1
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if alive "$dir/munged.pid" && alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid"; then
		return 0
	fi
	stop "$dir"
	host=$(hostname -s)
	port=${SLURM_CI_PORT:-6817}
	mkdir -p "$dir/munge" "$dir/ctld" "$dir/spool"
	chmod 700 "$dir" "$dir/munge"
	if [ ! -s "$dir/munge/munge.key" ]; then
		dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
	fi
	chmod 400 "$dir/munge/munge.key"
	munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
		--pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
	cat >"$dir/slurm.conf" <<EOF
ClusterName=s3pdci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
	export SLURM_CONF="$dir/slurm.conf"
	slurmctld -i
	slurmd
	# Wait (up to 60 s) for the node to take jobs.
	i=0
	while :; do
		state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
		case $state in
		idle* | mix* | alloc*) return 0 ;;
		esac
		i=$((i + 1))
		if [ "$i" -ge 60 ]; then
			echo "ci-slurm: the node $host is not up after 60 s (state '$state'); logs in $dir" >&2
			tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
			return 1
		fi
		sleep 1
	done
}

# stop DIR cancels the jobs left on DIR's cluster (their tasks run
# under slurmstepd, not under slurmd), then kills the daemons whose PID
# files are under DIR and waits (up to 10 s each) for them to go.
stop() {
	dir=$1
	if alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid"; then
		export SLURM_CONF="$dir/slurm.conf"
		jobs=$(squeue -h -o %A 2>/dev/null || true)
		if [ -n "$jobs" ]; then
			# shellcheck disable=SC2086 # one job id a word
			scancel $jobs 2>/dev/null || true
			i=0
			while [ -n "$(squeue -h -o %A 2>/dev/null || true)" ] && [ "$i" -lt 30 ]; do
				sleep 1
				i=$((i + 1))
			done
		fi
	fi
	for d in slurmd slurmctld munged; do
		f="$dir/$d.pid"
		alive "$f" || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$f"
	done
}

case ${1:-} in
install) install ;;
start) start "${2:?usage: ci-slurm.sh start DIR}" ;;
stop) stop "${2:?usage: ci-slurm.sh stop DIR}" ;;
*)
	echo "usage: ci-slurm.sh install | start DIR | stop DIR" >&2
	exit 2
	;;
esac
