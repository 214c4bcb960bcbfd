"""One characteristic's updates reach a central in the order they were pushed, even over
Enhanced ATT bearers (issue #30). A Bumble central pairs, exchanges MTU 517 on the fixed
bearer, opens 5 EATT bearers (as Android does), subscribes on the fixed bearer and collects
updates from every bearer in one log (an app cannot tell bearers apart). One bearer may have
its credits held back (a channel gattd cannot send on until the central returns them): a
server that spread one characteristic's updates over the bearers would deliver that
bearer's share late, out of order. A control client pushes the values with `notify`.

The central is Bumble with eatt_client.py's fixes. One gattd per link layer for the module;
each test connects its own central (its own address), paired without bonding.
"""

from __future__ import annotations

import contextlib
import json
import struct
from typing import AsyncIterator

import pytest

from bumble import l2cap
from bumble.core import UUID, PhysicalTransport
from bumble.pairing import PairingConfig

from control_client import ControlClient, hex_value
from eatt_client import FIXED, Client, Updates, fixed_bearer_client, open_bearers
from gatt_central import Link, central_device, dump_link_logs, module_link  # noqa: F401 (dump_link_logs: fixture)
from harness import LINK_LAYERS, run

BEARERS = 5
MTU = 517
CCCD = UUID("2902")


def uuid(n: int) -> str:
    return f"ea780000-0000-4000-8000-{n:012x}"


CHARACTERISTICS = [
    {"id": "stream", "uuid": uuid(1), "properties": ["notify"], "max_length": 244},
    {"id": "level", "uuid": uuid(2), "properties": ["notify"], "max_length": 244},
    {"id": "alert", "uuid": uuid(3), "properties": ["indicate"], "max_length": 20},
    {"id": "alarm", "uuid": uuid(4), "properties": ["indicate"], "max_length": 20},
]
CONFIG = json.dumps({"name": "gattd eatt order",
                     "services": [{"id": "svc", "uuid": uuid(0), "characteristics": CHARACTERISTICS}]}, indent=1)

link = module_link(CONFIG, link_layers=LINK_LAYERS)
pytestmark = pytest.mark.usefixtures("dump_link_logs")


class Session:
    """A paired central with the fixed bearer (ATT_MTU 517) and `BEARERS` EATT bearers, every
    update of any bearer in `updates`, and the value handles of our characteristics."""

    def __init__(self, address: str, fixed: Client, bearers: list[Client], updates: Updates,
                 found: dict[str, tuple[int, int | None]]) -> None:
        self.address, self.fixed, self.bearers, self.updates, self.found = address, fixed, bearers, updates, found

    async def subscribe(self, name: str, bits: bytes) -> None:
        await self.fixed.write_value(self.found[name][1], bits, with_response=True)

    async def held(self, index: int) -> l2cap.LeCreditBasedChannel:
        """Bearer `index` with its credits held back (`hold_credits`; it reads a CCCD)."""
        return await hold_credits(self.bearers[index], self.found["alert"][1])

    def values(self, name: str) -> list[bytes]:
        """The values of `name` received on any bearer, in order of arrival."""
        handle = self.found[name][0]
        return [value for u in self.updates.pdus for h, value in u.values if h == handle]

    def bearers_used(self) -> set[str | int]:
        return {u.bearer for u in self.updates.pdus}


@contextlib.asynccontextmanager
async def session(link: Link, address: str) -> AsyncIterator[Session]:
    async with central_device(link.controllers[1], address) as device:
        device.pairing_config_factory = lambda _connection: PairingConfig(sc=True, mitm=False, bonding=False)
        connection = await device.connect(link.gattd_address, transport=PhysicalTransport.LE, timeout=10)
        try:
            await connection.pair()
            assert connection.is_encrypted
            updates = Updates()
            fixed = fixed_bearer_client(connection, updates)
            assert await fixed.request_mtu(MTU) == MTU
            bearers = await open_bearers(connection, BEARERS, mtu=MTU, updates=updates)
            [service] = await fixed.discover_service(UUID(uuid(0)))
            found = {}
            for characteristic in await service.discover_characteristics():
                await characteristic.discover_descriptors()
                cccd = characteristic.get_descriptor(CCCD)
                name = next(c["id"] for c in CHARACTERISTICS if UUID(c["uuid"]) == characteristic.uuid)
                found[name] = (characteristic.handle, cccd.handle if cccd else None)
            yield Session(address, fixed, bearers, updates, found)
        finally:
            with contextlib.suppress(Exception):
                await connection.disconnect()


