"""Enhanced ATT (Core Spec Vol 3 Part F §3.2.11, Part G §7.2–§7.4): a Bumble central opens
ATT bearers on L2CAP Enhanced Credit Based channels (PSM 0x0027) to gattd's H4 host, once
the link is encrypted, and uses them side by side: Server Supported Features says EATT,
reads on several bearers at once are each answered on their own bearer, a control-handled
read pending on one does not hold up another, notifications and an indication come over an
Enhanced bearer, Multiple Handle Value Notifications for a client that set bit 2, and the
refusals (an unencrypted link; `"eatt": false`).

The central is Bumble with eatt_client.py's fixes (ATT_MTU, opcode 0x23, one SDU per PDU,
Credit Based Reconfigure). One gattd per link layer for the module, except the switched-off
one. Each test connects its own central (its own address), paired without bonding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import AsyncIterator

import pytest

from bumble import att, hci, l2cap
from bumble.core import UUID, PhysicalTransport
from bumble.device import Connection
from bumble.pairing import PairingConfig

from control_client import ControlClient, hex_value
from eatt_client import (
    FIXED,
    MULTIPLE_HANDLE_VALUE_NTF,
    Client,
    Result,
    Update,
    Updates,
    fixed_bearer_client,
    open_bearers,
    reconfigure,
)
from gatt_central import Link, central_device, dump_link_logs, module_link  # noqa: F401 (dump_link_logs: fixture)
from harness import LINK_LAYERS, both_link_layers, run

GATTD_MTU = 517  # gattd's MTU on an EATT channel (max ATT value 512 + headers)
OUR_MTU = 300  # the central's: below gattd's, so a bearer's ATT_MTU is ours
SERVER_SUPPORTED_FEATURES = "2B3A"  # Vol 3 Part G §7.4: bit 0 EATT Supported
CLIENT_SUPPORTED_FEATURES = "2B29"  # §7.2: bit 1 EATT, bit 2 Multiple Handle Value Notifications
CCCD = UUID("2902")
NOTIFICATION = att.Opcode.ATT_HANDLE_VALUE_NOTIFICATION
INDICATION = att.Opcode.ATT_HANDLE_VALUE_INDICATION
# L2CAP_CREDIT_BASED_CONNECTION_RSP results (Vol 3 Part A §4.26).
SPSM_NOT_SUPPORTED = 0x0002
INSUFFICIENT_AUTHENTICATION = 0x0005


def uuid(n: int) -> str:
    return f"ea770000-0000-4000-8000-{n:012x}"


READABLE = {"alpha": b"alpha", "bravo": b"bravo", "charlie": b"charlie", "delta": b"delta", "echo": b"echo"}
LONG = bytes(range(256)) + bytes(range(144))  # 400 octets: longer than OUR_MTU - 1

CHARACTERISTICS = [
    *({"id": name, "uuid": uuid(i), "properties": ["read"], "value": {"hex": value.hex()}}
      for i, (name, value) in enumerate(READABLE.items(), start=1)),
    {"id": "long", "uuid": uuid(10), "properties": ["read"], "value": {"hex": LONG.hex()}},
    {"id": "stream", "uuid": uuid(11), "properties": ["notify"], "max_length": 20},
    {"id": "level", "uuid": uuid(12), "properties": ["notify"], "max_length": 20},
    {"id": "alert", "uuid": uuid(13), "properties": ["indicate"], "max_length": 20},
    {"id": "bell", "uuid": uuid(15), "properties": ["indicate"], "max_length": 20},
    {"id": "ctl", "uuid": uuid(14), "properties": ["read"], "handler": "control", "max_length": 64},
]


def config(**top_level) -> str:
    return json.dumps({"name": "gattd eatt", **top_level,
                       "services": [{"id": "svc", "uuid": uuid(0), "characteristics": CHARACTERISTICS}]}, indent=1)


link = module_link(config(), link_layers=LINK_LAYERS)
pytestmark = pytest.mark.usefixtures("dump_link_logs")


def uuid_of(name: str) -> UUID:
    return UUID(next(c["uuid"] for c in CHARACTERISTICS if c["id"] == name))


# ----------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------
def no_bonding(_connection) -> PairingConfig:
    return PairingConfig(sc=True, mitm=False, bonding=False)


@contextlib.asynccontextmanager
async def connected(controllers, gattd_address, address: str, pair: bool = True) -> AsyncIterator[Connection]:
    """A central at `address` on controller 1 connected to gattd, paired (Just Works, LE
    Secure Connections, no bond) and so encrypted unless `pair` is False."""
    async with central_device(controllers[1], address) as device:
        device.pairing_config_factory = no_bonding
        connection = await device.connect(gattd_address, transport=PhysicalTransport.LE, timeout=10)
        try:
            if pair:
                await asyncio.wait_for(connection.pair(), 15)
                assert connection.is_encrypted
            yield connection
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.disconnect(), 5)


def link_central(link: Link, address: str, pair: bool = True):
    return connected(link.controllers, link.gattd_address, address, pair)


async def read_by_type(client: Client, uuid: str | UUID) -> list[tuple[int, bytes]]:
    """(handle, value) of every attribute of type `uuid` (Read By Type Request, one PDU);
    [] when gattd answers Attribute Not Found."""
    response = await client.send_request(att.ATT_Read_By_Type_Request(
        starting_handle=0x0001, ending_handle=0xFFFF, attribute_type=UUID(uuid) if isinstance(uuid, str) else uuid))
    if response.op_code == att.Opcode.ATT_ERROR_RESPONSE:
        assert response.error_code == att.ErrorCode.ATTRIBUTE_NOT_FOUND, str(response)
        return []
    return [(handle, bytes(value)) for handle, value in response.attributes]


async def server_supported_features(client: Client) -> bytes:
    [(_, value)] = await read_by_type(client, SERVER_SUPPORTED_FEATURES) or [(0, b"(absent)")]
    return value


async def handles(client: Client) -> dict[str, tuple[int, int | None]]:
    """Our service's characteristics by config id: (value handle, CCCD handle or None)."""
    [service] = await client.discover_service(UUID(uuid(0)))
    result = {}
    for characteristic in await service.discover_characteristics():
        await characteristic.discover_descriptors()
        cccd = characteristic.get_descriptor(CCCD)
        name = next(c["id"] for c in CHARACTERISTICS if UUID(c["uuid"]) == characteristic.uuid)
        result[name] = (characteristic.handle, cccd.handle if cccd else None)
    return result


