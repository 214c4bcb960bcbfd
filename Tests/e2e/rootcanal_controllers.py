#!/usr/bin/env python3
"""N controllers of Android's rootcanal (PyPI `rootcanal`) on one simulated air, each served
as H4 over TCP on a port of its own: the second, independent link layer of the e2e suite.

rootcanal serves one HCI port; every TCP connection to it becomes a new controller on its
air, with an address it picks (DA:4C:10:DE:17:NN, the lowest one unused). The tests want
what virtual_controllers.py gives them: controller N at a fixed public address
(F0:F0:F0:F0:F0:0N), on its own port, its HCI commands recorded. So this script

* starts the rootcanal binary on free ports (it logs them) and keeps its log in ours;
* listens on one port per controller (127.0.0.1, free ports); a host (gattd or a Bumble
  Device) connecting there gets a fresh rootcanal controller: the script connects to
  rootcanal's HCI port, finds the new device through rootcanal's test channel (`list`)
  and gives it the address F0:F0:F0:F0:F0:0N (`set_device_address`) before the first byte
  of the host is forwarded, so the host reads that address with Read BD_ADDR;
* forwards the bytes both ways (one event corrected, see `corrected`), and records every
  HCI command the host sends,
  byte for byte, in `<log-dir>/controller-<N>-commands.jsonl` ({"t": seconds, "hex": "01..."}
  per line), as virtual_controllers.py does;
* a new host connection replaces the old one (like gattd restarting on a UART): the old
  rootcanal controller is closed (rootcanal removes it from the air) before the new one is
  made.

rootcanal's link layer, timing and command handling are untouched: only the plumbing is
ours, and the status of one event where rootcanal contradicts the specification
(`corrected`). It runs in "strict" mode (its default): it aborts on host behaviour it cannot model.
If rootcanal exits, this script logs its status, closes every host connection and exits 1.
rootcanal dies with this script (PR_SET_PDEATHSIG), even on SIGKILL.

Usage:
    python rootcanal_controllers.py --count 2 --ready-file ready.json --log-dir logs [--legacy-only]

`--legacy-only` configures rootcanal's controllers without LE Extended (and Periodic)
Advertising, so hosts use the legacy advertising and scanning commands.

When every controller listens, the script writes the ready file (JSON, written atomically)
in virtual_controllers.py's format, plus the rootcanal process and ports:
    {"pid": 123, "rootcanal": {"pid": 124, "hci_port": 40000, "test_port": 40001},
     "controllers": [{"index": 0, "port": 40002, "address": "F0:F0:F0:F0:F0:00",
                      "transport": "tcp:127.0.0.1:40002",
                      "bumble_transport": "tcp-client:127.0.0.1:40002",
                      "commands": "logs/controller-0-commands.jsonl"}, ...]}
and prints the same JSON on one line to stdout. It runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import logging
import os
import re
import signal
import socket
import sys
import time

from rootcanal.binaries import get_package_binary_resource_path

from virtual_controllers import H4Parser

logger = logging.getLogger("rootcanal_controllers")

# rootcanal's controller configuration (its config.proto, text format): one HCI server on a
# free port, controllers without extended advertising.
LEGACY_ONLY_CONFIGURATION = (
    "tcp_server { tcp_port: 0 configuration { features { "
    "le_extended_advertising: false le_periodic_advertising: false } } }"
)
DEVICE_LINE = re.compile(r"^\s*(\d+):hci_device@([0-9a-fA-F:]{17})\s*$", re.MULTILINE)
STEP_TIMEOUT_S = 10.0


async def connect_upstream(port: int) -> socket.socket:
    """A non-blocking TCP connection to rootcanal's HCI port (TCP_NODELAY, quick ACKs)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    quick_ack(sock)
    return sock


