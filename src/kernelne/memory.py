"""This process's peak resident memory, as the figures of ``embed`` and the benchmarks report it.

``getrusage``'s ``ru_maxrss`` is not used: Linux keeps it across ``fork`` and ``execve``, so a
process started from a large one (a Dask worker spawned by a driver holding a graph) reports
its parent's peak. ``VmHWM`` in ``/proc/self/status`` belongs to the process's own address
space, and writing ``5`` to ``/proc/self/clear_refs`` starts it again from the current size.
"""

from __future__ import annotations


def peak_memory_mb() -> float:
    """Peak resident memory of this process (``VmHWM``) in MiB; ``ru_maxrss`` where there is
    no ``/proc`` (it may then include the parent's peak)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource  # Unix only: imported here so that importing this module works anywhere

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_memory() -> bool:
    """Start the peak of :func:`peak_memory_mb` again from the current resident size (Linux);
    returns whether it could."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def available_memory_bytes() -> int | None:
    """The memory this process may still take: ``MemAvailable`` of ``/proc/meminfo``, or less
    where a cgroup (v2 ``memory.max`` less ``memory.current``, or v1's limit less usage)
    caps it; None where neither can be read."""
    figures = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    figures.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit, encoding="ascii") as fh:
                text = fh.read().strip()
            with open(usage, encoding="ascii") as fh:
                used = int(fh.read().strip())
        except (OSError, ValueError):
            continue
        if text.isdigit() and int(text) < 1 << 60:
            figures.append(max(0, int(text) - used))
    return min(figures) if figures else None
