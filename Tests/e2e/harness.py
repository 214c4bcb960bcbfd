"""End-to-end harness: virtual controllers (subprocess), gattd (subprocess) and a Bumble central.

Used by conftest.py; the pieces are plain classes so a test can also use them directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable, TypeVar

from bumble import hci
from bumble.core import UUID, AdvertisingData, PhysicalTransport
from bumble.device import Advertisement, Connection, Device, Peer
from bumble.gatt import Characteristic
from bumble.transport import open_transport

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parent.parent
GATTD_BINARY = REPO_ROOT / ".build" / "debug" / "gattd"

T = TypeVar("T")

# HCI command opcodes the tests look for (OGF 0x08 = LE).
OPCODE_RESET = 0x0C03
OPCODE_LE_SET_ADVERTISING_PARAMETERS = 0x2006
OPCODE_LE_SET_ADVERTISING_DATA = 0x2008
OPCODE_LE_SET_SCAN_RESPONSE_DATA = 0x2009
OPCODE_LE_SET_ADVERTISING_ENABLE = 0x200A
OPCODE_LE_CREATE_CONNECTION_CANCEL = 0x200E
OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS = 0x2036
OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA = 0x2037
OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA = 0x2038
OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE = 0x2039


def run(coroutine: Awaitable[T], timeout: float = 30.0) -> T:
    """Runs one async test body with an overall timeout (no pytest-asyncio needed)."""

    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, timeout)

    return asyncio.run(bounded())


# ----------------------------------------------------------------------------------------
# Virtual controllers
# ----------------------------------------------------------------------------------------
@dataclass
class HCICommand:
    """One HCI command packet a virtual controller received (H4 indicator 0x01 stripped)."""

    time: float
    opcode: int
    parameters: bytes

    @property
    def packet(self) -> bytes:
        """The whole H4 packet as sent by the host."""
        return bytes([0x01]) + self.opcode.to_bytes(2, "little") + bytes([len(self.parameters)]) + self.parameters


@dataclass
class VirtualController:
    index: int
    port: int
    address: str
    transport: str  # for gattd: tcp:127.0.0.1:PORT
    bumble_transport: str  # for a Bumble Device: tcp-client:127.0.0.1:PORT
    commands_path: Path

    def commands(self, opcode: int | None = None) -> list[HCICommand]:
        """Every HCI command this controller received so far, oldest first."""
        result = []
        if not self.commands_path.exists():
            return result
        for line in self.commands_path.read_text().splitlines():
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line being written right now
            packet = bytes.fromhex(entry["hex"])
            if len(packet) < 4:
                continue
            command = HCICommand(entry["t"], int.from_bytes(packet[1:3], "little"), packet[4:])
            if opcode is None or command.opcode == opcode:
                result.append(command)
        return result

    def last_command(self, opcode: int) -> HCICommand | None:
        found = self.commands(opcode)
        return found[-1] if found else None

    async def wait_for_command(self, opcode: int, timeout: float = 10.0, after: float = 0.0,
                               parameters: bytes | None = None) -> HCICommand:
        """The latest command `opcode` received at or after `after` (a `time.time()` taken before
        the action), with exactly `parameters` if given; waits up to `timeout` seconds for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for command in reversed(self.commands(opcode)):
                if command.time >= after and (parameters is None or command.parameters == parameters):
                    return command
            await asyncio.sleep(0.05)
        wanted = f"0x{opcode:04X}" + (f" ({parameters.hex()})" if parameters is not None else "")
        raise TimeoutError(f"controller {self.index} received no command {wanted} in {timeout} s")


# The two independent link layers the suite runs on: Bumble's LocalLink (virtual_controllers.py,
# patched where it is wrong) and Android's rootcanal (rootcanal_controllers.py, stock).
LINK_LAYERS = ("bumble", "rootcanal")
LINK_LAYER_SCRIPTS = {"bumble": "virtual_controllers.py", "rootcanal": "rootcanal_controllers.py"}


