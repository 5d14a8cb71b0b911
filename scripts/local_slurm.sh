#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for the `slurm` tests and for trying the slurm-* profiles.
#
#   bash scripts/local_slurm.sh up       install slurm + munge (apt) if missing, start munged,
#                                        slurmctld and slurmd; wait until the node is idle
#   bash scripts/local_slurm.sh down     stop what `up` started (and only that), by PID file
#   bash scripts/local_slurm.sh status   print whether each daemon is running, then `sinfo`
#
# Written for Debian 12 (Slurm 22.05, munge 0.5) run as root on a machine without systemd or cgroups:
# daemons run as plain background processes, ProctrackType=proctrack/linuxproc, TaskPlugin=task/none.
# There is no accounting daemon (no slurmdbd): `sacct` fails, so Snakemake's SLURM executor must poll
# with `squeue` (the slurm-cpu profile sets `slurm-status-command: squeue`).
# A fake GPU is advertised as GRES `gpu:<type>:<n>` backed by /dev/null, so a rule that asks for
# `gpu: 1, gpu_model: h100` is schedulable; nothing on the node actually opens the device.
#
# Knobs (environment):
#   LOCAL_SLURM_GPUS=1        fake GPUs to advertise (0 = none)
#   LOCAL_SLURM_GPU_TYPE=h100 GRES type of the fake GPUs (what `gpu_model` must match)
#   LOCAL_SLURM_PARTITION=debug
#   LOCAL_SLURM_STATE=/run/local_slurm   where the list of daemons started by `up` is kept
set -euo pipefail

GPUS=${LOCAL_SLURM_GPUS:-1}
GPU_TYPE=${LOCAL_SLURM_GPU_TYPE:-h100}
PARTITION=${LOCAL_SLURM_PARTITION:-debug}
STATE=${LOCAL_SLURM_STATE:-/run/local_slurm}
NODE=$(hostname -s)
CONF_DIR=/etc/slurm
MUNGE_PID=/run/munge/munged.pid
CTLD_PID=/run/slurm/slurmctld.pid
SLURMD_PID=/run/slurm/slurmd.pid

say() { printf '[local_slurm] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

alive() {  # alive PIDFILE -> true when the process named in it runs
  [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null
}

need_root() { [[ $(id -u) -eq 0 ]] || die "run as root (daemons and apt need it)"; }

ensure_packages() {
  local wanted=(munge slurmctld slurmd slurm-client) missing=() p
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return 0
  say "installing ${missing[*]}"
  # No init system here: a policy-rc.d that answers 101 stops the packages' scripts from starting
  # services themselves. Only remove it again when we were the ones who put it there.
  local own_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    own_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  ((own_policy)) && rm -f /usr/sbin/policy-rc.d
  return 0
}

note_started() { mkdir -p "$STATE"; touch "$STATE/$1"; }

start_munge() {
  if [[ ! -s /etc/munge/munge.key ]]; then
    mungekey --create --keyfile=/etc/munge/munge.key
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge /var/lib/munge /var/log/munge
  if alive "$MUNGE_PID"; then
    say "munged already running"
  else
    runuser -u munge -- /usr/sbin/munged --force
    note_started munged
  fi
  munge -n | unmunge >/dev/null || die "munge round trip failed"
}

# slurm.conf + gres.conf for one node. Printed to stdout so `up` can tell whether it changed.
render_slurm_conf() {
  local cpus mem gres_line="" gres_types=""
  cpus=$(nproc)
  mem=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  if ((GPUS > 0)); then
    gres_types="GresTypes=gpu"
    gres_line="Gres=gpu:${GPU_TYPE}:${GPUS}"
  fi
  cat <<EOF
# Written by scripts/local_slurm.sh: a single-node test cluster (no cgroups, no accounting).
ClusterName=paired-rollouts-local
SlurmctldHost=${NODE}(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=${CTLD_PID}
SlurmdPidFile=${SLURMD_PID}
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# A job without --mem would otherwise hold the whole node's memory and jobs would run one by one.
DefMemPerCPU=1000
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
# Finished jobs stay visible to squeue this long; the Snakemake plugin polls with squeue and needs
# this to be at least 3x its first status-check delay.
MinJobAge=300
KillWait=5
Waittime=0
${gres_types}
NodeName=${NODE} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} ${gres_line} State=UNKNOWN
PartitionName=${PARTITION} Nodes=${NODE} Default=YES MaxTime=INFINITE State=UP
EOF
}

render_gres_conf() {
  # A GPU GRES must name a character device; /dev/null (and clones of it) are enough because
  # TaskPlugin=task/none never opens or constrains it.
  local files=/dev/null i
  if ((GPUS > 1)); then
    for ((i = 0; i < GPUS; i++)); do
      [[ -c /dev/fakegpu$i ]] || mknod -m 0666 "/dev/fakegpu$i" c 1 3
    done
    files="/dev/fakegpu[0-$((GPUS - 1))]"
  fi
  printf 'AutoDetect=off\nNodeName=%s Name=gpu Type=%s File=%s\n' "$NODE" "$GPU_TYPE" "$files"
}

write_if_changed() {  # write_if_changed PATH CONTENT -> returns 0 when the file changed
  if [[ -f $1 ]] && [[ $(cat "$1") == "$2" ]]; then return 1; fi
  printf '%s\n' "$2" >"$1"
  return 0
}

node_state() { sinfo -h -n "$NODE" -o '%t' 2>/dev/null | head -n1; }

wait_for_node() {
  local i st
  for ((i = 0; i < 120; i++)); do
    st=$(node_state || true)
    case $st in
      idle | mix | alloc | comp) return 0 ;;
      # A DRAIN/DOWN/INVAL state from an earlier configuration is kept in StateSaveLocation.
      *drain* | *drng* | *inval* | down*) scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
    esac
    sleep 0.5
  done
  return 1
}

