"""The profiles (docs/profiles.md): a services entry `{"profile": ...}` expands into the
standard service, and its agent runs it through the control socket.

- uart_console: the Nordic UART Service with a session per subscribing central on a pty. The
  central imitates the phone terminals (nRF Toolbox's UART, Serial Bluetooth Terminal,
  Bluefruit Connect): find the service by UUID, enable TX notifications, write lines to RX
  (Write Request), read what comes back.
- battery: Battery Level from a capacity file (a fake sysfs power_supply), notified on change.
- device_information: Device Information strings and PnP ID, as a phone's generic GATT browser
  (nRF Connect, LightBlue) reads them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re

import pytest
from bumble import att
from bumble.pairing import PairingConfig, PairingDelegate

from control_client import ControlClient
from gatt_central import central_device, connect_peer, discover_everything, raw_request
from test_pairing import gattd_address, pairing as just_works_bonding
from harness import both_link_layers, find_characteristic, process_is_alive, record_updates, run, wait_for_log

NUS = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
RX = "6E400002-B5A3-F393-E0A9-E50E24DCCA9E"
TX = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"
INSUFFICIENT_AUTHENTICATION = 0x05
INSUFFICIENT_ENCRYPTION = 0x0F


def config(*services: dict, security: dict | None = None) -> str:
    c: dict = {"name": "Profiles", "services": list(services)}
    if security is not None:
        c["security"] = security
    return json.dumps(c, indent=1) + "\n"


class Terminal:
    """A phone's UART terminal on one connection: TX notifications collected, lines to RX."""

    def __init__(self, peer) -> None:
        self.peer = peer
        self.received = bytearray()
        self.changed = asyncio.Event()
        self.slow_every = 0
        self.count = 0

    def on_notification(self, value: bytes) -> None:
        self.received += value
        self.count += 1
        self.changed.set()

    async def open(self, mtu: int | None = None) -> None:
        if mtu:
            await self.peer.request_mtu(mtu)
        await discover_everything(self.peer)
        await find_characteristic(self.peer, TX).subscribe(self.on_notification)

    async def type(self, text: bytes) -> None:
        await find_characteristic(self.peer, RX).write_value(text, with_response=True)

    async def wait_for(self, predicate, timeout: float = 10.0) -> bytes:
        async def waiting() -> bytes:
            while not predicate(bytes(self.received)):
                self.changed.clear()
                await self.changed.wait()
            return bytes(self.received)
        return await asyncio.wait_for(waiting(), timeout)


CAT_CONSOLE = {"profile": "uart_console", "id": "console", "security": "none", "command": ["/bin/cat"]}


@both_link_layers
def test_console_echoes_through_cat(controllers, gattd):
    """The issue's exact entry: what a central writes to RX comes back on TX (twice: the
    terminal echoes the line, as a serial console does, and cat prints it)."""
    g = gattd(config(CAT_CONSOLE))

    async def body():
        async with central_device(controllers[1]) as device:
            terminal = Terminal(await connect_peer(device, gattd_address(controllers)))
            await terminal.open()
            # Typed at once, as a phone does once its subscription is answered: what arrives
            # while the session starts waits for it (the kernel VM's check found it dropped).
            await terminal.type(b"hello gattd\n")
            got = await terminal.wait_for(lambda b: b.count(b"hello gattd\r\n") == 2)
            assert got == b"hello gattd\r\nhello gattd\r\n"
            await wait_for_log(g, r"console: session for C0:00:00:00:00:01: /bin/cat \(pid \d+\)")

    run(body())


class Phone(PairingDelegate):
    """The phone's user: confirms the number it shows."""

    def __init__(self) -> None:
        super().__init__(io_capability=PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT)
        self.shown: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def compare_numbers(self, number: int, digits: int) -> bool:
        self.shown.set_result(number)
        return True


