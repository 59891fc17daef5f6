"""How busy the machine was while a benchmark ran.

On a shared machine the load moves a figure more than most changes do, so every benchmark
prints the load average (1, 5 and 15 minutes, against the cores) before and after its
runs, and puts it in its JSON: a figure is only compared with one measured beside it.
"""

from __future__ import annotations

import os


def load(when: str) -> list[float]:
    """Print and return the load averages now."""
    averages = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {when}: {averages[0]:.2f} {averages[1]:.2f} {averages[2]:.2f} (1, 5, 15 min; {os.cpu_count()} cores)", flush=True)
    return averages
