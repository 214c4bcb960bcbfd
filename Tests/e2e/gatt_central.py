"""Helpers for the gattd acceptance suite (test_advertising.py … test_connections.py).

* `module_link(config, controller_count)` — a pytest fixture factory: one set of virtual
  controllers and one gattd for a whole test module (tests that do not interfere share it).
* `central(link, ...)` — an async context manager: a Bumble central on `link[index]`,
  connected to gattd (direct connection to gattd's public address), yields the `Peer`.
* `raw_request(peer, pdu_bytes)` — sends any ATT request bytes (malformed ones too) and
  returns Bumble's parsed response PDU; `att_error(...)` asserts an Error Response.
* `check_config_table(path)` — parses `gattd --check-config`'s attribute table.
* `ControllerProcess` — virtual_controllers.py started on fixed ports, so it can be killed
  and restarted on the same ports (gattd reconnects to the same transport).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

from bumble import att, hci
from bumble.core import UUID, PhysicalTransport
from bumble.device import Device, Peer

from harness import (
    E2E_DIR,
    GATTD_BINARY,
    LINK_LAYER_SCRIPTS,
    REPO_ROOT,
    GattdProcess,
    VirtualController,
    VirtualControllers,
    bumble_device,
    default_link_layer,
    record_updates,
    require_built,
    wait_for_log,  # noqa: F401 (re-exported: the tests import it from here)
)

CONFIG_DIR = REPO_ROOT / "config" / "test"
FULL_CONFIG = CONFIG_DIR / "gatt-full.json"

# HCI opcodes not in harness.py.
OPCODE_LE_SET_DATA_LENGTH = 0x2022
OPCODE_LE_SET_PHY = 0x2032


# ----------------------------------------------------------------------------------------
# gattd's attribute table (`gattd --check-config`)
# ----------------------------------------------------------------------------------------
DECLARATION_TYPES = {"Primary Service": "2800", "Secondary Service": "2801", "Include": "2802",
                     "Characteristic": "2803"}


@dataclass
class TableRow:
    handle: int
    kind: str  # "Primary Service", "Characteristic Value", "CCCD", ...
    uuid: str  # "1800" or a 128-bit UUID, as printed (upper-cased)
    properties: list[str]
    permissions: list[str]
    notes: str
    value_hex: str  # hex as printed (a prefix when truncated)
    value_length: int | None  # the full length when the table truncated the value
    per_connection: bool

    @property
    def value(self) -> bytes:
        return bytes.fromhex(self.value_hex)

    @property
    def bumble_uuid(self) -> UUID:
        """The UUID the row declares or carries (the UUID column)."""
        return UUID(self.uuid)

    @property
    def attribute_type(self) -> UUID:
        """The attribute's type: the declaration UUID for declarations, else the UUID column."""
        return UUID(DECLARATION_TYPES.get(self.kind, self.uuid))


def check_config_table(config: Path) -> list[TableRow]:
    """Runs `gattd --check-config CONFIG` and parses its attribute table."""
    output = subprocess.run([str(require_built(GATTD_BINARY)), "--check-config", str(config)], capture_output=True, text=True,
                            check=True, timeout=30).stdout
    lines = output.splitlines()
    dashes_index = next(i for i, line in enumerate(lines) if line.startswith("------"))
    spans = [(match.start(), match.end()) for match in re.finditer(r"-+", lines[dashes_index])]
    rows = []
    for line in lines[dashes_index + 1:]:
        if not line.strip():
            break  # the table ends; the advertising payloads follow
        cells = [line[start:(spans[i + 1][0] if i + 1 < len(spans) else len(line))].strip()
                 for i, (start, _) in enumerate(spans)]
        handle, kind, uuid, properties, permissions, notes, value = cells
        value_length = None
        per_connection = value.endswith("(per connection)")
        if value == "(empty)":
            value_hex = ""
        else:
            value_hex = value.split()[0]
            truncated = re.search(r"\.\.\. \((\d+) bytes\)$", value)
            if truncated:
                value_hex = value_hex.removesuffix("...")
                value_length = int(truncated.group(1))
        rows.append(TableRow(
            handle=int(handle, 16), kind=kind, uuid=uuid.split()[0].upper(),
            properties=[p for p in properties.split(",") if p], permissions=[p for p in permissions.split(",") if p],
            notes=notes, value_hex=value_hex, value_length=value_length, per_connection=per_connection,
        ))
    return rows


@functools.cache
def full_table() -> list[TableRow]:
    """The table of config/test/gatt-full.json, read once, when a test first needs it (so a
    missing gattd fails each test that needs it rather than the collection of the module)."""
    return check_config_table(FULL_CONFIG)


