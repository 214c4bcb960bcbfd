#!/usr/bin/env python3
"""L2CAP channel throughput on the virtual link: gattd vs Bumble's own L2CAP server, and
against notifications of the same payload (run through `scripts/benchmark --only l2cap`).

One Bumble central (this process) on controller 1 opens an LE credit-based channel
(MTU 2048, MPS 247, 8 credits at a time, as Bumble returns them) to the peripheral on
controller 0, which sends COUNT SDUs of SIZE bytes (a 32-bit sequence number + filler):

  gattd side    gattd serves the channel "bench"; a *sender* process (the Python client,
                `l2cap_listen`) gets the channel's socket and writes the SDUs.
  Bumble side   a Bumble `Device` (own process) with an LE credit-based server on the same
                PSM, writing the SDUs from its channel handler.

The central checks every byte arrives, in order (Bumble's sender merges queued writes into
MTU-sized SDUs, so bytes are counted, not SDUs). Measured per run: wall time from the first
send to the last arrival (CLOCK_MONOTONIC), bytes/s, and CPU time per KiB of gattd, of the
sender and of the Bumble process (utime + stime from /proc/PID/stat). The virtual
controllers and the central are in the loop for both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))

from bumble import hci, l2cap  # noqa: E402
from bumble.core import AdvertisingData  # noqa: E402

from benchmark_notify import Child as NotifyChild, cpu_seconds, median_of, read_stdin_line, say  # noqa: E402


class Child(NotifyChild):
    """A child role of this script (benchmark_notify's Child runs that file)."""

    def __init__(self, arguments: list[str], log_path: Path) -> None:
        import subprocess
        self.log_path = log_path
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), *arguments],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log_path, "a"), text=True, bufsize=1)

PSM = 0x0081
PERIPHERAL_ADDRESS = "D0:00:00:00:00:BC"
CENTRAL_ADDRESS = "C0:00:00:00:00:1C"
LOCAL_NAME = "BENCHL"
SPEC = dict(mtu=2048, mps=247, max_credits=8)


def sdu_for(sequence: int, size: int) -> bytes:
    return struct.pack("<I", sequence) + bytes((0xB0 + n) & 0xFF for n in range(size - 4))


async def sender(control_path: str, count: int, size: int) -> None:
    from gattd_client import GattdClient

    async with GattdClient.connect(control_path) as gattd:
        async with gattd.l2cap_listen("bench") as channels:
            say({"state": "ready"})
            channel = await channels.accept()
            assert channel is not None
            await read_stdin_line()  # "go"
            first_send = time.monotonic()
            for sequence in range(count):
                await channel.send(sdu_for(sequence, size))
            say({"state": "done", "first_send": first_send})
            await read_stdin_line()
            channel.close()


async def bumble_server(transport: str, count: int, size: int) -> None:
    from bumble.device import Device
    from bumble.transport import open_transport

    async with await open_transport(transport) as (source, sink):
        device = Device.with_hci("bench-l2cap", hci.Address(PERIPHERAL_ADDRESS), source, sink)
        opened: asyncio.Queue = asyncio.Queue()
        device.create_l2cap_server(spec=l2cap.LeCreditBasedChannelSpec(psm=PSM, **SPEC), handler=opened.put_nowait)
        await device.power_on()
        await device.start_advertising(advertising_data=bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])), (AdvertisingData.COMPLETE_LOCAL_NAME, LOCAL_NAME.encode())])),
            auto_restart=False)
        say({"state": "ready"})
        channel = await opened.get()
        await read_stdin_line()  # "go"
        first_send = time.monotonic()
        for sequence in range(count):
            channel.write(sdu_for(sequence, size))
            if sequence % 32 == 31:
                await channel.drain()
        await channel.drain()
        say({"state": "done", "first_send": first_send})
        await read_stdin_line()
        await device.power_off()


async def one_run(controllers, count: int, size: int, child: Child, pids: dict, address: hci.Address) -> dict:
    from harness import bumble_device, connect

    assert (await child.message())["state"] == "ready"
    async with bumble_device(controllers[1], "bench-central", CENTRAL_ADDRESS) as device:
        peer = await connect(device, address)
        channel = await peer.connection.create_l2cap_channel(spec=l2cap.LeCreditBasedChannelSpec(psm=PSM, **SPEC))
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        received: list[bytes] = []
        total = [0]

        # Bytes, not SDUs: Bumble's sender merges queued writes into MTU-sized SDUs.
        def on_sdu(sdu: bytes) -> None:
            received.append(bytes(sdu))
            total[0] += len(sdu)
            if total[0] >= count * size and not done.done():
                done.set_result(time.monotonic())

        channel.sink = on_sdu
        pids = pids | {"controllers": controllers.process.pid, "central": os.getpid()}
        before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        child.tell("go")
        last_arrival = await asyncio.wait_for(done, 300)
        after = {name: cpu_seconds(pid) for name, pid in pids.items()}
        sent = await child.message()
        assert sent["state"] == "done", sent
        if b"".join(received) != b"".join(sdu_for(n, size) for n in range(count)):
            raise AssertionError("the data arrived wrong or out of order")
        await peer.connection.disconnect()
    child.finish()
    wall = last_arrival - sent["first_send"]
    kib = count * size / 1024
    result = {"wall_s": wall, "bytes_per_s": count * size / wall}
    for name in pids:
        result[f"{name}_cpu_us_per_kib"] = (after[name] - before[name]) * 1e6 / kib
    return result


