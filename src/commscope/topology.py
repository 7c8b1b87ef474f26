"""Node topology from Linux sysfs: sockets, cores, NUMA nodes, and where a CPU sits;
which nodes the ranks of a run were on (and whether several shared one host)."""

import os
import platform
from pathlib import Path

SYS_CPU = Path("/sys/devices/system/cpu")
SYS_NODE = Path("/sys/devices/system/node")


def _read_int(path, default=-1):
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return default


def cpu_location(cpu):
    """(socket, core) of a logical CPU, -1 where sysfs does not say."""
    topo = SYS_CPU / f"cpu{cpu}" / "topology"
    return _read_int(topo / "physical_package_id"), _read_int(topo / "core_id")


def numa_nodes():
    """{node id: [cpus]} from sysfs; one node holding every CPU when absent."""
    nodes = {}
    for node in sorted(SYS_NODE.glob("node[0-9]*")):
        cpus = sorted(int(p.name[3:]) for p in node.glob("cpu[0-9]*"))
        nodes[int(node.name[4:])] = cpus
    return nodes or {0: list(range(os.cpu_count() or 1))}


def node_topology():
    """A summary of this node: host, sockets, cores, hardware threads, NUMA nodes."""
    cpus = sorted(
        int(p.name[3:]) for p in SYS_CPU.glob("cpu[0-9]*") if (p / "topology").exists()
    ) or list(range(os.cpu_count() or 1))
    where = {cpu: cpu_location(cpu) for cpu in cpus}
    sockets = sorted({s for s, _ in where.values()})
    cores = sorted(set(where.values()))
    numa = numa_nodes()
    return {
        "host": platform.node(),
        "machine": platform.machine(),
        "sockets": len(sockets),
        "cores": len(cores),
        "hardware_threads": len(cpus),
        "numa_nodes": len(numa),
        "numa_cpus": {str(k): v for k, v in numa.items()},
        "cpu_socket_core": {str(c): list(sc) for c, sc in where.items()},
        "usable_cpus": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else len(cpus),
    }


def node_of(place):
    """The node a rank ran on: its Slurm node (several may share a host), else its host."""
    return place.get("node") or place.get("host")


def shared_hosts(placement):
    """{host: [nodes]} for every host that held more than one node of the run.

    Several slurmd on one machine (a test cluster, or a node split into Slurm
    nodes) make "inter-node" pairs that never leave the machine.
    """
    nodes = {}
    for p in placement or []:
        if p.get("host"):
            nodes.setdefault(p["host"], set()).add(node_of(p))
    return {h: sorted(n) for h, n in sorted(nodes.items()) if len(n) > 1}


def shared_hosts_note(shared):
    """One sentence per shared host for meta.json readers, the report and the terminal."""
    return " ".join(
        f"Slurm nodes {', '.join(nodes)} share host {host}: their inter-node pairs "
        "communicate inside that one machine, so inter-node numbers here do not measure a "
        "network."
        for host, nodes in shared.items()
    )
