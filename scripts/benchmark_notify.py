#!/usr/bin/env python3
"""Notification throughput on the virtual link: gattd vs Bumble's own peripheral.

Run through `scripts/benchmark` (`--only notify` for this part alone); imported by
scripts/benchmark_gatt.py. The same file is the child process of each side (`--role`):

  gattd side    gattd on controller 0; a *pusher* process sends N notify requests through
                gattd's control socket, one at a time (it waits for each reply; on `busy` it
                waits for `{"event":"ready"}` and resends the same value).
  Bumble side   a Bumble `Device` (own process) with the same characteristic on controller 0,
                awaiting `device.notify_subscribers(characteristic, value)` N times.

Either way one Bumble central (this process) on controller 1 is subscribed, at the default
ATT_MTU (23), to a notify characteristic with 20-byte values (a little-endian 32-bit sequence
number + 16 filler bytes); it checks that every value arrives, in order. Measured per run:
wall time from the pusher's first send to the central's last arrival (CLOCK_MONOTONIC,
shared by all processes on the machine), and the CPU time (utime + stime from
/proc/PID/stat, read just before "go" and just after the last arrival) of gattd, of the
pusher, and of the Bumble peripheral process. The virtual controllers (one Python process)
and the central are in the loop for both sides alike; their CPU time is shown too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))

from bumble import hci  # noqa: E402
from bumble.core import AdvertisingData  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SERVICE_UUID = "5eb10000-8d3c-4a5e-9b1f-6c0a2d4e8f10"
STREAM_UUID = "5eb10001-8d3c-4a5e-9b1f-6c0a2d4e8f10"
LOCAL_NAME = "BENCHN"
PERIPHERAL_ADDRESS = "D0:00:00:00:00:BB"  # the Bumble peripheral's random static address
CENTRAL_ADDRESS = "C0:00:00:00:00:0C"
VALUE_SIZE = 20  # default; 244 B values need ATT_MTU 247 (the central exchanges it)
LARGE_MTU = 247


def config_for(size: int) -> dict:
    return {
        "name": "bench-notify",
        "advertising": {"local_name": LOCAL_NAME, "interval_ms": [20, 30]},
        "services": [{"id": "bench", "uuid": SERVICE_UUID, "characteristics": [
            {"id": "stream", "uuid": STREAM_UUID, "properties": ["notify"], "max_length": size},
        ]}],
    }


def mtu_for(size: int) -> int:
    return 23 if size <= 20 else LARGE_MTU


@functools.cache
def filler(size: int) -> bytes:
    return bytes((0xA0 + n) & 0xFF for n in range(size - 4))


def value_for(sequence: int, size: int = VALUE_SIZE) -> bytes:
    return struct.pack("<I", sequence) + filler(size)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


# ----------------------------------------------------------------------------------------
# Child processes: the pusher (gattd side) and the Bumble peripheral
# ----------------------------------------------------------------------------------------
async def read_stdin_line() -> str:
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


def say(message: dict) -> None:
    print(json.dumps(message), flush=True)


async def pusher(control_path: str, count: int, size: int, centrals: int = 1, window: int = 1) -> None:
    """Sends `count` notify requests with at most `window` unanswered at a time (1: waits for
    each reply; on `busy` waits for `ready` and resends). Pipelined (window > 1), the requests
    say `"wait": true`: a full transmit queue is waited out by gattd (it stops reading the
    connection meanwhile) instead of answered `busy`, so order is kept without resends."""
    from control_client import ControlClient

    control = await ControlClient.open(control_path)
    say({"state": "ready"})
    await read_stdin_line()  # "go"
    busy = 0
    first_send = time.monotonic()
    if window <= 1:
        for sequence in range(count):
            line = ('{"op":"notify","characteristic":"stream","value":{"hex":"%s"}}' % value_for(sequence, size).hex()).encode()
            while True:
                reply = await control.raw_request(line, timeout=30)
                if reply.get("ok"):
                    if reply.get("sent") != centrals:
                        raise RuntimeError(f"notify {sequence}: {reply}")
                    break
                if reply.get("error") != "busy":
                    raise RuntimeError(f"notify {sequence}: {reply}")
                busy += 1
                await control.event("ready", timeout=30)
    else:
        in_flight = 0
        answered = 0
        sequence = 0
        while answered < count:
            # Top the window up in one write, then read replies until half of it is answered.
            batch = min(window - in_flight, count - sequence)
            if batch > 0:
                control.writer.write(b"".join(
                    ('{"op":"notify","characteristic":"stream","value":{"hex":"%s"},"wait":true}\n'
                     % value_for(n, size).hex()).encode() for n in range(sequence, sequence + batch)))
                in_flight += batch
                sequence += batch
            while in_flight > (window // 2 if sequence < count else 0):
                reply = await control.reply(timeout=30)
                if reply.get("sent") != centrals:
                    raise RuntimeError(f"notify {answered}: {reply}")
                in_flight -= 1
                answered += 1
    say({"state": "done", "first_send": first_send, "last_send": time.monotonic(), "busy": busy})
    await read_stdin_line()  # "quit" or EOF
    await control.close()


async def bumble_peripheral(transport: str, count: int, size: int, centrals: int = 1) -> None:
    from bumble.device import Device
    from bumble.gatt import Characteristic, Service
    from bumble.transport import open_transport

    async with await open_transport(transport) as (source, sink):
        device = Device.with_hci("bench-peripheral", hci.Address(PERIPHERAL_ADDRESS), source, sink)
        stream = Characteristic(STREAM_UUID, Characteristic.Properties.NOTIFY, Characteristic.READABLE,
                                bytes(size))
        device.add_service(Service(SERVICE_UUID, [stream]))
        await device.power_on()
        advertising_data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, LOCAL_NAME.encode()),
        ]))
        await device.start_advertising(advertising_data=advertising_data, auto_restart=False)

        def on_connection(_connection) -> None:  # advertise again until every central is in
            if len(device.connections) < centrals:
                asyncio.ensure_future(device.start_advertising(advertising_data=advertising_data,
                                                               auto_restart=False))

        device.on("connection", on_connection)
        say({"state": "ready"})
        await read_stdin_line()  # "go", once the central has subscribed
        first_send = time.monotonic()
        for sequence in range(count):
            await device.notify_subscribers(stream, value_for(sequence, size))
        say({"state": "done", "first_send": first_send, "last_send": time.monotonic(), "busy": 0})
        await read_stdin_line()
        await device.power_off()


# ----------------------------------------------------------------------------------------
# The benchmark (parent process)
# ----------------------------------------------------------------------------------------
class Child:
    """A child role of this script, talking JSON lines on stdout and reading commands on stdin."""

    def __init__(self, arguments: list[str], log_path: Path) -> None:
        self.log_path = log_path
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), *arguments],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log_path, "a"), text=True, bufsize=1)

    async def message(self, timeout: float = 30.0) -> dict:
        line = await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(None, self.process.stdout.readline),
                                      timeout)
        if not line:
            raise RuntimeError(f"child exited ({self.process.poll()}):\n{self.log_path.read_text()}")
        return json.loads(line)

    def tell(self, text: str) -> None:
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def finish(self) -> None:
        if self.process.poll() is not None:
            return
        try:
            self.tell("quit")
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except (BrokenPipeError, ValueError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


async def one_run(controllers, count: int, child: Child, peripheral_pid: int | None,
                  address: hci.Address, size: int = VALUE_SIZE, centrals: int = 1) -> dict:
    """`centrals` central connections, on controllers 1…N (all Bumble devices in this process):
    subscribe, tell the child to push, count every central's values."""
    from harness import bumble_device, connect, find_characteristic

    ready = await child.message()
    assert ready["state"] == "ready", ready
    async with contextlib.AsyncExitStack() as stack:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        inboxes: list[list[bytes]] = []
        complete = [0]
        peers = []
        for index in range(centrals):
            address_text = "C0:00:00:00:00:%02X" % (int(CENTRAL_ADDRESS[-2:], 16) + index)
            device = await stack.enter_async_context(
                bumble_device(controllers[1 + index], f"bench-central-{index}", address_text))
            peer = await connect(device, address)
            if mtu_for(size) != 23:
                await peer.request_mtu(mtu_for(size))
            assert peer.connection.att_mtu == mtu_for(size), peer.connection.att_mtu
            received: list[bytes] = []
            inboxes.append(received)

            def on_value(value: bytes, received: list[bytes] = received) -> None:
                received.append(bytes(value))
                if len(received) == count:
                    complete[0] += 1
                    if complete[0] == centrals and not done.done():
                        done.set_result(time.monotonic())

            await find_characteristic(peer, STREAM_UUID).subscribe(on_value)
            peers.append(peer)
        pids = {"peripheral": peripheral_pid, "pusher": child.process.pid} if peripheral_pid else \
            {"peripheral": child.process.pid}
        pids |= {"controllers": controllers.process.pid, "central": os.getpid()}
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        child.tell("go")
        try:
            last_arrival = await asyncio.wait_for(done, 120)
        except TimeoutError:
            raise RuntimeError(f"not every notification arrived within 120 s (received: {[len(r) for r in inboxes]}); "
                               f"{child.log_path.name}:\n{child.log_path.read_text()}") from None
        cpu_after = {name: cpu_seconds(pid) for name, pid in pids.items()}
        pushed = await child.message()
        assert pushed["state"] == "done", pushed
        await asyncio.sleep(0.1)  # nothing more may arrive
        for index, received in enumerate(inboxes):
            if len(received) != count or any(value != value_for(n, size) for n, value in enumerate(received)):
                wrong = next((n for n, v in enumerate(received) if v != value_for(n, size)), len(received))
                raise AssertionError(f"central {index}: {len(received)} notifications received, "
                                     f"first wrong or missing at {wrong}")
        for peer in peers:
            await peer.connection.disconnect()
    child.finish()
    wall = last_arrival - pushed["first_send"]
    result = {
        "wall_s": wall,
        "notifications_per_s": count / wall,
        "busy": pushed["busy"],
        "peripheral_cpu_s_per_10k": (cpu_after["peripheral"] - cpu_before["peripheral"]) * 10_000 / count,
    }
    for name in ("pusher", "controllers", "central"):
        if name in pids:
            result[f"{name}_cpu_s_per_10k"] = (cpu_after[name] - cpu_before[name]) * 10_000 / count
    return result