def default_link_layer() -> str:
    """The link layer of tests that do not choose one: `bumble`, or `$GATTD_E2E_LINK_LAYER`."""
    value = os.environ.get("GATTD_E2E_LINK_LAYER", "bumble")
    if value not in LINK_LAYERS:
        raise ValueError(f"GATTD_E2E_LINK_LAYER={value!r}: expected one of {', '.join(LINK_LAYERS)}")
    return value


class VirtualControllers:
    """`count` controllers on one simulated air, run in a subprocess: a Bumble LocalLink
    (virtual_controllers.py) or rootcanal (rootcanal_controllers.py), per `link_layer`. Both
    scripts write the same ready file and command logs, so everything below works on both."""

    def __init__(self, count: int, work_dir: Path, legacy_only: bool = False, acl_buffer_size: int = 27,
                 batch_completions: bool = False, link_layer: str = "bumble") -> None:
        if link_layer not in LINK_LAYERS:
            raise ValueError(f"unknown link layer {link_layer!r}")
        if link_layer != "bumble" and (acl_buffer_size != 27 or batch_completions):
            raise ValueError("acl_buffer_size and batch_completions exist only on the Bumble link layer")
        self.link_layer = link_layer
        self.count = count
        self.acl_buffer_size = acl_buffer_size
        self.batch_completions = batch_completions
        self.work_dir = work_dir
        self.legacy_only = legacy_only
        self.log_path = work_dir / f"{link_layer}-controllers.log"
        self.process: subprocess.Popen | None = None
        self.controllers: list[VirtualController] = []

    def start(self, timeout: float = 20.0) -> "VirtualControllers":
        ready_file = self.work_dir / "controllers.json"
        command = [
            sys.executable, str(E2E_DIR / LINK_LAYER_SCRIPTS[self.link_layer]),
            "--count", str(self.count),
            "--ready-file", str(ready_file),
            "--log-dir", str(self.work_dir),
        ]
        if self.legacy_only:
            command.append("--legacy-only")
        if self.acl_buffer_size != 27:
            command += ["--acl-buffer-size", str(self.acl_buffer_size)]
        if self.batch_completions:
            command.append("--batch-completions")
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not ready_file.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.link_layer} controllers exited with {self.process.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self.link_layer} controllers not ready after {timeout} s:\n{self.log()}")
            time.sleep(0.05)
        ready = json.loads(ready_file.read_text())
        self.controllers = [
            VirtualController(
                index=entry["index"],
                port=entry["port"],
                address=entry["address"],
                transport=entry["transport"],
                bumble_transport=entry["bumble_transport"],
                commands_path=Path(entry["commands"]),
            )
            for entry in ready["controllers"]
        ]
        return self

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __getitem__(self, index: int) -> VirtualController:
        return self.controllers[index]

    def __len__(self) -> int:
        return len(self.controllers)


# ----------------------------------------------------------------------------------------
# gattd
# ----------------------------------------------------------------------------------------
def require_built(binary: Path) -> Path:
    """`binary` (a debug build product), or an error naming it and how to build it. The suite
    fails, never skips, when the binaries it tests are missing."""
    if not binary.is_file():
        raise FileNotFoundError(
            f"{binary} does not exist: build it first (`swift build` in {REPO_ROOT}; `scripts/test` "
            f"builds and runs everything). The end-to-end tests run the debug build.")
    return binary


GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"


async def gattctl(socket: Path, *args: str) -> tuple[int, str, str]:
    """Runs `gattctl --socket SOCKET ARGS...`; its exit status, stdout and stderr."""
    process = await asyncio.create_subprocess_exec(
        str(require_built(GATTCTL)), "--socket", str(socket), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 30)
    return process.returncode, out.decode(), err.decode()