# ----------------------------------------------------------------------------------------
# One link + gattd per module
# ----------------------------------------------------------------------------------------
class Link:
    """Virtual controllers plus the gattd on controller 0."""

    def __init__(self, controllers: VirtualControllers, gattd: GattdProcess) -> None:
        self.controllers = controllers
        self.gattd = gattd

    def __getitem__(self, index: int) -> VirtualController:
        return self.controllers[index]

    @property
    def gattd_address(self) -> hci.Address:
        return hci.Address(self.controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)


def gattd_arguments(work_dir: Path) -> list[str]:
    state_dir = work_dir / "state"
    state_dir.mkdir(exist_ok=True)
    return ["--control", str(work_dir / "control.sock"), "--state-dir", str(state_dir), "--log-level", "debug"]


def start_gattd(config: Path, transport: str, work_dir: Path, name: str = "gattd") -> GattdProcess:
    """gattd on `transport`, started and listening (see GattdProcess.start)."""
    return GattdProcess(config, transport, work_dir, gattd_arguments(work_dir), name=name).start()


def module_link(config: Path | str, controller_count: int = 2, link_layers: tuple[str, ...] | None = None):
    """A module-scoped fixture: controllers + gattd serving `config` (a file, or the JSON
    text of one), shared by the module.
    With `link_layers` (e.g. harness.LINK_LAYERS) the fixture is parametrized: every test of
    the module runs once per link layer (ids `[bumble]`, `[rootcanal]`); without, the default
    link layer (harness.default_link_layer())."""

    def make(work_dir: Path, link_layer: str) -> Iterator[Link]:
        path = config
        if isinstance(config, str):
            path = work_dir / "gattd.json"
            path.write_text(config)
        controllers = VirtualControllers(controller_count, work_dir, link_layer=link_layer).start()
        try:
            gattd = start_gattd(path, controllers[0].transport, work_dir)
        except BaseException:
            controllers.stop()
            raise
        yield Link(controllers, gattd)
        gattd.stop()
        controllers.stop()

    if link_layers is None:
        @pytest.fixture(scope="module")
        def link(tmp_path_factory) -> Iterator[Link]:
            yield from make(tmp_path_factory.mktemp("link"), default_link_layer())
    else:
        @pytest.fixture(scope="module", params=list(link_layers))
        def link(request, tmp_path_factory) -> Iterator[Link]:
            yield from make(tmp_path_factory.mktemp(f"link-{request.param}"), request.param)

    return link


@pytest.fixture
def dump_link_logs(request):
    """Use with a module link: prints gattd's and the controllers' logs when the test failed."""
    yield
    failed = any(getattr(getattr(request.node, f"report_{phase}", None), "failed", False)
                 for phase in ("setup", "call"))
    if failed and "link" in request.fixturenames:
        link: Link = request.getfixturevalue("link")
        for title, text in (("gattd log", link.gattd.log()),
                            (f"{link.controllers.link_layer} controllers log", link.controllers.log())):
            print(f"\n===== {title} =====\n{text[-20000:]}\n===== end of {title} =====")


# ----------------------------------------------------------------------------------------
# A Bumble central connected to gattd
# ----------------------------------------------------------------------------------------
def central_device(controller: VirtualController, address: str = "C0:00:00:00:00:01",
                   name: str = "central") -> contextlib.AbstractAsyncContextManager[Device]:
    """A powered-on Bumble central on `controller` (harness.bumble_device, address first)."""
    return bumble_device(controller, name=name, address=address)


async def connect_peer(device: Device, address: hci.Address, timeout: float = 10.0) -> Peer:
    connection = await device.connect(address, transport=PhysicalTransport.LE, timeout=timeout)
    return Peer(connection)


async def connect_recording(device: Device, address: hci.Address,
                            timeout: float = 10.0) -> tuple[Peer, list[tuple[int, bytes]]]:
    """`connect_peer`, and every notification and indication gattd sends on the connection
    (`record_updates`), recorded from the connection event on: what gattd sends as the link
    comes up, before `device.connect` returns, is not missed."""
    received: list[tuple[int, bytes]] = []

    def on_connection(connection) -> None:
        record_updates(connection, received)

    device.on("connection", on_connection)
    try:
        peer = await connect_peer(device, address, timeout)
    finally:
        device.remove_listener("connection", on_connection)
    return peer, received