def median_of(runs: list[dict]) -> dict:
    keys = [key for key in runs[0] if isinstance(runs[0][key], (int, float))]
    return {key: statistics.median(run[key] for run in runs) for key in keys} | {"runs": runs}


def run_notify_benchmark(gattd_binary: str, work_dir: Path, runs: int = 3, count: int = 10_000,
                         size: int = VALUE_SIZE, acl: int = 27, centrals: int = 1, window: int = 1,
                         batched: bool = False) -> dict:
    """Both sides, `runs` times each, on fresh virtual controllers per side (whose ACL buffers
    are `acl` bytes; `batched`: they report the completions of a batch of host packets in one
    Number Of Completed Packets event); `size`-byte values (ATT_MTU 23 up to 20 B, else 247); medians."""
    import harness
    from harness import GattdProcess, VirtualControllers

    harness.GATTD_BINARY = Path(gattd_binary)
    results: dict = {"count": count, "runs": runs, "value_size": size, "att_mtu": mtu_for(size), "acl": acl,
                     "centrals": centrals, "window": window, "batched": batched}
    name = f"{size}-{acl}-{centrals}-{window}" + ("-batched" if batched else "")

    # gattd, started once; a fresh central connection and a fresh pusher per run.
    side_dir = work_dir / f"notify-{name}-gattd"
    side_dir.mkdir()
    config = side_dir / "notify.json"
    config.write_text(json.dumps(config_for(size)))
    controllers = VirtualControllers(1 + centrals, side_dir, acl_buffer_size=acl, batch_completions=batched).start()
    control = side_dir / "control.sock"
    gattd = GattdProcess(config, controllers[0].transport, side_dir,
                         ["--control", str(control), "--state-dir", str(side_dir), "--log-level", "info"])
    try:
        gattd.start()
        time.sleep(0.5)  # advertising starts after the control socket is up
        address = hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)
        gattd_runs = []
        for _ in range(runs):
            child = Child(["--role", "pusher", "--control", str(control), "--count", str(count),
                           "--size", str(size), "--centrals", str(centrals), "--window", str(window)],
                          side_dir / "pusher.log")
            try:
                gattd_runs.append(asyncio.run(one_run(controllers, count, child, gattd.process.pid, address, size, centrals)))
            finally:
                child.finish()
        results["gattd"] = median_of(gattd_runs)
    except BaseException:
        print(gattd.log(), file=sys.stderr)
        raise
    finally:
        gattd.stop()
        controllers.stop()

    # Bumble's peripheral: a fresh process per run (it owns controller 0 while it runs).
    side_dir = work_dir / f"notify-{name}-bumble"
    side_dir.mkdir()
    controllers = VirtualControllers(1 + centrals, side_dir, acl_buffer_size=acl, batch_completions=batched).start()
    try:
        bumble_runs = []
        for _ in range(runs):
            child = Child(["--role", "bumble-peripheral", "--transport", controllers[0].bumble_transport,
                           "--count", str(count), "--size", str(size), "--centrals", str(centrals)],
                          side_dir / "peripheral.log")
            try:
                address = hci.Address(PERIPHERAL_ADDRESS, hci.Address.RANDOM_DEVICE_ADDRESS)
                bumble_runs.append(asyncio.run(one_run(controllers, count, child, None, address, size, centrals)))
            finally:
                child.finish()
        results["bumble"] = median_of(bumble_runs)
    finally:
        controllers.stop()
    return results


