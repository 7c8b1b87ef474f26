"""Memory an option implies, checked before anything is allocated.

Options such as ``--replicas`` or ``--bin-width`` decide how large an array becomes;
a typo (``1e9`` replicas, a bin width of ``2.2e-16`` s) must end in one clear message
naming the option and the limit, not a MemoryError after minutes or a machine that
swaps.  The limit is half the memory available now, at most :data:`MAX_BYTES`.
"""

from .errors import InputError

#: Upper bound of any single computation's arrays, whatever the machine has.
MAX_BYTES = 4 << 30


#: For ``--help`` of every option checked here.
LIMIT_HELP = "refused when its arrays would exceed half the available memory, at most 4 GiB"


def available_bytes():
    """MemAvailable from /proc/meminfo (Linux); None elsewhere."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_limit():
    avail = available_bytes()
    return MAX_BYTES if avail is None else min(MAX_BYTES, avail // 2)


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PiB"  # pragma: no cover


def check_memory(option, value, needed_bytes, what):
    """InputError naming ``option`` when ``needed_bytes`` exceed :func:`memory_limit`."""
    limit = memory_limit()
    if needed_bytes > limit:
        raise InputError(
            option,
            None,
            f"{value:g} needs about {human_bytes(needed_bytes)} "
            f"({what}); the limit here is {human_bytes(limit)} (half "
            f"the available memory, at most {human_bytes(MAX_BYTES)})",
        )