async def write_client_features(client: Client, bits: int) -> None:
    [(handle, _)] = await read_by_type(client, CLIENT_SUPPORTED_FEATURES)
    await client.write_value(handle, bytes([bits]), with_response=True)


async def control(link: Link) -> ControlClient:
    return await ControlClient.open(link.gattd.work_dir / "control.sock")


# ----------------------------------------------------------------------------------------
# Tests on the module's gattd (EATT on, the default)
# ----------------------------------------------------------------------------------------
def test_bearers_open_once_encrypted_and_carry_concurrent_reads(link):
    """Five bearers in one request; each bearer's ATT_MTU is the smaller MTU, on gattd's side
    too (a Read Response of OUR_MTU - 1 octets); Server Supported Features has bit 0; five
    reads sent together, one per bearer, each answered on its own bearer; a bearer
    reconfigured to a larger MTU gets longer responses."""

    async def body():
        async with link_central(link, "C0:00:00:00:EA:01") as connection:
            bearers = await open_bearers(connection, 5, mtu=OUR_MTU)
            assert len({bearer.label for bearer in bearers}) == 5
            assert [bearer.mtu for bearer in bearers] == [OUR_MTU] * 5
            assert [bearer.bearer.peer_mtu for bearer in bearers] == [GATTD_MTU] * 5
            assert await server_supported_features(bearers[0]) == b"\x01"

            found = await handles(bearers[0])
            names = list(READABLE)
            # All five requests are written before any answer is read; each client takes
            # only the response on its own bearer, so an answer on another bearer would land
            # on the wrong request (a wrong value or a mismatched response left pending).
            answers = await asyncio.wait_for(asyncio.gather(*(
                bearer.read_value(found[name][0], no_long_read=True) for bearer, name in zip(bearers, names))), 10)
            assert [bytes(answer) for answer in answers] == [READABLE[name] for name in names]

            long_handle = found["long"][0]
            assert bytes(await bearers[1].read_value(long_handle, no_long_read=True)) == LONG[:OUR_MTU - 1]
            # L2CAP Credit Based Reconfigure (Vol 3 Part A §4.27) of one bearer to a larger MTU.
            assert await reconfigure([bearers[1].bearer], mtu=OUR_MTU + 50, mps=bearers[1].bearer.mps) \
                == Result.RECONFIGURATION_SUCCESSFUL
            assert bytes(await bearers[1].read_value(long_handle, no_long_read=True)) == LONG[:OUR_MTU + 49]
            assert bytes(await bearers[2].read_value(long_handle, no_long_read=True)) == LONG[:OUR_MTU - 1]

    run(body(), 60)


