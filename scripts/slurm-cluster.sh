#!/usr/bin/env bash
# A single-node Slurm cluster on this host, for tests and trying 'wsload distribute slurm' (Debian 12: slurm-wlm
# 22.05 and munge 0.5.15, as root, no systemd needed). Everything Slurm keeps goes in DIR.
#   scripts/slurm-cluster.sh up DIR      start munged (if it is not running), slurmctld and slurmd; wait for the
#                                        node to be idle; then: export SLURM_CONF=DIR/slurm.conf
#   scripts/slurm-cluster.sh down DIR    cancel every job and wait for the queue to drain (30 s at most), stop the
#                                        daemons (munged only if 'up' started it), kill what the jobs left running
# Install the daemons with: scripts/install-dependencies.sh --test (slurm-wlm munge, --no-install-recommends).
# The node is declared as 'slurmd -C' sees it, memory not consumable, and the partition oversubscribed (FORCE:8) so
# 4 single-CPU shards run at once on 2 cores; a cancelled job gets 5 s between SIGTERM and SIGKILL (KillWait); daemons
# talk over 127.0.0.1. See docs/ARCHITECTURE.md ("Tests").
set -euo pipefail
command=${1:-}
state=${2:-}
if [[ -z "$command" || -z "$state" || ( "$command" != up && "$command" != down ) ]]; then
    sed -n '2,11p' "$0" >&2
    exit 64
fi
state=$(mkdir -p "$state" && cd "$state" && pwd)
export SLURM_CONF=$state/slurm.conf

