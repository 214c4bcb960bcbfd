#!/usr/bin/env python3
"""(e) gattd vs Bumble's own peripheral: launch → advertising, idle RSS, CPU per Read Request,
RSS after load. Run through `scripts/benchmark` (`--only peers` for this part alone);
imported by scripts/benchmark_gatt.py. The same file is the Bumble peripheral's child
process (`--role bumble-peripheral`).

Per run and per side, on a fresh pair of virtual controllers, a fresh peripheral process on
controller 0 (gattd, release build, or a Bumble `Device` in its own Python process) serving
the same characteristic (Battery Level 0x2A19, read, 1-byte value 0x64) in the same service:

  launch → advertising   wall time (CLOCK_REALTIME) from just before the process is spawned
                         to the first LE Set (Extended) Advertising Enable with Enable = 1
                         that controller 0 records in its command log;
  idle RSS               VmRSS 2.5 s after advertising started, nothing connected (gattd
                         hands its clean start-up pages back 1 s after advertising starts);
  CPU per read           a Bumble central on controller 1 connects, makes 200 warm-up
                         Read Requests, then N sequential ones (each response checked);
                         the peripheral process's utime + stime over the N, divided by N;
  RSS after load         VmRSS and VmHWM after the reads.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
sys.path.insert(0, str(ROOT / "scripts"))

from bumble import att, hci  # noqa: E402
from bumble.core import AdvertisingData  # noqa: E402

from benchmark_notify import cpu_seconds, median_of, spread, summary_row  # noqa: E402

SERVICE_UUID = "5eb20000-8d3c-4a5e-9b1f-6c0a2d4e8f10"
READ_UUID = "2A19"
VALUE = b"\x64"
LOCAL_NAME = "BENCHR"
PERIPHERAL_ADDRESS = "D0:00:00:00:00:BC"
CENTRAL_ADDRESS = "C0:00:00:00:00:0D"
ADVERTISING_ENABLE = {0x200A, 0x2039}  # LE Set Advertising Enable, LE Set Extended Advertising Enable

CONFIG = {
    "name": "bench-read",
    "advertising": {"local_name": LOCAL_NAME, "interval_ms": [20, 30]},
    "services": [{"id": "bench", "uuid": SERVICE_UUID, "characteristics": [
        {"id": "level", "uuid": READ_UUID, "properties": ["read"], "value": {"hex": VALUE.hex()}},
    ]}],
}


def rss_kib(pid: int) -> dict[str, int]:
    result = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            result[key] = int(value.split()[0])
    return result


def first_advertising_enable(commands: Path) -> float | None:
    """CLOCK_REALTIME of the first advertising-enable command (Enable = 1) in a command log."""
    if not commands.exists():
        return None
    for line in commands.read_text().splitlines():
        entry = json.loads(line)
        packet = bytes.fromhex(entry["hex"])
        if len(packet) >= 5 and packet[0] == 0x01 and (packet[1] | packet[2] << 8) in ADVERTISING_ENABLE \
                and packet[4] == 0x01:
            return entry["t"]
    return None


async def bumble_peripheral(transport: str) -> None:
    from bumble.device import Device
    from bumble.gatt import Characteristic, Service
    from bumble.transport import open_transport

    async with await open_transport(transport) as (source, sink):
        device = Device.with_hci("bench-peripheral", hci.Address(PERIPHERAL_ADDRESS), source, sink)
        level = Characteristic(READ_UUID, Characteristic.Properties.READ, Characteristic.READABLE, VALUE)
        device.add_service(Service(SERVICE_UUID, [level]))
        await device.power_on()
        advertising_data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, LOCAL_NAME.encode()),
        ]))
        await device.start_advertising(advertising_data=advertising_data, auto_restart=False)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "quit" or EOF
        await device.power_off()


async def reads(controllers, address: hci.Address, pid: int, count: int) -> dict:
    from harness import bumble_device, connect, find_characteristic

    async with bumble_device(controllers[1], "bench-central", CENTRAL_ADDRESS) as device:
        peer = await connect(device, address)
        request = att.ATT_Read_Request(attribute_handle=find_characteristic(peer, READ_UUID).handle)
        for _ in range(200):  # warm-up
            await peer.gatt_client.send_request(request)
        cpu_before = cpu_seconds(pid)
        start = time.monotonic()
        for _ in range(count):
            response = await peer.gatt_client.send_request(request)
            assert response.op_code == att.Opcode.ATT_READ_RESPONSE and response.attribute_value == VALUE
        wall = time.monotonic() - start
        cpu = cpu_seconds(pid) - cpu_before
        await peer.connection.disconnect()
    return {"reads_per_s": count / wall, "cpu_s_per_10k": cpu * 10_000 / count}


def wait_for_advertising(commands: Path, process: subprocess.Popen, timeout: float = 20.0) -> float:
    deadline = time.monotonic() + timeout
    while (enabled := first_advertising_enable(commands)) is None:
        if process.poll() is not None:
            raise RuntimeError(f"peripheral exited with {process.returncode} before advertising")
        if time.monotonic() > deadline:
            raise TimeoutError("no advertising enable within 20 s")
        time.sleep(0.005)
    return enabled


def one_run(side: str, gattd_binary: str, run_dir: Path, count: int) -> dict:
    from harness import GattdProcess, VirtualControllers

    run_dir.mkdir()
    controllers = VirtualControllers(2, run_dir).start()
    commands = controllers[0].commands_path
    gattd = child = None
    try:
        if side == "gattd":
            config = run_dir / "read.json"
            config.write_text(json.dumps(CONFIG))
            (run_dir / "state").mkdir()
            gattd = GattdProcess(config, controllers[0].transport, run_dir,
                                 ["--control", str(run_dir / "control.sock"), "--state-dir", str(run_dir / "state"),
                                  "--log-level", "info"])
            launched = time.time()
            gattd.start()
            process = gattd.process
            address = hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)
        else:
            launched = time.time()
            child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--role", "bumble-peripheral",
                                      "--transport", controllers[0].bumble_transport],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=open(run_dir / "peripheral.log", "w"), text=True)
            process = child
            address = hci.Address(PERIPHERAL_ADDRESS, hci.Address.RANDOM_DEVICE_ADDRESS)
        advertising = wait_for_advertising(commands, process)
        time.sleep(2.5)
        idle = rss_kib(process.pid)
        result = asyncio.run(asyncio.wait_for(reads(controllers, address, process.pid, count), 120))
        loaded = rss_kib(process.pid)
        return result | {"launch_to_advertising_s": advertising - launched, "idle_rss_kib": idle["VmRSS"],
                         "loaded_rss_kib": loaded["VmRSS"], "loaded_hwm_kib": loaded["VmHWM"]}
    except BaseException:
        if gattd is not None:
            print(gattd.log(), file=sys.stderr)
        if (run_dir / "peripheral.log").exists():
            print((run_dir / "peripheral.log").read_text(), file=sys.stderr)
        raise
    finally:
        if gattd is not None:
            gattd.stop()
        if child is not None:
            try:
                child.stdin.close()
                child.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                child.kill()
                child.wait()
        controllers.stop()


def run_peers_benchmark(gattd_binary: str, work_dir: Path, runs: int = 3, count: int = 2000) -> dict:
    import harness

    harness.GATTD_BINARY = Path(gattd_binary)
    results: dict = {"runs": runs, "reads": count}
    for side in ("gattd", "bumble"):
        results[side] = median_of([one_run(side, gattd_binary, work_dir / f"peers-{side}-{n}", count)
                                   for n in range(runs)])
    return results


def peers_summary_rows(results: dict) -> list[tuple[str, ...]]:
    g, b = results["gattd"], results["bumble"]
    return [
        summary_row(f"CPU µs per Read Request, 1 B value, sequential ({results['reads']} per run)", g, b,
                    "cpu_s_per_10k", 100),
        summary_row("launch → first advertising enable, ms", g, b, "launch_to_advertising_s", 1000),
        summary_row("RSS idle (VmRSS 2.5 s after advertising), MiB", g, b, "idle_rss_kib", 1 / 1024, 1),
        summary_row("RSS after the reads (VmRSS), MiB", g, b, "loaded_rss_kib", 1 / 1024, 1),
        summary_row("peak RSS (VmHWM) after the reads, MiB", g, b, "loaded_hwm_kib", 1 / 1024, 1),
        summary_row("reads/s (bounded by the Python central and controllers)", g, b, "reads_per_s", 1),
    ]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=["bumble-peripheral"], required=True)
    parser.add_argument("--transport", required=True, help="Bumble transport of controller 0")
    arguments = parser.parse_args()
    asyncio.run(bumble_peripheral(arguments.transport))


if __name__ == "__main__":
    main()