async def hold_credits(client: Client, readable: int) -> l2cap.LeCreditBasedChannel:
    """The central stops returning credits on this bearer's channel and reads the attribute
    at `readable` on it until gattd has none left: gattd cannot send on it until
    `release_credits`."""
    channel = client.bearer
    channel.peer_credits_threshold = -1
    while channel.peer_credits > 0:
        await client.read_value(readable, no_long_read=True)
    return channel


def release_credits(channel: l2cap.LeCreditBasedChannel) -> None:
    """Gives the channel's credits back (as Bumble does at its threshold) and resumes."""
    channel.peer_credits_threshold = channel.peer_max_credits // 2
    if channel.peer_credits < channel.peer_max_credits:
        channel.send_control_frame(l2cap.L2CAP_LE_Flow_Control_Credit(
            identifier=channel.manager.next_identifier(channel.connection), cid=channel.source_cid,
            credits=channel.peer_max_credits - channel.peer_credits))
        channel.peer_credits = channel.peer_max_credits


def seq(n: int, size: int = 4) -> bytes:
    """Value number `n`: its 4-byte little-endian number, padded to `size` octets."""
    return struct.pack("<I", n) + bytes(size - 4)


def numbers(values: list[bytes]) -> list[int]:
    return [struct.unpack_from("<I", v)[0] for v in values]


async def push(control: ControlClient, address: str, requests: list[dict]) -> None:
    """Pipelines `notify` requests (`"wait": true`: each waits for room, in order) and checks
    every reply says the value was sent to the central."""
    for n, request in enumerate(requests):
        control.send({"op": "notify", "central": address, "wait": True, "id": n, **request})
    await control.writer.drain()
    replies = [await control.reply(30) for _ in requests]
    assert replies == [{"ok": True, "sent": 1, "id": n} for n in range(len(requests))]


def test_a_burst_of_one_characteristic_arrives_in_order(link):
    """200 notifications of one characteristic, pipelined, with one bearer held back: every
    one arrives, in the order pushed."""

    async def body():
        control = await ControlClient.open(link.gattd.work_dir / "control.sock")
        try:
            async with session(link, "C0:00:00:00:E0:01") as s:
                await s.subscribe("stream", b"\x01\x00")
                held = await s.held(2)
                await push(control, s.address, [{"characteristic": "stream", "value": hex_value(seq(n))} for n in range(200)])
                release_credits(held)
                await s.updates.wait_for(200, timeout=30)
                assert numbers(s.values("stream")) == list(range(200)), f"bearers used: {s.bearers_used()}"
        finally:
            await control.close()

    run(body(), 90)


def test_two_characteristics_interleaved_each_arrive_in_order(link):
    """100 notifications each of two characteristics, interleaved and pipelined, one bearer
    held back: each characteristic's arrive in its own order."""

    async def body():
        control = await ControlClient.open(link.gattd.work_dir / "control.sock")
        try:
            async with session(link, "C0:00:00:00:E0:02") as s:
                await s.subscribe("stream", b"\x01\x00")
                await s.subscribe("level", b"\x01\x00")
                held = await s.held(1)
                await push(control, s.address, [{"characteristic": name, "value": hex_value(seq(n))}
                                                 for n in range(100) for name in ("stream", "level")])
                release_credits(held)
                await s.updates.wait_for(200, timeout=30)
                assert numbers(s.values("stream")) == list(range(100)), f"bearers used: {s.bearers_used()}"
                assert numbers(s.values("level")) == list(range(100)), f"bearers used: {s.bearers_used()}"
        finally:
            await control.close()

    run(body(), 90)


def test_indications_arrive_in_order(link):
    """30 indications of one characteristic, pipelined, one bearer held back: each confirmed,
    all in the order pushed (one outstanding per bearer; the rest wait on the same bearer)."""

    async def body():
        control = await ControlClient.open(link.gattd.work_dir / "control.sock")
        try:
            async with session(link, "C0:00:00:00:E0:03") as s:
                await s.subscribe("alert", b"\x02\x00")
                held = await s.held(0)
                await push(control, s.address, [{"characteristic": "alert", "value": hex_value(seq(n))} for n in range(30)])
                release_credits(held)
                await s.updates.wait_for(30, timeout=30)
                assert numbers(s.values("alert")) == list(range(30)), f"bearers used: {s.bearers_used()}"
        finally:
            await control.close()

    run(body(), 90)