def test_a_pending_control_read_does_not_hold_up_another_bearer(link):
    """A read of a `"handler": "control"` characteristic waits on bearer A for the control
    client's answer; meanwhile a read on bearer B is answered. (Were the bearers one queue,
    B's answer would come only after A's request timed out, and A would be done by then.)"""

    async def body():
        responder = await control(link)
        try:
            assert await responder.request({"op": "watch", "requests": True}) == {"ok": True}
            async with link_central(link, "C0:00:00:00:EA:02") as connection:
                a, b = await open_bearers(connection, 2, mtu=OUR_MTU)
                found = await handles(a)
                pending = asyncio.ensure_future(a.read_value(found["ctl"][0], no_long_read=True))
                request = await responder.event("read_request")
                assert request["characteristic"] == "ctl"
                # (Bounded below gattd's 5 s request timeout would be a timed assertion; 10 s
                # only makes a held read fail sooner than Bumble's 30 s.)
                assert bytes(await asyncio.wait_for(b.read_value(found["alpha"][0], no_long_read=True), 10)) == b"alpha"
                assert not pending.done(), "bearer A was answered before the control client responded"
                assert await responder.request({"op": "respond", "request": request["request"], "status": "success",
                                                "value": hex_value(b"from control")}) == {"ok": True}
                assert bytes(await asyncio.wait_for(pending, 10)) == b"from control"
        finally:
            await responder.close()

    run(body(), 60)