def die_with_parent() -> None:
    """Runs in the rootcanal child before exec: SIGKILL it when this script dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class TestChannel:
    """rootcanal's test channel: [len][name][argc]([len][arg])* in, [u32 len][text] out.

    rootcanal answers every connection with "RegisterSendResponse called" first, then one
    response per command, in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.lock = asyncio.Lock()

    @classmethod
    async def open(cls, port: int) -> "TestChannel":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        channel = cls(reader, writer)
        greeting = await channel.response()
        if "RegisterSendResponse" not in greeting:
            raise RuntimeError(f"unexpected test channel greeting {greeting!r}")
        return channel

    async def response(self) -> str:
        size = int.from_bytes(await asyncio.wait_for(self.reader.readexactly(4), STEP_TIMEOUT_S), "little")
        return (await asyncio.wait_for(self.reader.readexactly(size), STEP_TIMEOUT_S)).decode(errors="replace")

    async def command(self, name: str, *arguments: str) -> str:
        message = bytes([len(name)]) + name.encode() + bytes([len(arguments)])
        for argument in arguments:
            message += bytes([len(argument)]) + argument.encode()
        async with self.lock:
            self.writer.write(message)
            await self.writer.drain()
            return await self.response()

    async def hci_devices(self) -> dict[int, str]:
        """rootcanal's HCI controllers now: device id → address."""
        return {int(identifier): address.upper()
                for identifier, address in DEVICE_LINE.findall(await self.command("list"))}