def test_a_bearer_closed_mid_burst_loses_nothing(link):
    """The central closes a bearer (one it held back) in the middle of a 200-notification
    burst: all 200 arrive, in order."""

    async def body():
        control = await ControlClient.open(link.gattd.work_dir / "control.sock")
        try:
            async with session(link, "C0:00:00:00:E0:04") as s:
                await s.subscribe("stream", b"\x01\x00")
                held = await s.held(3)
                await push(control, s.address, [{"characteristic": "stream", "value": hex_value(seq(n))} for n in range(100)])
                await held.disconnect()
                await push(control, s.address, [{"characteristic": "stream", "value": hex_value(seq(n))} for n in range(100, 200)])
                await s.updates.wait_for(200, timeout=30)
                assert numbers(s.values("stream")) == list(range(200)), f"bearers used: {s.bearers_used()}"
        finally:
            await control.close()

    run(body(), 90)


def test_the_android_like_session_of_issue_30(link):
    """The session of the issue: 40 values of 244 octets, one `notify` with `"wait": true`
    after another, to a central with 5 EATT bearers: all 40 arrive, in order."""

    async def body():
        control = await ControlClient.open(link.gattd.work_dir / "control.sock")
        try:
            async with session(link, "C0:00:00:00:E0:05") as s:
                await s.subscribe("stream", b"\x01\x00")
                for n in range(40):
                    assert await control.request({"op": "notify", "central": s.address, "characteristic": "stream",
                                                  "value": hex_value(seq(n, 244)), "wait": True}) == {"ok": True, "sent": 1}
                await s.updates.wait_for(40, timeout=30)
                values = s.values("stream")
                assert [len(v) for v in values] == [244] * 40
                assert numbers(values) == list(range(40)), f"bearers used: {s.bearers_used()}"
        finally:
            await control.close()

    run(body(), 90)


def test_a_bearer_closed_with_its_indication_unconfirmed_reports_it(link):
    """The central holds its confirmations and closes the Enhanced ATT bearer an indication
    came on: that indication will never be confirmed, and `watch` says so (`unconfirmed`,
    `bearer_closed`) instead of leaving a program waiting for `confirmed`; the one still
    outstanding on the fixed bearer is confirmed once the central confirms it."""

    async def body():
        control = await ControlClient.open(link.gattd.work_dir / "control.sock")
        watcher = await ControlClient.open(link.gattd.work_dir / "control.sock")
        try:
            assert await watcher.request({"op": "watch"}) == {"ok": True}
            async with session(link, "C0:00:00:00:E0:06") as s:
                await s.subscribe("alert", b"\x02\x00")
                await s.subscribe("alarm", b"\x02\x00")
                for client in [s.fixed, *s.bearers]:
                    client.hold_confirmations = True
                # alert takes the fixed bearer (a tie) and stays unconfirmed there, so alarm
                # takes an Enhanced one (a bearer without an indication outstanding).
                for name in ["alert", "alarm"]:
                    assert await control.request({"op": "notify", "central": s.address, "characteristic": name,
                                                  "value": hex_value(b"\x01")}) == {"ok": True, "sent": 1}
                updates = await s.updates.wait_for(2, timeout=10)
                alarm = s.found["alarm"][0]
                [bearer] = [u.bearer for u in updates if u.values[0][0] == alarm]
                assert bearer != FIXED, f"bearers used: {s.bearers_used()}"
                [client] = [c for c in s.bearers if c.label == bearer]
                await client.bearer.disconnect()
                event = await watcher.event("unconfirmed", timeout=10)
                assert event == {"event": "unconfirmed", "central": s.address, "characteristic": "alarm",
                                 "reason": "bearer_closed"}
                s.fixed.release_confirmations()
                assert await watcher.event("confirmed", timeout=10) == {
                    "event": "confirmed", "central": s.address, "characteristic": "alert"}
        finally:
            await watcher.close()
            await control.close()

    run(body(), 90)