@both_link_layers
def test_console_needs_an_authenticated_bond_then_runs_a_shell(controllers, gattd, tmp_path):
    """The default security: unencrypted, the central is refused by ATT (no pty); after LE
    Secure Connections pairing with Numeric Comparison confirmed on the control socket, it
    types a command into /bin/sh and its output comes back."""
    g = gattd(config({"profile": "uart_console", "command": ["/bin/sh"]}, security={"io_capability": "display_yes_no"}))

    async def body():
        watcher = await ControlClient.open(tmp_path / "control.sock")
        assert (await watcher.request({"op": "watch"}))["ok"]
        async with central_device(controllers[1]) as device:
            phone = Phone()
            device.pairing_config_factory = lambda _c: PairingConfig(
                sc=True, mitm=True, bonding=True, delegate=phone, identity_address_type=PairingConfig.AddressType.RANDOM)
            peer = await connect_peer(device, gattd_address(controllers))
            await discover_everything(peer)
            tx = find_characteristic(peer, TX)
            rx = find_characteristic(peer, RX)
            cccd = tx.get_descriptor(att.UUID("2902")).handle
            response = await raw_request(peer, att.ATT_Write_Request(attribute_handle=cccd, attribute_value=b"\x01\x00"))
            assert response.op_code == att.Opcode.ATT_ERROR_RESPONSE
            assert response.error_code == INSUFFICIENT_ENCRYPTION
            response = await raw_request(peer, att.ATT_Write_Request(attribute_handle=rx.handle, attribute_value=b"id\n"))
            assert response.op_code == att.Opcode.ATT_ERROR_RESPONSE
            assert response.error_code == INSUFFICIENT_AUTHENTICATION
            assert "console: session" not in g.log()

            pairing = asyncio.ensure_future(peer.connection.pair())
            prompt = await watcher.event("numeric_comparison")
            assert int(prompt["value"]) == await asyncio.wait_for(phone.shown, 5)
            assert (await watcher.request({"op": "pairing_respond", "confirm": True}))["ok"]
            await asyncio.wait_for(pairing, 10)
            assert (await watcher.event("paired"))["authenticated"]

            terminal = Terminal(peer)
            await tx.subscribe(terminal.on_notification)
            await wait_for_log(g, r"console: session for C0:00:00:00:00:01: /bin/sh \(pid \d+\)")
            await terminal.type(b"echo gattd-$((6*7))\n")
            await terminal.wait_for(lambda b: b"gattd-42\r\n" in b)
        await watcher.close()

    run(body(), timeout=60)


