"""What every benchmark records about the machine it ran on (standard library only)."""

from __future__ import annotations

import os
import platform
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any


def _proc_field(path: str, key: str) -> str:
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine(*packages: str) -> dict[str, Any]:
    """Date, Python, platform, CPUs, memory, load average and the versions of ``packages``."""
    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu": _proc_field("/proc/cpuinfo", "model name"),
        "memory": _proc_field("/proc/meminfo", "MemTotal"),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }
    info.update({name: version(name) for name in packages})
    return info


def status_mb(field: str) -> float | None:
    """A ``/proc/self/status`` field in MB (``VmRSS``, ``VmHWM``); ``None`` where unreadable."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak() -> bool:
    """Reset the kernel's RSS high-water mark to the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True