stop_daemon() {  # stop_daemon NAME PIDFILE
  local name=$1 pidfile=$2 pid i
  if ! alive "$pidfile"; then
    rm -f "$STATE/$name"
    return 0
  fi
  pid=$(cat "$pidfile")
  say "stopping $name (pid $pid)"
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name did not exit; sending SIGKILL to $pid"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$STATE/$name"
}

cmd_up() {
  need_root
  local t0=$SECONDS changed=0
  ensure_packages
  install -d -o slurm -g slurm /var/spool/slurmctld /var/log/slurm /run/slurm
  install -d /var/spool/slurmd "$CONF_DIR"
  start_munge
  write_if_changed "$CONF_DIR/slurm.conf" "$(render_slurm_conf)" && changed=1
  if ((GPUS > 0)); then
    write_if_changed "$CONF_DIR/gres.conf" "$(render_gres_conf)" && changed=1
  elif [[ -e $CONF_DIR/gres.conf ]]; then
    rm -f "$CONF_DIR/gres.conf"
    changed=1
  fi
  if ((changed)) && { alive "$CTLD_PID" || alive "$SLURMD_PID"; }; then
    say "configuration changed: restarting slurmctld and slurmd"
    stop_daemon slurmd "$SLURMD_PID"
    stop_daemon slurmctld "$CTLD_PID"
  fi
  if alive "$CTLD_PID"; then
    say "slurmctld already running"
  else
    slurmctld   # daemonizes, drops to SlurmUser, writes its PID file
    note_started slurmctld
  fi
  if alive "$SLURMD_PID"; then
    say "slurmd already running"
  else
    slurmd      # daemonizes as root, writes its PID file
    note_started slurmd
  fi
  if ! wait_for_node; then
    sinfo -N -l >&2 || true
    tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
    die "node $NODE did not become idle"
  fi
  sinfo >&2
  say "cluster up in $((SECONDS - t0)) s (partition $PARTITION, fake GPUs: ${GPUS}x ${GPU_TYPE})"
}

cmd_down() {
  need_root
  # Cancel our leftover jobs first so slurmd has no job steps to wait for.
  if alive "$CTLD_PID" && command -v scancel >/dev/null; then
    scancel --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  # Stop only what `up` started; a munged that was already running before stays.
  [[ -e $STATE/slurmd ]] && stop_daemon slurmd "$SLURMD_PID"
  [[ -e $STATE/slurmctld ]] && stop_daemon slurmctld "$CTLD_PID"
  [[ -e $STATE/munged ]] && stop_daemon munged "$MUNGE_PID"
  say "down"
}

cmd_status() {
  local name pidfile
  for name in munged slurmctld slurmd; do
    case $name in
      munged) pidfile=$MUNGE_PID ;;
      slurmctld) pidfile=$CTLD_PID ;;
      slurmd) pidfile=$SLURMD_PID ;;
    esac
    if alive "$pidfile"; then echo "$name: running (pid $(cat "$pidfile"))"; else echo "$name: stopped"; fi
  done
  command -v sinfo >/dev/null && sinfo 2>/dev/null || true
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
