"""Node topology from Linux sysfs: sockets, cores, NUMA nodes, and where a CPU sits."""

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
    cpus = sorted(int(p.name[3:]) for p in SYS_CPU.glob("cpu[0-9]*")
                  if (p / "topology").exists()) or list(range(os.cpu_count() or 1))
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
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else len(cpus),
    }
