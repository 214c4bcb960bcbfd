#!/usr/bin/env python3
"""(f) gattd's memory: RSS idle, after 10,000 notifications and across connect/disconnect
cycles, with the generated 100-service database. Run through `scripts/benchmark`
(`--only memory` for this part alone); imported by scripts/benchmark_gatt.py.

One gattd (release build) on virtual controller 0 serving scripts/benchmark_gatt.py's
100-service database (one of its notify characteristics given the id "stream"); a Bumble
central on controller 1. From /proc/<pid>/status: VmRSS = RssAnon (heap, stacks, dirty
data) + RssFile (pages of the binary and libraries) + RssShmem, and VmHWM (peak).

  idle              2.5 s after the first advertising enable, nothing connected (gattd
                    hands back its clean start-up pages 1 s after advertising starts:
                    docs/benchmarks.md, "Memory"; GATTD_KEEP_STARTUP_PAGES=1 keeps them);
  while connected   the central connects, discovers, subscribes; N notifications (20 B,
                    default 10,000) pushed through the control socket and all received;
                    sampled with the central still connected (what serving a central faults
                    in: the most gattd holds after start-up);
  after notify      the same, sampled 2 s after the central disconnected (gattd hands clean
                    pages back 1 s after the last central leaves);
  cycles            C connect → ATT_MTU exchange → disconnect cycles (default 1,000),
                    sampled 2 s after cycle C/10 and C: growth = RSS(C) − RSS(C/10).

Figures are reported, never asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
sys.path.insert(0, str(ROOT / "scripts"))

from bumble import hci  # noqa: E402
from bumble.core import PhysicalTransport  # noqa: E402

STREAM_UUID_INDEX = 0  # the first generated service's read+notify characteristic
FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def memory_kib(pid: int) -> dict[str, int]:
    result = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in FIELDS:
            result[key] = int(value.split()[0])
    return result


async def notifications(controllers, address: hci.Address, control_path: Path, count: int,
                        pid: int) -> tuple[float, dict[str, int]]:
    """Connect, subscribe, push `count` notifications through the control socket, check they
    all arrived in order, disconnect. Returns the wall time of the pushes and gattd's memory
    just before the disconnection."""
    from control_client import ControlClient
    from harness import bumble_device, connect, find_characteristic

    async with bumble_device(controllers[1], "mem-central", "C0:00:00:00:00:0E") as device:
        peer = await connect(device, address)
        received: list[bytes] = []
        done = asyncio.get_running_loop().create_future()

        def on_value(value: bytes) -> None:
            received.append(bytes(value))
            if len(received) == count and not done.done():
                done.set_result(None)

        await find_characteristic(peer, f"6e4c{STREAM_UUID_INDEX:04x}-b5a3-f393-e0a9-e50e24dcca9e").subscribe(on_value)
        control = await ControlClient.open(control_path)
        start = time.monotonic()
        for sequence in range(count):
            line = b'{"op":"notify","characteristic":"stream","value":{"hex":"%s"}}' % \
                sequence.to_bytes(20, "little").hex().encode()
            while True:
                reply = await control.raw_request(line, timeout=30)
                if reply.get("ok"):
                    break
                if reply.get("error") != "busy":
                    raise RuntimeError(f"notify {sequence}: {reply}")
                await control.event("ready", timeout=30)
        await asyncio.wait_for(done, 60)
        wall = time.monotonic() - start
        await control.close()
        if received != [n.to_bytes(20, "little") for n in range(count)]:
            raise AssertionError(f"{len(received)} notifications received, not the {count} pushed in order")
        connected = memory_kib(pid)
        await peer.connection.disconnect()
    return wall, connected


async def cycles(controllers, address: hci.Address, pid: int, count: int) -> dict:
    """`count` connect → MTU exchange → disconnect cycles; memory at count/10 and count."""
    from bumble.device import Peer
    from harness import bumble_device

    samples = {}
    start = time.monotonic()
    async with bumble_device(controllers[1], "mem-cycles", "C0:00:00:00:00:0F") as device:
        for cycle in range(1, count + 1):
            connection = await device.connect(address, transport=PhysicalTransport.LE, timeout=10)
            await Peer(connection).request_mtu(247)
            await connection.disconnect()
            if cycle in (max(1, count // 10), count):
                await asyncio.sleep(2.0)  # gattd has handled the disconnection (and its hand-back)
                samples[cycle] = memory_kib(pid)
    return {"samples": samples, "wall_s": time.monotonic() - start}


def run_memory_benchmark(gattd_binary: str, work_dir: Path, notifications_count: int = 10_000,
                         cycle_count: int = 1_000, keep_startup_pages: bool = False) -> dict:
    import harness
    from benchmark_gatt import generate_config
    from benchmark_peers import wait_for_advertising
    from harness import GattdProcess, VirtualControllers

    harness.GATTD_BINARY = Path(gattd_binary)
    # A binary just linked or stripped is dirty in the page cache until writeback (up to 30 s),
    # and the kernel cannot drop dirty pages: write them back first, as an installed binary is.
    descriptor = os.open(gattd_binary, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    run_dir = work_dir / ("memory-keep" if keep_startup_pages else "memory")
    run_dir.mkdir()
    config_path = run_dir / "bench.json"
    generate_config(config_path, 100)
    config = json.loads(config_path.read_text())
    config["services"][STREAM_UUID_INDEX]["characteristics"][0]["id"] = "stream"
    config["services"][STREAM_UUID_INDEX]["characteristics"][0]["max_length"] = 20
    config_path.write_text(json.dumps(config))
    (run_dir / "state").mkdir()
    controllers = VirtualControllers(2, run_dir).start()
    saved = os.environ.get("GATTD_KEEP_STARTUP_PAGES")
    os.environ["GATTD_KEEP_STARTUP_PAGES"] = "1" if keep_startup_pages else "0"
    gattd = GattdProcess(config_path, controllers[0].transport, run_dir,
                         ["--control", str(run_dir / "control.sock"), "--state-dir", str(run_dir / "state"),
                          "--log-level", "info"])
    try:
        launched = time.time()
        gattd.start()
        advertising = wait_for_advertising(controllers[0].commands_path, gattd.process)
        time.sleep(2.5)
        pid = gattd.process.pid
        result: dict = {"keep_startup_pages": keep_startup_pages, "launch_to_advertising_s": advertising - launched,
                        "idle": memory_kib(pid), "notifications": notifications_count, "cycles": cycle_count}
        address = hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)
        if notifications_count:
            result["notify_wall_s"], result["while_connected"] = asyncio.run(asyncio.wait_for(
                notifications(controllers, address, run_dir / "control.sock", notifications_count, pid), 300))
            time.sleep(2.0)
            result["after_notify"] = memory_kib(pid)
        if cycle_count:
            result["cycle_run"] = asyncio.run(asyncio.wait_for(cycles(controllers, address, pid, cycle_count), 600))
        return result
    except BaseException:
        print(gattd.log(), file=sys.stderr)
        raise
    finally:
        if saved is None:
            os.environ.pop("GATTD_KEEP_STARTUP_PAGES", None)
        else:
            os.environ["GATTD_KEEP_STARTUP_PAGES"] = saved
        gattd.stop()
        controllers.stop()


def mib(kib: int) -> str:
    return f"{kib / 1024:.1f}"


def memory_rows(result: dict) -> list[tuple[str, ...]]:
    """Rows: measure, VmRSS, RssAnon, RssFile, VmHWM (MiB)."""
    def row(label: str, m: dict) -> tuple[str, ...]:
        return (label, *(mib(m[key]) for key in FIELDS))

    rows = [row("idle (2.5 s after advertising)", result["idle"])]
    if "while_connected" in result:
        rows.append(row(f"after {result['notifications']:,} notifications, central still connected",
                        result["while_connected"]))
    if "after_notify" in result:
        rows.append(row(f"after {result['notifications']:,} notifications ({result['notify_wall_s']:.1f} s)",
                        result["after_notify"]))
    if "cycle_run" in result:
        samples = result["cycle_run"]["samples"]
        first, last = sorted(samples, key=int)[0], sorted(samples, key=int)[-1]
        rows.append(row(f"after connect/disconnect cycle {first}", samples[first]))
        rows.append(row(f"after cycle {last} ({result['cycle_run']['wall_s']:.0f} s)", samples[last]))
        rows.append((f"growth, cycle {first} → {last}",
                     *(f"{(samples[last][key] - samples[first][key]):+d} KiB" for key in FIELDS[:3]), ""))
    return rows


def memory_header(result: dict) -> tuple[str, ...]:
    pages = "start-up pages kept (GATTD_KEEP_STARTUP_PAGES=1)" if result["keep_startup_pages"] \
        else "start-up pages handed back"
    return (f"(f) gattd memory, 100 services, {pages}; launch → advertising "
            f"{result['launch_to_advertising_s'] * 1000:.0f} ms", "VmRSS MiB", "RssAnon", "RssFile", "VmHWM")


def main() -> None:
    import argparse
    import tempfile

    from benchmark_gatt import print_table

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gattd", default=str(ROOT / ".build" / "release" / "gattd"))
    parser.add_argument("--notifications", type=int, default=10_000)
    parser.add_argument("--cycles", type=int, default=1_000)
    parser.add_argument("--keep-startup-pages", action="store_true",
                        help="also run with GATTD_KEEP_STARTUP_PAGES=1 (RSS without handing pages back)")
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    gattd = str(Path(arguments.gattd).resolve())
    results = []
    with tempfile.TemporaryDirectory(prefix="gattd-memory.") as work:
        for keep in ([False, True] if arguments.keep_startup_pages else [False]):
            results.append(run_memory_benchmark(gattd, Path(work), arguments.notifications, arguments.cycles, keep))
    print(f"gattd:   {gattd} ({os.path.getsize(gattd) / 1e6:.1f} MB)")
    for result in results:
        print_table(memory_header(result), memory_rows(result))
    if arguments.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