def spread(side: dict, key: str, scale: float, digits: int = 0) -> str:
    """min / median / max of `key` over the runs, times `scale` (per 10,000 s → µs each: 100)."""
    values = sorted(run[key] * scale for run in side["runs"])
    return f"{values[0]:.{digits}f} / {statistics.median(values):.{digits}f} / {values[-1]:.{digits}f}"


def summary_row(label: str, g: dict, b: dict, key: str, scale: float, digits: int = 0) -> tuple[str, ...]:
    """(case, gattd median, Bumble median, ratio, gattd runs, Bumble runs) for `key` × `scale`."""
    gm, bm = g[key] * scale, b[key] * scale
    return (label, f"{gm:.{digits}f}", f"{bm:.{digits}f}", f"{gm / bm:.2f}" if bm else "—",
            spread(g, key, scale, digits), spread(b, key, scale, digits))


def notify_summary_row(results: dict) -> tuple[str, ...]:
    """The issue's row: CPU µs per notification for one (value size, ACL buffer) case."""
    centrals = results.get("centrals", 1)
    window = results.get("window", 1)
    label = (f"CPU µs per notify, {results['value_size']} B, ATT_MTU {results['att_mtu']}, ACL {results['acl']} B, "
             f"{centrals} central{'s' if centrals > 1 else ''}" + (f" ({centrals} PDUs each)" if centrals > 1 else "")
             + (f", pipelined ({window} in flight)" if window > 1 else "")
             + (", completions batched" if results.get("batched") else ""))
    return summary_row(label, results["gattd"], results["bumble"], "peripheral_cpu_s_per_10k", 100)