# Waits up to 10 s for process $1 to end, then kills it. A zombie has ended: where nothing reaps orphans (a sandbox's
# PID 1 here), a daemon stays "<defunct>" for good, and kill -0 still finds it.
wait_gone() {
    local pid=$1 attempt
    for attempt in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        [[ "$(ps -o stat= -p "$pid" 2>/dev/null)" == Z* ]] && return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

# Starts a daemon with every signal at its default and unblocked (a caller may block some: a test harness's threads
# hand SIGTERM blocked to what they spawn, and bash passes the mask on, so slurmd and munged would never stop on it),
# its stdio going nowhere (a caller capturing this script's output is not held open).
start() {
    env --default-signal "$@" </dev/null >/dev/null 2>&1
}

# "PID STARTTIME" of every process of a job on this node: each step's processes (scontrol listpids) and their
# slurmstepd (the parent of a step's first task). The start time (field 22 of /proc/PID/stat, after the command name
# in parentheses) tells a PID reused since from the process recorded.
job_processes() {
    local pid parent
    for pid in $(scontrol listpids 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $1 }'); do
        parent=$(ps -o ppid= -p "$pid" 2>/dev/null | tr -d ' ') || true
        if [[ -n "$parent" && "$(ps -o comm= -p "$parent" 2>/dev/null)" == slurmstepd ]]; then
            echo "$parent $(start_time "$parent")"
        fi
        echo "$pid $(start_time "$pid")"
    done | sort -u || true  # (a process that ended meanwhile is no failure)
}

# Empty for a process that has ended (a zombie has ended too: see wait_gone).
start_time() {
    sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | awk '$1 != "Z" { print $20 }'
}

if [[ "$command" == down ]]; then
    leftovers=""
    if [[ -f "$SLURM_CONF" ]] && scontrol ping >/dev/null 2>&1; then
        # scontrol shutdown leaves running jobs' slurmstepd (which ignores SIGTERM) and their tasks behind: cancel every
        # job first, and record their processes for whatever outlives the cancel.
        leftovers=$(job_processes) || true
        # (squeue failing is no reason to stop: the daemons must still be stopped)
        jobs=$(squeue -h -o %A 2>/dev/null | tr '\n' ' ') || true
        if [[ -n "${jobs// /}" ]]; then
            # shellcheck disable=SC2086 # one word per job id
            scancel $jobs >/dev/null 2>&1 || true
            for attempt in $(seq 300); do
                [[ -z "$(squeue -h -o %A 2>/dev/null)" ]] && break
                sleep 0.1
            done
            remaining=$(squeue -h -o '%A %T' 2>/dev/null | tr '\n' ';') || true
            [[ -z "$remaining" ]] || echo "slurm-cluster.sh: jobs still queued after 30 s: $remaining killing them" >&2
        fi
    fi
    # scontrol shutdown stops slurmctld and every slurmd; the pid files catch what it missed.
    [[ -f "$SLURM_CONF" ]] && scontrol shutdown >/dev/null 2>&1 || true
    pidfiles=("$state/slurmd.pid" "$state/slurmctld.pid")
    [[ -f "$state/munged.started" ]] && pidfiles+=(/run/munge/munged.pid)
    for pidfile in "${pidfiles[@]}"; do
        [[ -s "$pidfile" ]] || continue
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        wait_gone "$pid"
        rm -f "$pidfile"
    done
    rm -f "$state/munged.started"
    # What a job left running: the same process (PID and start time) still there, killed (slurmstepd ignores SIGTERM).
    while read -r pid started; do
        [[ -n "$pid" && -n "$started" && "$(start_time "$pid")" == "$started" ]] || continue
        echo "slurm-cluster.sh: killing process $pid left by a job: $(ps -o args= -p "$pid" 2>/dev/null)" >&2
        kill -9 "$pid" 2>/dev/null || true
        wait_gone "$pid"
    done <<<"$leftovers"
    exit 0
fi

for daemon in slurmctld slurmd munged; do
    command -v "$daemon" >/dev/null || {
        echo "slurm-cluster.sh: $daemon not found; install: apt-get install -y --no-install-recommends slurm-wlm munge" >&2
        exit 2
    }
done
node=$(hostname -s)
mkdir -p "$state"/{state,spool,log}

# munge: its directories belong to the user munged runs as (as root it refuses: "PRNG seed dir is insecure"), and
# the socket directory must be 0755. /run is a tmpfs: nothing recreates /run/munge after a boot without systemd.
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
[[ -s /etc/munge/munge.key ]] || mungekey --create --keyfile=/etc/munge/munge.key  # Debian's postinst made one
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
if ! { [[ -S /run/munge/munge.socket.2 ]] && munge -n </dev/null >/dev/null 2>&1; }; then
    start runuser -u munge -- munged
    touch "$state/munged.started"
fi
for attempt in $(seq 50); do
    munge -n </dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
done

# The node as the hardware is (declaring more makes it 'inval'), memory less a 1 GiB margin. Cgroups are not used
# (proctrack/linuxproc, task/none): none are needed, and a sandbox may not offer them.
hardware=$(slurmd -C | head -n 1 | sed 's/ RealMemory=[0-9]*//')
memory=$(awk '/MemTotal/ { print int($2 / 1024) - 1024 }' /proc/meminfo)
cat >"$SLURM_CONF" <<EOF
ClusterName=wsload
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MailProg=/bin/true
KillWait=5
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=$state/state
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
$hardware NodeAddr=127.0.0.1 RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF

# Both daemonize. Starting them again while they run restarts them (they find the old ones by the pid files).
start slurmctld -i  # -i: no state files yet on a first start
start slurmd
for attempt in $(seq 300); do
    case "$(sinfo -h -N -o %t 2>/dev/null)" in
        idle*) echo "export SLURM_CONF=$SLURM_CONF"; exit 0 ;;
        down* | drain* | inval*) scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true ;;
    esac
    sleep 0.1
done
echo "slurm-cluster.sh: the node is not idle after 30 s:" >&2
sinfo -N -o '%N %t %E' >&2 || true
tail -n 20 "$state/log/slurmctld.log" "$state/log/slurmd.log" >&2 || true
exit 1
