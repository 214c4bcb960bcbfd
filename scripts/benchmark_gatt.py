#!/usr/bin/env python3
"""gattd benchmark on the virtual link (run through scripts/benchmark).

Measures, with a Bumble central on a virtual controller:
  (a) full discovery (services, characteristics, descriptors) of a generated 100-service
      database, at ATT_MTU 23 and 517 (median of several connections);
  (b) sequential Read Request round trips per second for a small value;
  (c) gattd's peak RSS (VmHWM) and CPU time, and its CPU time per read;
  (d) notifications per second end to end and CPU time per 10,000 notifications, gattd
      (pushed through its control socket) side by side with Bumble's own peripheral
      (scripts/benchmark_notify.py), for 20 B and 244 B values and ACL buffers of 27 and 251 B;
  (e) gattd vs Bumble's peripheral: launch → first advertising enable, idle and loaded RSS,
      CPU time per Read Request (scripts/benchmark_peers.py);
  (f) gattd's memory (VmRSS = RssAnon + RssFile, VmHWM) idle, after 10,000 notifications and
      over 1,000 connect/disconnect cycles, 100 services (scripts/benchmark_memory.py);
  (g) the machine's floor: the CPU time one wake-up (epoll_wait + read + write) costs a C
      server that does nothing else, over loopback TCP and a Unix socket (scripts/benchmark_floor.py).
`--only gatt` runs (a)-(c), `--only notify` (d), `--only peers` (e), `--only memory` (f), `--only floor` (g). Prints tables (and JSON
with --json), ending with a summary: gattd, Bumble, ratio, runs min/median/max.

The central (Python) and the virtual controllers (Python) are in the loop: round trips
measure the whole chain, gattd's share is its CPU time per read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
sys.path.insert(0, str(ROOT / "scripts"))

from bumble import att, hci  # noqa: E402
from bumble.core import PhysicalTransport  # noqa: E402
from bumble.device import Device, Peer  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

from harness import GattdProcess, VirtualControllers  # noqa: E402
from benchmark_notify import notify_rows, notify_summary_row, run_notify_benchmark  # noqa: E402
from benchmark_peers import peers_summary_rows, run_peers_benchmark  # noqa: E402
from benchmark_floor import floor_rows, run_floor_benchmark  # noqa: E402
from benchmark_memory import memory_header, memory_rows, run_memory_benchmark  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def generate_config(path: Path, services: int) -> tuple[int, int, int]:
    """100 services × (a read+notify characteristic with a CCCD and a User Description, and a
    read/write characteristic). Returns (services, characteristics, descriptors)."""
    config = {"name": "bench", "advertising": {"local_name": "bench", "interval_ms": [20, 30]}, "services": []}
    for index in range(services):
        config["services"].append({
            "uuid": f"6e4b{index:04x}-b5a3-f393-e0a9-e50e24dcca9e",
            "characteristics": [
                {"uuid": f"6e4c{index:04x}-b5a3-f393-e0a9-e50e24dcca9e", "properties": ["read", "notify"],
                 "value": {"hex": "00"}, "user_description": f"sensor {index}"},
                {"uuid": f"{0x2A6E + (index % 2):04X}", "properties": ["read", "write"],
                 "value": {"hex": "0102"}},
            ],
        })
    config["services"][0]["characteristics"].append(
        {"id": "small", "uuid": "2A19", "properties": ["read"], "value": {"hex": "64"}})
    path.write_text(json.dumps(config))
    return services, 2 * services + 1, 2 * services


def proc_status(pid: int) -> dict[str, str]:
    result = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        result[key] = value.strip()
    return result


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


async def connect(device: Device, address: hci.Address) -> Peer:
    connection = await device.connect(address, transport=PhysicalTransport.LE, timeout=10)
    return Peer(connection)


async def discover(peer: Peer) -> tuple[int, int, int]:
    services = await peer.discover_services()
    characteristics = descriptors = 0
    for service in services:
        for characteristic in await service.discover_characteristics():
            characteristics += 1
            descriptors += len(await characteristic.discover_descriptors())
    return len(services), characteristics, descriptors


async def benchmark(arguments, controllers: VirtualControllers, gattd: GattdProcess, expected) -> dict:
    results: dict = {}
    address = hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)
    async with await open_transport(controllers[1].bumble_transport) as (source, sink):
        device = Device.with_hci("bench", hci.Address("C0:00:00:00:00:0B"), source, sink)
        await device.power_on()

        for mtu in (23, 517):
            times = []
            for _ in range(arguments.discovery_runs):
                peer = await connect(device, address)
                if mtu != 23:
                    await peer.request_mtu(mtu)
                start = time.perf_counter()
                found = await discover(peer)
                times.append(time.perf_counter() - start)
                # +2 services and +5 characteristics, +1 descriptor: GAP and GATT.
                assert found == (expected[0] + 2, expected[1] + 5, expected[2] + 1), found
                await peer.connection.disconnect()
            results[f"discovery_mtu{mtu}_s"] = statistics.median(times)
            results[f"discovery_mtu{mtu}_runs"] = times
        results["discovered"] = {"services": found[0], "characteristics": found[1], "descriptors": found[2]}

        peer = await connect(device, address)
        first = (await peer.discover_services())[2]  # after GAP and GATT
        handle = next(c.handle for c in await first.discover_characteristics() if c.uuid.to_hex_str() == "2A19")
        request = att.ATT_Read_Request(attribute_handle=handle)
        for _ in range(200):  # warm-up
            await peer.gatt_client.send_request(request)
        cpu_before = cpu_seconds(gattd.process.pid)
        reads = 0
        start = time.perf_counter()
        deadline = start + arguments.read_seconds
        while time.perf_counter() < deadline:
            response = await peer.gatt_client.send_request(request)
            assert response.op_code == att.Opcode.ATT_READ_RESPONSE and response.attribute_value == b"\x64"
            reads += 1
        elapsed = time.perf_counter() - start
        cpu_used = cpu_seconds(gattd.process.pid) - cpu_before
        results["reads"] = reads
        results["reads_per_s"] = reads / elapsed
        results["gattd_cpu_us_per_read"] = cpu_used / reads * 1e6
        await peer.connection.disconnect()
        await device.power_off()
    status = proc_status(gattd.process.pid)
    results["gattd_vmhwm_kib"] = int(status["VmHWM"].split()[0])
    results["gattd_vmrss_kib"] = int(status["VmRSS"].split()[0])
    results["gattd_cpu_s"] = cpu_seconds(gattd.process.pid)
    return results


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def run_gatt_benchmark(arguments, work_dir: Path) -> tuple[dict, str]:
    """(a)–(c): discovery, read round trips, gattd's RSS and CPU. Returns (results, config summary)."""
    config = work_dir / "bench.json"
    expected = generate_config(config, arguments.services)
    check = subprocess.run([arguments.gattd, "--check-config", str(config)], capture_output=True, text=True)
    summary = check.stdout.splitlines()[0] if check.returncode == 0 else check.stderr
    controllers = VirtualControllers(2, work_dir).start()
    (work_dir / "state").mkdir()
    gattd = GattdProcess(config, controllers[0].transport, work_dir,
                         ["--control", str(work_dir / "control.sock"), "--state-dir", str(work_dir / "state"),
                          "--log-level", "info"])
    try:
        gattd.start()
        time.sleep(0.5)  # advertising starts after the control socket is up
        results = asyncio.run(asyncio.wait_for(benchmark(arguments, controllers, gattd, expected), 300))
    except BaseException:
        print(gattd.log(), file=sys.stderr)
        raise
    finally:
        gattd.stop()
        controllers.stop()
    return results, summary


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    print()
    print("  ".join(cell.ljust(width) for cell, width in zip(header, widths)).rstrip())
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def notify_case(case: str) -> tuple[list[int], bool]:
    """"20/27/1/32/batched" → ([20, 27, 1, 32], True)."""
    parts = case.split("/")
    batched = parts[-1] == "batched"
    return [int(part) for part in (parts[:-1] if batched else parts)], batched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gattd", default=str(ROOT / ".build" / "debug" / "gattd"), help="gattd binary")
    parser.add_argument("--only", choices=["gatt", "notify", "peers", "memory", "floor"],
                        help="run only (a)-(c) discovery/reads/RSS ('gatt'), only (d) notifications ('notify') "
                             "or only (e) launch/RSS/reads, gattd vs Bumble ('peers'), only (f) memory ('memory'), "
                             "only (g) the machine's floor ('floor')")
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--discovery-runs", type=int, default=5)
    parser.add_argument("--read-seconds", type=float, default=10.0)
    parser.add_argument("--notify-runs", type=int, default=3, help="runs per side of (d); the median is shown")
    parser.add_argument("--notifications", type=int, default=5_000, help="notifications per run of (d)")
    parser.add_argument("--notify-cases", default="20/27,20/27/1/32,20/27/1/32/batched,244/27,244/251,20/27/4",
                        help="(d) cases as VALUE_BYTES/ACL_BUFFER_BYTES[/CENTRALS[/WINDOW]][/batched], "
                             "comma-separated (values over 20 B use ATT_MTU 247; 1 central unless given; "
                             "WINDOW: notify requests the pusher keeps in flight, 1 unless given; batched: the "
                             "controllers report a batch's completions in one event, not one per packet); "
                             "default %(default)s")
    parser.add_argument("--peer-runs", type=int, default=3, help="runs per side of (e); the median is shown")
    parser.add_argument("--peer-reads", type=int, default=2000, help="Read Requests per run of (e)")
    parser.add_argument("--memory-notifications", type=int, default=10_000, help="notifications in (f)")
    parser.add_argument("--memory-cycles", type=int, default=1_000, help="connect/disconnect cycles in (f)")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    arguments = parser.parse_args()
    arguments.gattd = str(Path(arguments.gattd).resolve())  # gattd runs in a temporary directory

    import harness
    harness.GATTD_BINARY = Path(arguments.gattd)

    results: dict = {}
    notify: list[dict] = []
    cases = [notify_case(case) for case in arguments.notify_cases.split(",") if case]
    with tempfile.TemporaryDirectory(prefix="gattd-bench.") as work:
        work_dir = Path(work)
        if arguments.only in (None, "gatt"):
            results, summary = run_gatt_benchmark(arguments, work_dir)
        peers = run_peers_benchmark(arguments.gattd, work_dir, arguments.peer_runs, arguments.peer_reads) \
            if arguments.only in (None, "peers") else None
        if arguments.only in (None, "notify"):
            for numbers, batched in cases:
                notify.append(run_notify_benchmark(arguments.gattd, work_dir, arguments.notify_runs,
                                                   arguments.notifications, *numbers, batched=batched))
        memory = run_memory_benchmark(arguments.gattd, work_dir, arguments.memory_notifications,
                                      arguments.memory_cycles) if arguments.only in (None, "memory") else None
        floor = run_floor_benchmark(work_dir) if arguments.only in (None, "floor") else False

    print(f"machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu_model()}, "
          f"Linux {platform.release()}, Python {platform.python_version()}")
    print(f"gattd:   {arguments.gattd}")
    if results:
        print(f"config:  {summary.split(': ', 1)[-1]}")
        d = results["discovered"]
        rows = [
            (f"discovery, MTU 23 ({d['services']} services, {d['characteristics']} characteristics, "
             f"{d['descriptors']} descriptors; median of {arguments.discovery_runs})",
             f"{results['discovery_mtu23_s'] * 1000:.0f} ms"),
            (f"discovery, MTU 517 (same; median of {arguments.discovery_runs})",
             f"{results['discovery_mtu517_s'] * 1000:.0f} ms"),
            (f"sequential reads of a 1-byte value ({arguments.read_seconds:.0f} s, {results['reads']} reads)",
             f"{results['reads_per_s']:.0f} reads/s"),
            ("gattd CPU time per read", f"{results['gattd_cpu_us_per_read']:.0f} µs"),
            ("gattd peak RSS (VmHWM)", f"{results['gattd_vmhwm_kib'] / 1024:.1f} MiB"),
            ("gattd CPU time, whole run (user + system)", f"{results['gattd_cpu_s']:.2f} s"),
        ]
        print_table(("measure", "value"), rows)
    for case in notify:
        print_table(("(d) notifications to subscribed Bumble centrals", "gattd", "Bumble peripheral"),
                    notify_rows(case))
    summary_rows = [notify_summary_row(case) for case in notify]
    if peers is not None:
        summary_rows += peers_summary_rows(peers)
        results["peers"] = peers
    if summary_rows:
        print_table(("gattd vs Bumble's peripheral (median of runs)", "gattd", "Bumble", "ratio",
                     "gattd runs min/med/max", "Bumble runs min/med/max"), summary_rows)
    if notify:
        results["notify"] = notify
    if memory is not None:
        print_table(memory_header(memory), memory_rows(memory))
        results["memory"] = memory
    if floor is not False:
        print_table(("(g) the machine's floor: one wake-up of a C epoll server doing nothing else", "value"),
                    floor_rows(floor))
        results["floor"] = floor
    if arguments.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