@contextlib.asynccontextmanager
async def central(link: Link, index: int = 1, address: str = "C0:00:00:00:00:01",
                  timeout: float = 10.0) -> AsyncIterator[Peer]:
    """A central on `link[index]` connected to gattd; disconnects on exit."""
    async with central_device(link[index], address) as device:
        peer = await connect_peer(device, link.gattd_address, timeout)
        try:
            yield peer
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(peer.connection.disconnect(), 5)


async def discover_everything(peer: Peer) -> None:
    await peer.discover_services()
    for service in peer.services:
        await service.discover_characteristics()
        for characteristic in service.characteristics:
            await characteristic.discover_descriptors()


# ----------------------------------------------------------------------------------------
# Raw ATT
# ----------------------------------------------------------------------------------------
def raw_pdu(data: bytes) -> att.ATT_PDU:
    """An ATT PDU object that serializes to exactly `data` (may be malformed)."""
    pdu = att.ATT_PDU()
    pdu.op_code = data[0]
    try:
        pdu.name = att.Opcode(data[0]).name
    except ValueError:
        pdu.name = f"ATT_UNKNOWN_0x{data[0]:02X}_REQUEST"
    pdu.payload = bytes(data[1:])
    return pdu


async def raw_request(peer: Peer, data: bytes | att.ATT_PDU) -> att.ATT_PDU:
    """Sends a request (bytes or a Bumble PDU) and returns the response PDU."""
    pdu = data if isinstance(data, att.ATT_PDU) else raw_pdu(data)
    return await peer.gatt_client.send_request(pdu)


def att_error(response: att.ATT_PDU, request_opcode: int, handle: int, code: int) -> None:
    """Asserts `response` is ATT_ERROR_RSP (request opcode, handle, error code)."""
    assert response.op_code == att.Opcode.ATT_ERROR_RESPONSE, f"expected an error response, got {response}"
    assert (int(response.request_opcode_in_error), response.attribute_handle_in_error, int(response.error_code)) \
        == (request_opcode, handle, code), str(response)


async def write_raw_command(peer: Peer, data: bytes) -> None:
    peer.gatt_client.send_gatt_pdu(bytes(data))


# ----------------------------------------------------------------------------------------
# Controllers on fixed ports (kill and restart)
# ----------------------------------------------------------------------------------------
def free_ports(count: int) -> list[int]:
    sockets = []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class ControllerProcess:
    """virtual_controllers.py (or rootcanal_controllers.py, per `link_layer`) with its
    controllers on the TCP ports we choose, so the whole link can be killed and restarted on
    the same ports (gattd keeps its --transport). The script picks free ports itself; a tiny
    wrapper makes its servers bind ours instead. Killing rootcanal_controllers.py kills its
    rootcanal too (PR_SET_PDEATHSIG)."""

    WRAPPER = r"""
import asyncio, importlib, sys
sys.path.insert(0, sys.argv[1])
vc = importlib.import_module(sys.argv[3])
ports = [int(p) for p in sys.argv[2].split(",")]
original = asyncio.BaseEventLoop.create_server
async def create_server(self, factory, host=None, _port=None, **kwargs):
    return await original(self, factory, host, ports.pop(0), reuse_address=True, **kwargs)
asyncio.BaseEventLoop.create_server = create_server
sys.argv = [sys.argv[0]] + sys.argv[4:]
vc.main()
"""

    def __init__(self, work_dir: Path, ports: list[int], link_layer: str = "bumble") -> None:
        self.link_layer = link_layer
        self.work_dir = work_dir
        self.ports = ports
        self.process: subprocess.Popen | None = None
        self.ready_file = work_dir / "fixed-controllers.json"
        self.log_path = work_dir / "fixed-controllers.log"
        self.starts = 0

    def start(self, timeout: float = 20.0) -> list[VirtualController]:
        self.ready_file.unlink(missing_ok=True)
        self.starts += 1
        log_dir = self.work_dir / f"run-{self.starts}"
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.WRAPPER, str(E2E_DIR), ",".join(map(str, self.ports)),
             LINK_LAYER_SCRIPTS[self.link_layer].removesuffix(".py"), "--count", str(len(self.ports)), "--ready-file", str(self.ready_file), "--log-dir", str(log_dir)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self.ready_file.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"virtual controllers exited:\n{self.log()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"virtual controllers not ready:\n{self.log()}")
            time.sleep(0.05)
        entries = json.loads(self.ready_file.read_text())["controllers"]
        assert [entry["port"] for entry in entries] == self.ports
        return [VirtualController(index=e["index"], port=e["port"], address=e["address"], transport=e["transport"],
                                  bumble_transport=e["bumble_transport"], commands_path=Path(e["commands"]))
                for e in entries]

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