def notify_rows(results: dict) -> list[tuple[str, str, str]]:
    """(measure, gattd, Bumble peripheral) rows for the printed table."""
    g, b = results["gattd"], results["bumble"]
    count = results["count"]
    return [
        (f"notify calls/s ({count} × {results['value_size']} B, ATT_MTU {results['att_mtu']}, "
         f"ACL buffers {results['acl']} B, {results.get('centrals', 1)} central(s), "
         f"{results.get('window', 1)} request(s) in flight"
         + (", completions batched" if results.get("batched") else "") + f", median of {results['runs']})", f"{g['notifications_per_s']:.0f}", f"{b['notifications_per_s']:.0f}"),
        ("wall time, first send → last arrival", f"{g['wall_s']:.2f} s", f"{b['wall_s']:.2f} s"),
        ("peripheral CPU time per 10,000 notifications (gattd / Bumble process)",
         f"{g['peripheral_cpu_s_per_10k']:.2f} s", f"{b['peripheral_cpu_s_per_10k']:.2f} s"),
        ("peripheral CPU µs per notification, runs min / median / max",
         spread(g, "peripheral_cpu_s_per_10k", 100), spread(b, "peripheral_cpu_s_per_10k", 100)),
        ("ratio gattd / Bumble, peripheral CPU per notification (median)",
         f"{g['peripheral_cpu_s_per_10k'] / b['peripheral_cpu_s_per_10k']:.2f}"
         if b['peripheral_cpu_s_per_10k'] else "—", ""),
        ("pusher CPU time per 10,000 (control-socket client, Python)",
         f"{g['pusher_cpu_s_per_10k']:.2f} s", "—"),
        ("busy replies (each followed by ready and a resend)", f"{g['busy']:.0f}", "—"),
        ("harness: virtual controllers' CPU time per 10,000 (one Python process)",
         f"{g['controllers_cpu_s_per_10k']:.2f} s", f"{b['controllers_cpu_s_per_10k']:.2f} s"),
        ("harness: Bumble central's CPU time per 10,000",
         f"{g['central_cpu_s_per_10k']:.2f} s", f"{b['central_cpu_s_per_10k']:.2f} s"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=["pusher", "bumble-peripheral"], required=True)
    parser.add_argument("--control", help="gattd control socket (pusher)")
    parser.add_argument("--transport", help="Bumble transport of controller 0 (bumble-peripheral)")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=VALUE_SIZE, help="value size in bytes (4..244)")
    parser.add_argument("--centrals", type=int, default=1, help="subscribed centrals")
    parser.add_argument("--window", type=int, default=1, help="notify requests in flight (pusher; 1: one at a time)")
    arguments = parser.parse_args()
    if arguments.role == "pusher":
        asyncio.run(pusher(arguments.control, arguments.count, arguments.size, arguments.centrals, arguments.window))
    else:
        asyncio.run(bumble_peripheral(arguments.transport, arguments.count, arguments.size, arguments.centrals))


if __name__ == "__main__":
    main()