@both_link_layers
def test_console_refuses_an_encrypted_but_unauthenticated_central(controllers, gattd):
    """Just Works pairing encrypts the link but is not authenticated: the central may
    subscribe (TX needs encryption) but gets no session, told why on TX; RX refuses its
    writes with Insufficient Authentication."""
    g = gattd(config({"profile": "uart_console", "command": ["/bin/cat"]}))

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = just_works_bonding(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await peer.connection.pair()
            terminal = Terminal(peer)
            await terminal.open()
            got = await terminal.wait_for(lambda b: b.endswith(b"\r\n"))
            assert got.startswith(b"gattd: no console: the link is not authenticated"), got
            await wait_for_log(g, r"console: no session for C0:00:00:00:00:01: the link is not authenticated")
            rx = find_characteristic(peer, RX)
            response = await raw_request(peer, att.ATT_Write_Request(attribute_handle=rx.handle, attribute_value=b"x"))
            assert response.error_code == INSUFFICIENT_AUTHENTICATION
            assert "console: session for" not in g.log()

    run(body())


@both_link_layers
def test_console_megabyte_arrives_byte_exact_to_a_slow_reader(controllers, gattd, tmp_path):
    """1 MB of random data, base64 (1.35 MB), printed at once: gattd stops reading the pty
    while the central's queue is full, so it all arrives, in order, while the central reads
    slowly (its host stalls now and then)."""
    data = os.urandom(1_000_000)
    source = tmp_path / "random.bin"
    source.write_bytes(data)
    expected = base64.encodebytes(data)
    g = gattd(config({"profile": "uart_console", "security": "none",
                      "command": ["/bin/sh", "-c", f"stty raw -echo; base64 {source}; exec sleep 600"]}))

    async def body():
        async with central_device(controllers[1]) as device:
            terminal = Terminal(await connect_peer(device, gattd_address(controllers)))
            stalls = 0
            original = terminal.on_notification

            def slow(value: bytes) -> None:
                nonlocal stalls
                original(value)
                if terminal.count % 500 == 0:
                    stalls += 1
                    import time
                    time.sleep(0.05)  # the central's host stalls: its link buffers fill
            terminal.on_notification = slow
            await terminal.open(mtu=247)
            got = await terminal.wait_for(lambda b: len(b) >= len(expected), timeout=240)
            assert got == expected
            assert stalls > 0
            assert re.search(r"console: session for C0:00:00:00:00:01", g.log())

    run(body(), timeout=300)


@both_link_layers
@pytest.mark.parametrize("controller_count", [3])
def test_console_sessions_are_per_central_and_end_on_disconnect(controllers, gattd):
    """Two centrals, two sessions: each sees only its own program's output. A disconnect
    hangs its session up (SIGHUP to the program) and leaves the other running."""
    g = gattd(config({"profile": "uart_console", "security": "none",
                      "command": ["/bin/sh", "-c", "echo pid=$$ central=$GATTD_CENTRAL; exec cat"]}))

    async def body():
        async with central_device(controllers[1], "C0:00:00:00:00:01") as d1, \
                central_device(controllers[2], "C0:00:00:00:00:02", name="central2") as d2:
            t1 = Terminal(await connect_peer(d1, gattd_address(controllers)))
            t2 = Terminal(await connect_peer(d2, gattd_address(controllers)))
            await t1.open()
            await t2.open()
            out1 = await t1.wait_for(lambda b: b"central=" in b and b.endswith(b"\r\n"))
            out2 = await t2.wait_for(lambda b: b"central=" in b and b.endswith(b"\r\n"))
            assert b"central=C0:00:00:00:00:01" in out1 and b"C0:00:00:00:00:02" not in out1
            assert b"central=C0:00:00:00:00:02" in out2 and b"C0:00:00:00:00:01" not in out2
            pid1 = int(re.search(rb"pid=(\d+)", out1).group(1))
            pid2 = int(re.search(rb"pid=(\d+)", out2).group(1))
            assert pid1 != pid2 and process_is_alive(pid1) and process_is_alive(pid2)

            start = len(g.log())
            await t1.peer.connection.disconnect()
            await wait_for_log(g, rf"console: the program of C0:00:00:00:00:01's session \(pid {pid1}\) was killed by signal 1",
                               start=start)
            assert not process_is_alive(pid1)
            # The other session goes on.
            await t2.type(b"still here\n")
            await t2.wait_for(lambda b: b.count(b"still here\r\n") == 2)
            assert process_is_alive(pid2)

    run(body(), timeout=60)


def test_console_program_that_does_not_exist(controllers, gattd):
    g = gattd(config({"profile": "uart_console", "security": "none", "command": ["/nonexistent/program"]}))

    async def body():
        async with central_device(controllers[1]) as device:
            terminal = Terminal(await connect_peer(device, gattd_address(controllers)))
            await terminal.open()
            got = await terminal.wait_for(lambda b: b.endswith(b"\r\n"))
            assert got.startswith(b"gattd: no console: cannot run /nonexistent/program: No such file or directory"), got
            await wait_for_log(g, r"console: no session for C0:00:00:00:00:01: cannot run /nonexistent/program")
            # The link stays up and a write is taken (and dropped with a log line).
            await terminal.type(b"ls\n")
            await wait_for_log(g, r"console: C0:00:00:00:00:01 wrote 3 bytes to console_rx without a session")

    run(body())


def test_console_program_exit_ends_the_session_not_the_link(controllers, gattd):
    g = gattd(config({"profile": "uart_console", "security": "none", "command": ["/bin/sh", "-c", "echo bye"]}))

    async def body():
        async with central_device(controllers[1]) as device:
            peer = await connect_peer(device, gattd_address(controllers))
            terminal = Terminal(peer)
            await terminal.open()
            await terminal.wait_for(lambda b: b"bye\r\n" in b)
            await wait_for_log(g, r"console: session for C0:00:00:00:00:01 ended: the program ended")
            # Still connected: a read goes through.
            assert await peer.gatt_client.read_value(0x0003)

    run(body())


@both_link_layers
def test_battery_level_follows_a_capacity_file(controllers, gattd, tmp_path):
    supply = tmp_path / "sys" / "class" / "power_supply" / "BAT0"
    supply.mkdir(parents=True)
    (supply / "type").write_text("Battery\n")
    capacity = supply / "capacity"
    capacity.write_text("57\n")
    g = gattd(config({"profile": "battery", "capacity_file": str(capacity), "poll_interval_s": 0.1}))

    async def body():
        await wait_for_log(g, rf"battery: battery_level follows {re.escape(str(capacity))}")
        async with central_device(controllers[1]) as device:
            peer = await connect_peer(device, gattd_address(controllers))
            await discover_everything(peer)
            level = find_characteristic(peer, "2A19")
            updates: asyncio.Queue[bytes] = asyncio.Queue()
            await level.subscribe(updates.put_nowait)
            capacity.write_text("42\n")
            while (value := await asyncio.wait_for(updates.get(), 5)) != b"\x2a":
                assert value == b"\x39"  # 57, from before the change
            assert await level.read_value() == b"\x2a"

    run(body())


def test_device_information_and_list_services(controllers, gattd, tmp_path):
    entry = {"profile": "device_information", "system": False, "manufacturer": "ACME", "model": "Gateway 3",
             "serial": "SN-0042", "firmware_revision": "1.2.3",
             "pnp_id": {"vendor_id_source": "usb", "vendor_id": 0x1D6B, "product_id": 0x0246, "product_version": 0x0110}}
    gattd(config(entry, {"profile": "battery", "id": "power"}))

    async def body():
        async with central_device(controllers[1]) as device:
            peer = await connect_peer(device, gattd_address(controllers))
            await discover_everything(peer)
            assert [s.uuid for s in peer.services][2:] == [att.UUID("180A"), att.UUID("180F")]
            assert await find_characteristic(peer, "2A29").read_value() == b"ACME"
            assert await find_characteristic(peer, "2A24").read_value() == b"Gateway 3"
            assert await find_characteristic(peer, "2A25").read_value() == b"SN-0042"
            assert await find_characteristic(peer, "2A26").read_value() == b"1.2.3"
            assert await find_characteristic(peer, "2A50").read_value() == bytes.fromhex("026b1d46021001")
            with pytest.raises(LookupError):
                find_characteristic(peer, "2A28")  # "system": false and not in the config
            assert await find_characteristic(peer, "2A19").read_value() == b"\x64"
        control = await ControlClient.open(tmp_path / "control.sock")
        services = (await control.request({"op": "list_services"}))["services"]
        assert [(s["id"], s.get("profile")) for s in services] == [("device_information", "device_information"), ("power", "battery")]
        added = await control.request({"op": "add_service", "service": {"profile": "battery", "id": "spare"}})
        assert added["ok"] and added["services"][0]["profile"] == "battery", added
        bad = await control.request({"op": "add_service", "service": {"profile": "batery"}})
        assert bad["error"] == "invalid_value" and 'did you mean \\"battery\\"' in json.dumps(bad["message"]), bad
        await control.close()

    run(body())


def test_profile_agents_take_no_control_client_places(controllers, gattd, tmp_path):
    """gattd's own agents are not counted by --max-control-clients: with 1, the program still
    gets its place (and a second is refused) while the battery and console agents run."""
    capacity = tmp_path / "capacity"
    capacity.write_text("50\n")
    g = gattd(config({"profile": "battery", "capacity_file": str(capacity)}, CAT_CONSOLE),
              extra_args=["--max-control-clients", "1"])

    async def body():
        await wait_for_log(g, r"battery: battery_level follows")
        await wait_for_log(g, r"control client \d+ watches")  # the console agent
        program = await ControlClient.open(tmp_path / "control.sock")
        assert (await program.request({"op": "status"}))["ok"] is True
        refused = await ControlClient.open(tmp_path / "control.sock")
        assert (await refused.reply())["error"] == "too_many_clients"
        await program.close()

    run(body())


@both_link_layers
def test_console_session_for_a_bonded_central_that_returns(controllers, gattd):
    """A bonded phone that comes back has its TX subscription restored once its link is
    encrypted (no CCCD write: the value is unchanged): gattd announces it as `subscribed`, so
    it gets a new session and what it types is echoed, as on its first visit."""
    g = gattd(config({"profile": "uart_console", "security": "encrypted", "command": ["/bin/cat"]}))

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = just_works_bonding(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await peer.connection.pair()
            terminal = Terminal(peer)
            await terminal.open()
            await terminal.type(b"one\n")
            await terminal.wait_for(lambda b: b.count(b"one\r\n") == 2)
            start = len(g.log())
            await peer.connection.disconnect()
            await wait_for_log(g, r"console: session for C0:00:00:00:00:01 ended", start=start)

            start = len(g.log())
            peer = await connect_peer(device, gattd_address(controllers))
            received = record_updates(peer)
            arrived = asyncio.Event()
            client = peer.gatt_client
            original = client.on_att_handle_value_notification

            def notified(pdu) -> None:
                original(pdu)
                arrived.set()
            client.on_att_handle_value_notification = notified
            await peer.connection.encrypt()
            await wait_for_log(g, r"console: session for C0:00:00:00:00:01: /bin/cat", start=start)
            await discover_everything(peer)
            await find_characteristic(peer, RX).write_value(b"two\n", with_response=True)

            async def echoed() -> None:
                while b"".join(v for _, v in received).count(b"two\r\n") < 2:
                    arrived.clear()
                    await arrived.wait()
            await asyncio.wait_for(echoed(), 10)
            assert "C0:00:00:00:00:01: subscribed to console_tx" in g.log()[:start]  # the first visit wrote the CCCD

    run(body(), timeout=60)