class RootcanalProcess:
    """The rootcanal binary on free ports; its log lines go to our stdout."""

    def __init__(self, work_dir: str, legacy_only: bool) -> None:
        self.work_dir = work_dir
        self.legacy_only = legacy_only
        self.process: asyncio.subprocess.Process | None = None
        self.hci_port = 0
        self.test_port = 0
        self.relay: asyncio.Task | None = None

    async def start(self) -> None:
        binary = get_package_binary_resource_path("rootcanal")
        arguments = ["-test_port=0", "-hci_port=0", "-link_port=0", "-link_ble_port=0"]
        if self.legacy_only:
            arguments.append(f"-configuration={LEGACY_ONLY_CONFIGURATION}")
        logger.info("starting %s %s", binary, " ".join(arguments))
        self.process = await asyncio.create_subprocess_exec(
            binary, *arguments, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, cwd=self.work_dir, preexec_fn=die_with_parent)
        # rootcanal logs "Listening on: PORT (fd)" for its test, link and LE link servers (in
        # that order), then "Opening an HCI with port 0" and the HCI server's "Listening on".
        ports: list[int] = []
        hci_next = False
        while True:
            line = await asyncio.wait_for(self.process.stdout.readline(), STEP_TIMEOUT_S)
            if not line:
                raise RuntimeError(f"rootcanal exited while starting (status {await self.process.wait()})")
            text = line.decode(errors="replace")
            self.echo(text)
            listening = re.search(r"Listening on: (\d+)", text)
            if listening and hci_next:
                self.hci_port = int(listening.group(1))
            elif listening:
                ports.append(int(listening.group(1)))
            if "Opening an HCI with port" in text:
                hci_next = True
            if "initialize: Finished" in text:
                break
        if len(ports) != 3 or not self.hci_port:
            raise RuntimeError(f"cannot tell rootcanal's ports from its log (servers {ports}, HCI {self.hci_port})")
        self.test_port = ports[0]
        self.relay = asyncio.create_task(self.relay_log())

    @staticmethod
    def echo(text: str) -> None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()

    async def relay_log(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.echo(line.decode(errors="replace"))

    async def wait(self) -> int:
        assert self.process is not None
        status = await self.process.wait()
        if self.relay:
            await self.relay  # the last lines (an abort message) before we report
        return status

    async def stop(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except asyncio.TimeoutError:
            self.process.kill()
            await self.process.wait()


class HostConnection:
    """One host attached to controller N: its socket and the rootcanal controller behind it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.upstream: socket.socket | None = None  # to rootcanal's HCI port
        self.device_id: int | None = None
        self.tasks: list[asyncio.Task] = []

    async def close(self) -> None:
        """Stops both directions, then closes both sockets. The order matters: a cancelled
        `sock_recv` unregisters its file descriptor from the event loop only once it has
        finished; a socket closed before that leaves a stale registration, and the next
        socket given the same descriptor fails in `sock_connect`."""
        current = asyncio.current_task()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*(task for task in self.tasks if task is not current), return_exceptions=True)
        self.writer.close()
        if self.upstream:
            self.upstream.close()


class ControllerPort:
    """Controller N: a TCP server for hosts, each host a fresh rootcanal controller at N's address."""

    def __init__(self, index: int, address: str, rootcanal: RootcanalProcess, channel: TestChannel,
                 setup_lock: asyncio.Lock, command_log: str) -> None:
        self.index = index
        self.address = address
        self.rootcanal = rootcanal
        self.channel = channel
        self.setup_lock = setup_lock  # one new rootcanal controller at a time: the new id is ours
        self.command_log = open(command_log, "a", buffering=1)
        self.host: HostConnection | None = None
        self.server: asyncio.base_events.Server | None = None
        self.closing = False  # set at shutdown: a host attaching then is not an error

    async def listen(self, host: str) -> int:
        self.server = await asyncio.start_server(self.on_host, host, 0)
        return self.server.sockets[0].getsockname()[1]

    async def on_host(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = HostConnection(reader, writer)
        try:
            async with self.setup_lock:
                await self.replace_host(connection)
        except Exception:
            if self.closing:
                logger.info("[C%d] shutting down while a host was attaching; closed it", self.index)
            else:
                logger.exception("[C%d] cannot attach the host to rootcanal", self.index)
            await connection.close()
            return
        connection.tasks = [asyncio.create_task(self.host_to_controller(connection)),
                            asyncio.create_task(self.controller_to_host(connection))]
        # Either side closing (or a replacement cancelling both) ends the pair.
        await asyncio.wait(connection.tasks, return_when=asyncio.FIRST_COMPLETED)
        await connection.close()
        if self.host is connection:
            self.host = None
            logger.info("[C%d] host disconnected (rootcanal device %s closed)", self.index, connection.device_id)

    async def replace_host(self, connection: HostConnection) -> None:
        old = self.host
        if old is not None:
            logger.info("[C%d] new host connection replaces the old one", self.index)
            await old.close()
            self.host = None
            # Wait until rootcanal has removed the old controller, so no two share the address.
            await self.wait_for_devices(lambda devices: old.device_id not in devices, "the old device to go")
        before = await self.channel.hci_devices()
        connection.upstream = await connect_upstream(self.rootcanal.hci_port)
        devices = await self.wait_for_devices(lambda devices: set(devices) - set(before), "a new device")
        connection.device_id = max(set(devices) - set(before))
        reply = await self.channel.command("set_device_address", str(connection.device_id), self.address)
        devices = await self.channel.hci_devices()
        if devices.get(connection.device_id) != self.address:
            raise RuntimeError(f"set_device_address answered {reply!r}; devices now {devices}")
        self.host = connection
        logger.info("[C%d] host connected: rootcanal device %d at %s", self.index, connection.device_id,
                    self.address)

    async def wait_for_devices(self, condition, what: str) -> dict[int, str]:
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while True:
            devices = await self.channel.hci_devices()
            if condition(devices):
                return devices
            if time.monotonic() > deadline:
                raise TimeoutError(f"rootcanal: waited {STEP_TIMEOUT_S} s for {what}; devices {devices}")
            await asyncio.sleep(0.01)

    async def host_to_controller(self, connection: HostConnection) -> None:
        loop = asyncio.get_running_loop()
        parser = H4Parser()
        while data := await connection.reader.read(65536):
            try:
                packets = parser.feed(data)
            except ValueError as error:
                logger.error("[C%d] %s; closing the host connection", self.index, error)
                return
            for packet in packets:
                if packet[0] == 0x01:
                    self.command_log.write(json.dumps({"t": time.time(), "hex": packet.hex()}) + "\n")
            await loop.sock_sendall(connection.upstream, data)

    async def controller_to_host(self, connection: HostConnection) -> None:
        loop = asyncio.get_running_loop()
        parser = H4Parser()
        while data := await loop.sock_recv(connection.upstream, 65536):
            # rootcanal writes each H4 packet in two send()s (indicator, then the rest) without
            # TCP_NODELAY: Nagle holds the rest until the indicator is acknowledged, and a
            # delayed ACK costs 40 ms per event. Acknowledging at once keeps events prompt.
            quick_ack(connection.upstream)
            connection.writer.write(b"".join(corrected(packet) for packet in parser.feed(data)))
            await connection.writer.drain()


def corrected(packet: bytes) -> bytes:
    """rootcanal's events, with its one known deviation from the specification fixed.

    A peripheral's host that rejects encryption (LE Long Term Key Request Negative Reply)
    makes its Link Layer answer LL_REJECT_EXT_IND with PIN or Key Missing (0x06), and the
    central's controller reports that in Encryption Change (Vol 6 Part B §5.1.3.1). rootcanal
    1.10.0 reports Authentication Failure (0x05), its code for any rejection (it compares no
    keys, so this is the only Encryption Change it fails). Self-test:
    test_harness.py::test_rejected_encryption_is_pin_or_key_missing."""
    ENCRYPTION_CHANGE, AUTHENTICATION_FAILURE, PIN_OR_KEY_MISSING = 0x08, 0x05, 0x06
    if len(packet) == 7 and packet[0] == 0x04 and packet[1] == ENCRYPTION_CHANGE and packet[3] == AUTHENTICATION_FAILURE:
        return packet[:3] + bytes([PIN_OR_KEY_MISSING]) + packet[4:]
    return packet


def quick_ack(sock: socket.socket) -> None:
    """TCP_QUICKACK (Linux; the kernel clears it again by itself, so set it after each read)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


async def run(count: int, host: str, ready_file: str | None, log_dir: str, legacy_only: bool) -> int:
    os.makedirs(log_dir, exist_ok=True)
    loop = asyncio.get_running_loop()
    rootcanal = RootcanalProcess(log_dir, legacy_only)
    stop = loop.create_future()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, lambda: stop.done() or stop.set_result(None))
    try:
        await rootcanal.start()
        channel = await TestChannel.open(rootcanal.test_port)
        setup_lock = asyncio.Lock()
        ports: list[ControllerPort] = []
        entries = []
        for index in range(count):
            address = f"F0:F0:F0:F0:F0:{index:02X}"
            command_log = os.path.join(log_dir, f"controller-{index}-commands.jsonl")
            port = ControllerPort(index, address, rootcanal, channel, setup_lock, command_log)
            number = await port.listen(host)
            ports.append(port)
            entries.append({
                "index": index,
                "port": number,
                "address": address,
                "transport": f"tcp:{host}:{number}",
                "bumble_transport": f"tcp-client:{host}:{number}",
                "commands": command_log,
            })
        ready = json.dumps({"pid": os.getpid(),
                            "rootcanal": {"pid": rootcanal.process.pid, "hci_port": rootcanal.hci_port,
                                          "test_port": rootcanal.test_port},
                            "controllers": entries})
        if ready_file:
            temporary = ready_file + ".tmp"
            with open(temporary, "w") as handle:
                handle.write(ready)
            os.replace(temporary, ready_file)
        print(ready, flush=True)

        exited = asyncio.ensure_future(rootcanal.wait())
        await asyncio.wait([stop, exited], return_when=asyncio.FIRST_COMPLETED)
        for port in ports:
            port.closing = True
            if port.server:
                port.server.close()
            if port.host:
                await port.host.close()
        if exited.done():
            logger.error("rootcanal exited with status %s; host connections closed", exited.result())
            return 1
        return 0
    finally:
        await rootcanal.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2, help="number of controllers (default 2)")
    parser.add_argument("--host", default="127.0.0.1", help="address our controller ports listen on")
    parser.add_argument("--ready-file", help="write the controller list (JSON) here when listening")
    parser.add_argument("--log-dir", default=".", help="where the command logs go (and rootcanal's cwd)")
    parser.add_argument("--legacy-only", action="store_true",
                        help="controllers without extended advertising (hosts use the legacy commands)")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stdout)
    sys.exit(asyncio.run(run(arguments.count, arguments.host, arguments.ready_file, arguments.log_dir,
                             arguments.legacy_only)))


if __name__ == "__main__":
    main()