def test_notifications_and_indications_over_enhanced_bearers(link):
    """A client that set Client Supported Features bit 1 (EATT), with two bearers open and
    slow to confirm: one outstanding indication per bearer (Vol 3 Part F §3.3.2): the first
    takes the fixed bearer, another characteristic's goes out at once on an Enhanced bearer,
    and the first characteristic's next one waits behind its own on the fixed bearer (one
    characteristic's updates keep to one bearer, so they arrive in order); a notification
    then comes over an Enhanced bearer (a characteristic's first update takes the least
    loaded bearer, ties to the fixed one); every indication is confirmed on its own bearer
    (gattd's `confirmed` events). With bit 2 too, a notify naming two values it subscribed to
    comes as one ATT_MULTIPLE_HANDLE_VALUE_NTF (0x23); before, as two."""

    async def body():
        address = "C0:00:00:00:EA:03"
        watcher = await control(link)
        try:
            assert await watcher.request({"op": "watch"}) == {"ok": True}
            async with link_central(link, address) as connection:
                updates = Updates()
                bearers = await open_bearers(connection, 2, mtu=OUR_MTU, updates=updates)
                everyone = [fixed_bearer_client(connection, updates), *bearers]
                enhanced = {bearer.label for bearer in bearers}
                found = await handles(bearers[0])
                await write_client_features(bearers[0], 0x02)
                for name, bits in (("stream", b"\x01\x00"), ("level", b"\x01\x00"), ("alert", b"\x02\x00"), ("bell", b"\x02\x00")):
                    await bearers[0].write_value(found[name][1], bits, with_response=True)
                stream, level, alert, bell = found["stream"][0], found["level"][0], found["alert"][0], found["bell"][0]

                async def notify(**request) -> None:
                    assert await watcher.request({"op": "notify", "central": address, **request}) == {"ok": True, "sent": 1}

                # One trigger at a time: PDUs on different bearers need not arrive in the
                # order they were queued.
                for client in everyone:
                    client.hold_confirmations = True
                await notify(characteristic="alert", value=hex_value(b"a1"))
                [first] = await updates.wait_for(1)
                assert (first.bearer, first.opcode, first.values) == (FIXED, INDICATION, [(alert, b"a1")])
                await notify(characteristic="bell", value=hex_value(b"b1"))
                [second] = (await updates.wait_for(2))[1:]
                assert (second.opcode, second.values) == (INDICATION, [(bell, b"b1")])
                assert second.bearer in enhanced, f"the second indication came on the {second.bearer} bearer"
                await notify(characteristic="alert", value=hex_value(b"a2"))  # waits behind a1
                await notify(characteristic="stream", value=hex_value(b"s1"))
                [notified] = (await updates.wait_for(3))[2:]
                assert (notified.opcode, notified.values) == (NOTIFICATION, [(stream, b"s1")]), "a2 went out before a1 was confirmed?"
                assert notified.bearer in enhanced, f"the notification came on the {notified.bearer} bearer"
                for client in everyone:
                    client.release_confirmations()
                [fourth] = (await updates.wait_for(4))[3:]
                assert (fourth.bearer, fourth.opcode, fourth.values) == (FIXED, INDICATION, [(alert, b"a2")])
                confirmed = [await watcher.event("confirmed") for _ in range(3)]
                assert sorted(e["characteristic"] for e in confirmed) == ["alert", "alert", "bell"]
                assert {e["central"] for e in confirmed} == {address}

                await notify(values=[{"characteristic": "stream", "value": hex_value(b"s2")},
                                     {"characteristic": "level", "value": hex_value(b"L2")}])
                pair = (await updates.wait_for(6))[4:]
                assert sorted((u.opcode, u.values) for u in pair) == [
                    (NOTIFICATION, [(stream, b"s2")]), (NOTIFICATION, [(level, b"L2")])], "bit 2 not set: one PDU each"

                await write_client_features(bearers[0], 0x06)
                await notify(values=[{"characteristic": "stream", "value": hex_value(b"s3")},
                                     {"characteristic": "level", "value": hex_value(b"L3")}])
                [multiple] = (await updates.wait_for(7))[6:]
                assert (multiple.opcode, multiple.values) == (MULTIPLE_HANDLE_VALUE_NTF, [(stream, b"s3"), (level, b"L3")])
        finally:
            await watcher.close()

    run(body(), 60)


def test_an_unencrypted_link_is_refused(link):
    """Server Supported Features says EATT to anyone, but the channels need encryption: an
    unpaired central's request gets Insufficient Authentication (no bond to encrypt with)."""

    async def body():
        async with link_central(link, "C0:00:00:00:EA:04", pair=False) as connection:
            fixed = fixed_bearer_client(connection)
            assert await server_supported_features(fixed) == b"\x01"
            with pytest.raises(l2cap.L2capError) as refused:
                await open_bearers(connection, 2)
            assert refused.value.error_code == INSUFFICIENT_AUTHENTICATION

    run(body(), 30)


# ----------------------------------------------------------------------------------------
# EATT switched off
# ----------------------------------------------------------------------------------------
@both_link_layers
def test_switched_off_clears_the_bit_and_refuses_the_psm(controllers, gattd):
    """`"eatt": false`: Server Supported Features is still there (handles do not move) with
    bit 0 clear, and an encrypted central's request for PSM 0x0027 gets SPSM not supported."""
    gattd(config(eatt=False))
    address = hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)

    async def body():
        async with connected(controllers, address, "C0:00:00:00:EA:05") as connection:
            fixed = fixed_bearer_client(connection)
            assert await server_supported_features(fixed) == b"\x00"
            with pytest.raises(l2cap.L2capError) as refused:
                await open_bearers(connection, 2)
            assert refused.value.error_code == SPSM_NOT_SUPPORTED

    run(body(), 30)
