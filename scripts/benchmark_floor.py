#!/usr/bin/env python3
"""(g) The machine's floor: the CPU time one wake-up costs an event-driven process that does
nothing else (scripts/benchmark_floor.c, built here with the C compiler). Run through
`scripts/benchmark` (`--only floor` for this part alone); imported by scripts/benchmark_gatt.py.

A Python client (like the harness's central, controllers and pusher) sends one byte and waits
for it back, N times, over loopback TCP (the transport of the virtual controllers' H4 links)
and over a Unix stream socket (gattd's control socket). Each round trip wakes the C server
once: epoll_wait, read, write. Its utime + stime over the N, divided by N, is the least CPU a
request that wakes a peripheral can cost on this machine: a notify pushed one request at a
time wakes gattd twice (the control request, then the controller's Number Of Completed
Packets), a Read Request twice (the request, then the completion of its response).
Figures are reported, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "benchmark_floor.c"


def compiler() -> str | None:
    return next((path for name in ("cc", "clang", "gcc") if (path := shutil.which(name))), None)


def one_run(binary: Path, kind: str, work_dir: Path, count: int) -> dict:
    path = work_dir / "floor.sock"
    path.unlink(missing_ok=True)
    arguments = [str(binary), "tcp"] if kind == "tcp" else [str(binary), "unix", str(path)]
    server = subprocess.Popen(arguments, stdout=subprocess.PIPE, text=True)
    try:
        where = json.loads(server.stdout.readline())
        if kind == "tcp":
            client = socket.create_connection(("127.0.0.1", where["port"]))
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(where["path"])
        with client:
            for _ in range(count):
                client.sendall(b"x")
                if client.recv(16) != b"x":
                    raise RuntimeError("the floor server answered something else")
        result = json.loads(server.stdout.readline())
        server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if result["wakeups"] != count:
        raise RuntimeError(f"{result['wakeups']} wake-ups for {count} round trips")
    return {"us_per_wakeup": (result["user_s"] + result["system_s"]) * 1e6 / count,
            "user_us_per_wakeup": result["user_s"] * 1e6 / count}


def run_floor_benchmark(work_dir: Path, runs: int = 3, count: int = 20_000) -> dict | None:
    """Medians over `runs` runs of `count` round trips per socket kind; None without a C compiler."""
    cc = compiler()
    if cc is None:
        return None
    binary = work_dir / "benchmark_floor"
    subprocess.run([cc, "-O2", "-o", str(binary), str(SOURCE)], check=True)
    results: dict = {"count": count, "runs": runs}
    for kind in ("tcp", "unix"):
        samples = sorted((one_run(binary, kind, work_dir, count) for _ in range(runs)),
                         key=lambda sample: sample["us_per_wakeup"])
        results[kind] = {"median": samples[len(samples) // 2],
                         "min": samples[0]["us_per_wakeup"], "max": samples[-1]["us_per_wakeup"]}
        time.sleep(0.1)
    return results


def floor_rows(result: dict | None) -> list[tuple[str, str]]:
    if result is None:
        return [("one wake-up (epoll_wait + read + write), C server", "not measured: no C compiler (cc)")]
    rows = []
    for kind, label in (("tcp", "loopback TCP (the H4 links)"), ("unix", "Unix stream socket (the control socket)")):
        r = result[kind]
        rows.append((f"CPU µs per wake-up over {label}, runs min / median / max ({result['count']:,} each)",
                     f"{r['min']:.1f} / {r['median']['us_per_wakeup']:.1f} / {r['max']:.1f} "
                     f"(user {r['median']['user_us_per_wakeup']:.1f})"))
    return rows


def main() -> None:
    import argparse

    from benchmark_gatt import print_table

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=20_000)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gattd-floor.") as work:
        print_table(("(g) the machine's floor: one wake-up of a C epoll server", "value"),
                    floor_rows(run_floor_benchmark(Path(work), arguments.runs, arguments.count)))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
