#!/usr/bin/env bash
# A 4-node Slurm cluster on this one machine, for the test suite (tests/test_slurm.py).
#
#   scripts/slurm-testbed.sh up                 install what is missing, start munged,
#                                               slurmctld and four slurmd (n1..n4)
#   scripts/slurm-testbed.sh mpi-default TYPE   set MpiDefault (none or pmix) and reconfigure
#   scripts/slurm-testbed.sh status             exit 0 when the cluster answers
#   scripts/slurm-testbed.sh down               stop what `up` started
#
# Needs root (daemons, apt-get).  Everything lives in $COMMSCOPE_SLURM_DIR
# (default /var/tmp/commscope-slurm): slurm.conf, state, logs, one TmpFS per node.
# Clients find the cluster with SLURM_CONF=$COMMSCOPE_SLURM_DIR/slurm.conf; the
# machine's own /etc/slurm is never touched.  Debian's default MpiDefault=none is
# what `up` configures, since that is where launching goes wrong.
set -euo pipefail

DIR=${COMMSCOPE_SLURM_DIR:-/var/tmp/commscope-slurm}
CONF=$DIR/slurm.conf
export SLURM_CONF=$CONF
NODES="n1 n2 n3 n4"
# libpmix-dev: srun's mpi/pmix plugin dlopens the unversioned pmix2/lib/libpmix.so it holds
PACKAGES="slurmd slurmctld slurm-client munge libpmix2 libpmix-dev"

say() { echo "slurm-testbed: $*" >&2; }
die() { say "$*"; exit 1; }

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (starts daemons, installs Debian packages)"
}

install_missing() {
    local missing=""
    for p in $PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null \
            || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    command -v apt-get >/dev/null || die "missing packages:$missing (and no apt-get)"
    say "installing$missing"
    apt-get update -q >/dev/null
    # policy-rc.d may keep services from starting; we start the daemons ourselves anyway
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
}

write_conf() {
    local mpi_default=$1 host
    host=$(hostname)
    mkdir -p "$DIR/state" "$DIR/log"
    for n in $NODES; do mkdir -p "$DIR/spool/$n" "$DIR/tmp/$n"; done
    cat > "$CONF.tmp" <<EOF
# Written by scripts/slurm-testbed.sh: four nodes on one host ($host).
ClusterName=commscope
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=$mpi_default
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
# one TmpFS per node, or PMIx's spmix_appdir_* directories of two nodes collide
TmpFS=$DIR/tmp/%n
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
MinJobAge=30
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=n[1-4] NodeHostname=$host NodeAddr=127.0.0.1 Port=17001-17004 CPUs=1 State=UNKNOWN
PartitionName=test Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$CONF.tmp" "$CONF"
}

cluster_answers() {
    command -v sinfo >/dev/null && [ -f "$CONF" ] && \
        [ "$(sinfo -h -N -t idle,alloc,mix -o %N 2>/dev/null | sort -u | wc -l)" = 4 ]
}

start_munge() {
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        return 0  # a munged already answers
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- /usr/sbin/munged
    touch "$DIR/started-munged"
}

up() {
    need_root
    local t0=$SECONDS
    install_missing
    if cluster_answers; then say "already up ($CONF)"; return 0; fi
    write_conf none
    start_munge
    /usr/sbin/slurmctld
    for n in $NODES; do /usr/sbin/slurmd -N "$n"; done
    for _ in $(seq 1 60); do
        if cluster_answers; then
            say "up in $((SECONDS - t0)) s: 4 nodes on $(hostname); use SLURM_CONF=$CONF"
            return 0
        fi
        sleep 0.5
    done
    sinfo -N >&2 || true
    die "nodes did not come up; see $DIR/log"
}

mpi_default() {
    need_root
    case ${1:-} in none|pmix|pmi2) ;; *) die "mpi-default: expected none, pmix or pmi2" ;; esac
    write_conf "$1"
    scontrol reconfigure
    for _ in $(seq 1 120); do  # a loaded machine can take a while
        # grep reads everything (no -q): with pipefail, grep -q quitting early makes
        # scontrol die of SIGPIPE and the whole check fail at random
        scontrol show config 2>/dev/null | grep "^MpiDefault *= *$1\$" >/dev/null && return 0
        sleep 0.25
    done
    die "MpiDefault=$1 not taken up"
}

down() {
    need_root
    [ -f "$CONF" ] || { say "not set up"; return 0; }
    scontrol shutdown >/dev/null 2>&1 || true
    for pidfile in "$DIR"/slurmctld.pid "$DIR"/slurmd-*.pid; do
        [ -f "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill "$pid" 2>/dev/null || true
        rm -f "$pidfile"
    done
    if [ -f "$DIR/started-munged" ]; then
        [ -f /run/munge/munged.pid ] && kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
        rm -f "$DIR/started-munged"
    fi
    rm -f "$CONF"
    say "down"
}

case ${1:-} in
    up) up ;;
    down) down ;;
    mpi-default) mpi_default "${2:-}" ;;
    status) cluster_answers ;;
    *) echo "usage: $0 up|down|status|mpi-default none|pmix" >&2; exit 2 ;;
esac