def run_l2cap_benchmark(gattd_binary: str, work_dir: Path, runs: int = 3, count: int = 4000, size: int = 244,
                        acl: int = 251) -> dict:
    import harness
    from harness import GattdProcess, VirtualControllers

    harness.GATTD_BINARY = Path(gattd_binary)
    results: dict = {"count": count, "sdu": size, "acl": acl, "runs": runs, "spec": SPEC}
    side = work_dir / "l2cap-gattd"
    side.mkdir()
    config = side / "l2cap.json"
    config.write_text(json.dumps({"name": "bench-l2cap", "advertising": {"local_name": LOCAL_NAME, "interval_ms": [20, 30]},
                                  "l2cap_channels": [{"id": "bench", "psm": PSM, "mtu": SPEC["mtu"]}]}))
    controllers = VirtualControllers(2, side, acl_buffer_size=acl).start()
    control = side / "control.sock"
    gattd = GattdProcess(config, controllers[0].transport, side,
                         ["--control", str(control), "--state-dir", str(side), "--log-level", "info"])
    try:
        gattd.start()
        address = hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)
        runs_ = []
        for _ in range(runs):
            child = Child(["--role", "sender", "--control", str(control), "--count", str(count), "--size", str(size)],
                          side / "sender.log")
            try:
                runs_.append(asyncio.run(one_run(controllers, count, size, child,
                                                 {"peripheral": gattd.process.pid, "sender": child.process.pid}, address)))
            finally:
                child.finish()
        results["gattd"] = median_of(runs_)
    except BaseException:
        print(gattd.log(), file=sys.stderr)
        raise
    finally:
        gattd.stop()
        controllers.stop()

    side = work_dir / "l2cap-bumble"
    side.mkdir()
    controllers = VirtualControllers(2, side, acl_buffer_size=acl).start()
    try:
        runs_ = []
        for _ in range(runs):
            child = Child(["--role", "bumble-server", "--transport", controllers[0].bumble_transport,
                           "--count", str(count), "--size", str(size)], side / "server.log")
            try:
                address = hci.Address(PERIPHERAL_ADDRESS, hci.Address.RANDOM_DEVICE_ADDRESS)
                runs_.append(asyncio.run(one_run(controllers, count, size, child, {"peripheral": child.process.pid}, address)))
            finally:
                child.finish()
        results["bumble"] = median_of(runs_)
    finally:
        controllers.stop()
    return results


def l2cap_rows(r: dict) -> list[tuple[str, str, str]]:
    g, b = r["gattd"], r["bumble"]
    return [
        (f"throughput, {r['count']} SDUs of {r['sdu']} B (ACL {r['acl']} B)", f"{g['bytes_per_s'] / 1024:.0f} KiB/s",
         f"{b['bytes_per_s'] / 1024:.0f} KiB/s"),
        ("peripheral CPU per KiB", f"{g['peripheral_cpu_us_per_kib']:.0f} µs", f"{b['peripheral_cpu_us_per_kib']:.0f} µs"),
        ("sending program CPU per KiB (gattd: the Python client)", f"{g.get('sender_cpu_us_per_kib', 0):.0f} µs", "(in the above)"),
        ("virtual controllers CPU per KiB", f"{g['controllers_cpu_us_per_kib']:.0f} µs", f"{b['controllers_cpu_us_per_kib']:.0f} µs"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=["sender", "bumble-server"])
    parser.add_argument("--control")
    parser.add_argument("--transport")
    parser.add_argument("--count", type=int, default=4000)
    parser.add_argument("--size", type=int, default=244)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gattd", default=str(ROOT / ".build" / "debug" / "gattd"))
    arguments = parser.parse_args()
    if arguments.role == "sender":
        return asyncio.run(sender(arguments.control, arguments.count, arguments.size))
    if arguments.role == "bumble-server":
        return asyncio.run(bumble_server(arguments.transport, arguments.count, arguments.size))
    import tempfile
    with tempfile.TemporaryDirectory(prefix="gattd-bench-l2cap.") as work:
        r = run_l2cap_benchmark(str(Path(arguments.gattd).resolve()), Path(work), arguments.runs, arguments.count, arguments.size)
    print(json.dumps({k: v for k, v in r.items() if k not in ("gattd", "bumble")}))
    for row in l2cap_rows(r):
        print("  ".join(row))


if __name__ == "__main__":
    main()
