#!/usr/bin/env bash
# Starts a single-node Slurm cluster on this machine (root; Debian's slurm-wlm and munge):
# munged, slurmctld and slurmd on localhost, one partition with every CPU. For the Slurm test
# and for trying scripts/slurm/ without a cluster. Prints the `SLURM_CONF=...` line to export.
# Usage: scripts/slurm/local-cluster.sh [DIR]   (default /tmp/deltalogic-slurm; idempotent)
set -euo pipefail

DIR="${1:-/tmp/deltalogic-slurm}"
mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
CONF="$DIR/slurm.conf"
HOST="$(hostname -s)"
CPUS="$(nproc)"
# Leave the OS some memory; slurmd refuses a node that claims more than it has.
MEM_MB=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 * 9 / 10))

cat >"$CONF.new" <<CONF
ClusterName=deltalogic
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
mv "$CONF.new" "$CONF"
export SLURM_CONF="$CONF"

if ! pgrep -x munged >/dev/null; then
    [[ -s /etc/munge/munge.key ]] || { mungekey --create --keyfile /etc/munge/munge.key; chown munge:munge /etc/munge/munge.key; }
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- /usr/sbin/munged
fi
if ! pgrep -x slurmctld >/dev/null; then
    /usr/sbin/slurmctld -f "$CONF"
fi
if ! pgrep -x slurmd >/dev/null; then
    /usr/sbin/slurmd -f "$CONF"
fi
# Wait for the node to be schedulable.
for _ in $(seq 60); do
    if sinfo --noheader --responding --states=idle,mixed,allocated -o %n 2>/dev/null | grep -qx "$HOST"; then
        echo "SLURM_CONF=$CONF"
        exit 0
    fi
    sleep 1
done
echo "error: the local Slurm node did not come up; see $DIR/log/" >&2
sinfo -N -l >&2 || true
exit 1