class GattdProcess:
    """gattd run as `gattd --config CONFIG --transport TRANSPORT [extra...]`."""

    # The last line gattd logs while starting (the socket is bound, its mode and group set).
    READY_LINE = "control socket listening on "

    def __init__(self, config: Path, transport: str, work_dir: Path, extra_args: list[str] | None = None,
                 name: str = "gattd") -> None:
        self.config = config
        self.transport = transport
        self.work_dir = work_dir
        self.extra_args = extra_args or []
        self.log_path = work_dir / f"{name}.log"
        self.process: subprocess.Popen | None = None

    @property
    def command(self) -> list[str]:
        return [str(GATTD_BINARY), "--config", str(self.config), "--transport", self.transport, *self.extra_args]

    def start(self, timeout: float = 10.0) -> "GattdProcess":
        """Starts gattd and waits until it logs that its control socket is listening. Raises,
        with gattd's log, if it exits first or is not ready within `timeout` seconds."""
        require_built(GATTD_BINARY)
        log_start = len(self.log())
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            self.command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.work_dir
        )
        log.close()
        deadline = time.monotonic() + timeout
        while self.READY_LINE not in self.log()[log_start:]:
            if self.process.poll() is not None:
                raise RuntimeError(f"gattd exited with {self.process.returncode} at start: {' '.join(self.command)}\n"
                                   f"{self.log()[log_start:]}")
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"gattd did not log {self.READY_LINE!r} within {timeout} s: "
                                   f"{' '.join(self.command)}\n{self.log()[log_start:]}")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 5.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL, for crash/restart tests."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def wait_for_log(self, pattern: str, timeout: float = 5.0, start: int = 0) -> re.Match:
        """See `wait_for_log`."""
        return await wait_for_log(self, pattern, timeout, start)


async def wait_for_log(process: GattdProcess, pattern: str, timeout: float = 5.0, start: int = 0) -> re.Match:
    """Waits until gattd's log, from character `start` (`len(process.log())` taken before the
    action), matches the regex `pattern` (multi-line: `^`/`$` match at line ends); returns the
    match. Fails after `timeout` seconds with the log in the message."""
    deadline = time.monotonic() + timeout
    while True:
        match = re.search(pattern, process.log()[start:], re.MULTILINE)
        if match:
            return match
        if time.monotonic() > deadline:
            raise AssertionError(f"gattd log has no match for {pattern!r} after {timeout} s:\n{process.log()[start:]}")
        await asyncio.sleep(0.05)


# ----------------------------------------------------------------------------------------
# Bumble hosts (central and test peripherals)
# ----------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def bumble_device(controller: VirtualController, name: str = "central",
                        address: str = "C0:00:00:00:00:01") -> AsyncIterator[Device]:
    """A powered-on Bumble Device attached to `controller` (random static `address`)."""
    async with await open_transport(controller.bumble_transport) as (source, sink):
        device = Device.with_hci(name, hci.Address(address), source, sink)
        await device.power_on()
        try:
            yield device
        finally:
            with contextlib.suppress(Exception):
                await device.power_off()


async def scan_for(device: Device, matches: Callable[[Advertisement], bool], timeout: float = 10.0,
                   active: bool = True, legacy: bool = False) -> Advertisement:
    """Scans until an advertisement satisfies `matches`; returns it.

    With active scanning Bumble merges a scannable advertisement with its scan response, so
    `advertisement.data` holds both (`is_scan_response` is then True).
    """
    loop = asyncio.get_running_loop()
    found: asyncio.Future[Advertisement] = loop.create_future()

    def on_advertisement(advertisement: Advertisement) -> None:
        if not found.done() and matches(advertisement):
            found.set_result(advertisement)

    device.on("advertisement", on_advertisement)
    await device.start_scanning(active=active, legacy=legacy, filter_duplicates=False)
    try:
        return await asyncio.wait_for(found, timeout)
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()


def from_address(address: str | hci.Address) -> Callable[[Advertisement], bool]:
    text = str(address).split("/")[0].upper()
    return lambda advertisement: str(advertisement.address).split("/")[0].upper() == text


def with_scan_response(inner: Callable[[Advertisement], bool]) -> Callable[[Advertisement], bool]:
    return lambda advertisement: inner(advertisement) and advertisement.is_scan_response


def named(name: str) -> Callable[[Advertisement], bool]:
    def matches(advertisement: Advertisement) -> bool:
        local_name = advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) or \
            advertisement.data.get(AdvertisingData.SHORTENED_LOCAL_NAME)
        return local_name == name
    return matches


async def connect(device: Device, address: str | hci.Address, timeout: float = 10.0) -> Peer:
    """Connects over LE and returns a Peer with services and characteristics discovered."""
    connection: Connection = await device.connect(address, transport=PhysicalTransport.LE, timeout=timeout)
    peer = Peer(connection)
    await peer.discover_services()
    for service in peer.services:
        await service.discover_characteristics()
        for characteristic in service.characteristics:
            await characteristic.discover_descriptors()
    return peer


def find_characteristic(peer: Peer, uuid: str | UUID) -> Characteristic:
    wanted = uuid if isinstance(uuid, UUID) else UUID(uuid)
    for service in peer.services:
        for characteristic in service.characteristics:
            if characteristic.uuid == wanted:
                return characteristic
    raise LookupError(f"no characteristic {wanted} on the peer")


async def read(peer: Peer, uuid: str | UUID) -> bytes:
    return bytes(await find_characteristic(peer, uuid).read_value())


async def write(peer: Peer, uuid: str | UUID, value: bytes, with_response: bool = True) -> None:
    await find_characteristic(peer, uuid).write_value(value, with_response=with_response)


async def subscribe(peer: Peer, uuid: str | UUID, prefer_notify: bool = True) -> asyncio.Queue[bytes]:
    """Subscribes to notifications/indications; values arrive on the returned queue."""
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    await find_characteristic(peer, uuid).subscribe(lambda value: queue.put_nowait(bytes(value)),
                                                    prefer_notify=prefer_notify)
    return queue


def record_updates(peer: Peer | Connection, received: list[tuple[int, bytes]] | None = None) -> list[tuple[int, bytes]]:
    """Every notification and indication `peer`'s GATT client receives from now on, as
    (handle, value), whether or not a subscriber is registered, appended to `received` (a new
    list by default). Bumble drops updates for handles nobody subscribed to (and `unsubscribe`
    removes the subscriber), so a test that asserts gattd sent *nothing* to a central must
    look here, not at a subscription queue. To hear what gattd sends as a connection comes
    up, install it from the connection event (`gatt_central.connect_recording`)."""
    if received is None:
        received = []
    client = peer.gatt_client
    for name in ("on_att_handle_value_notification", "on_att_handle_value_indication"):
        original = getattr(client, name)

        def recording(pdu, original=original):
            received.append((pdu.attribute_handle, bytes(pdu.attribute_value)))
            original(pdu)

        setattr(client, name, recording)
    return received


async def att_round_trip(peer: Peer, handle: int = 0x0001) -> None:
    """A barrier on one connection: reads `handle` (default the GAP service declaration) and
    waits for the answer. gattd sends a connection's ATT PDUs in order (one queue per
    bearer: responses, notifications and indications alike) and the virtual link delivers
    them in order, so once this returns the central has received every notification or
    indication gattd queued for it before the read. Use it before asserting that nothing
    (more) arrived, instead of sleeping."""
    await peer.gatt_client.read_value(handle, no_long_read=True)


def ad_structures(data: bytes) -> list[tuple[int, bytes]]:
    """Splits advertising data into (AD type, value) pairs (Core Spec Supplement Part A §1)."""
    result = []
    index = 0
    while index < len(data):
        length = data[index]
        if length == 0:
            break
        result.append((data[index + 1], bytes(data[index + 2:index + 1 + length])))
        index += 1 + length
    return result


def process_is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def both_link_layers(test):
    """Runs a test (using the `controllers` fixture) on Bumble's link and on rootcanal."""
    import pytest  # only the tests need it; harness.py is also imported by scripts
    return pytest.mark.parametrize("link_layer", LINK_LAYERS)(test)
