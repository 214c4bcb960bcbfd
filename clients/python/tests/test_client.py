"""Unit tests of gattd_client against a fake gattd (an asyncio Unix server in the test).

Run: python -m unittest discover -s clients/python/tests -v  (with clients/python/src on
PYTHONPATH, or the package installed). Standard library only.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gattd_client import (  # noqa: E402
    AttError,
    Bond,
    NoPairingPromptError,
    NumericComparison,
    Paired,
    PairingFailed,
    PairingRequest,
    PairingTimeout,
    PasskeyDisplay,
    PasskeyRequest,
    PersistFailed,
    UnknownBondError,
    Service,
    UnknownServiceError,
    BusyError,
    Confirmed,
    Unconfirmed,
    Connected,
    Disconnected,
    AdvertisingChanged,
    ErrorCode,
    GattdClient,
    GattdConnectionError,
    GattdError,
    GattdTimeoutError,
    MtuChanged,
    NotNotifiableError,
    Ready,
    ReadRequest,
    StateChanged,
    Subscribed,
    UnknownCharacteristicError,
    UnknownEvent,
    Unsubscribed,
    ValueTooLongError,
    WriteRequest,
    Written,
    parse_event,
)
from gattd_client import LinkChanged, RefusedError, RequestTimeoutError

Script = Callable[["Peer"], Awaitable[None]]
BOUND = 5.0  # every wait in these tests is bounded by this many seconds


class Peer:
    """The fake gattd's side of one client connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, log: List[str]) -> None:
        self.reader = reader
        self.writer = writer
        self.log = log

    async def receive(self) -> Dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), BOUND)
        if not line:
            raise EOFError("client closed")
        obj: Dict[str, Any] = json.loads(line)
        self.log.append(f"recv {json.dumps(obj, sort_keys=True)}")
        return obj

    async def send(self, *objects: Dict[str, Any]) -> None:
        for obj in objects:
            self.log.append(f"send {json.dumps(obj, sort_keys=True)}")
            self.writer.write(json.dumps(obj).encode() + b"\n")
        await self.writer.drain()

    async def ok(self, request: Dict[str, Any], **fields: Any) -> None:
        await self.send({"ok": True, **fields, "id": request["id"]})

    async def error(self, request: Dict[str, Any], code: str, message: str = "m") -> None:
        await self.send({"ok": False, "error": code, "message": message, "id": request["id"]})


class FakeGattd:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.log: List[str] = []
        self.failures: List[BaseException] = []
        self.directory = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.directory.name, "control.sock")
        self.server: asyncio.AbstractServer | None = None
        self.done = asyncio.Event()

    async def __aenter__(self) -> "FakeGattd":
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await self.script(Peer(reader, writer, self.log))
            except EOFError:
                pass
            except BaseException as error:  # reported by the test
                self.failures.append(error)
            finally:
                self.done.set()
                writer.close()

        self.server = await asyncio.start_unix_server(handle, self.path)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()
        self.directory.cleanup()

    def check(self) -> None:
        if self.failures:
            raise self.failures[0]


class ClientTest(unittest.IsolatedAsyncioTestCase):
    async def run_with(self, script: Script, body: Callable[[GattdClient, FakeGattd], Awaitable[None]],
                       **options: Any) -> FakeGattd:
        async with FakeGattd(script) as fake:
            client = await GattdClient.connect(fake.path, **options)
            try:
                await asyncio.wait_for(body(client, fake), BOUND * 2)
            finally:
                await client.close()
            await asyncio.wait_for(fake.done.wait(), BOUND)
            fake.check()
            return fake

    # ------------------------------------------------------------------ requests

    async def test_notify_sends_hex_and_returns_sent(self) -> None:
        seen: List[Dict[str, Any]] = []

        async def script(peer: Peer) -> None:
            for sent in (2, 0):
                request = await peer.receive()
                seen.append(request)
                await peer.ok(request, sent=sent)
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            self.assertEqual(await client.notify("hr", b"\x00\x48"), 2)
            self.assertEqual(await client.notify("hr", "72 bpm", central="C0:00:00:00:00:01"), 0)

        await self.run_with(script, body)
        self.assertEqual(seen[0], {"op": "notify", "characteristic": "hr", "value": {"hex": "0048"}, "id": seen[0]["id"]})
        self.assertEqual(seen[1]["value"], {"hex": b"72 bpm".hex()})
        self.assertEqual(seen[1]["central"], "C0:00:00:00:00:01")
        self.assertNotEqual(seen[0]["id"], seen[1]["id"])

    async def test_notify_many_sends_values_together_and_waits_out_busy(self) -> None:
        seen: List[Dict[str, Any]] = []

        async def script(peer: Peer) -> None:
            first = await peer.receive()
            seen.append(first)
            await peer.error(first, "busy")
            await peer.send({"event": "ready"})
            again = await peer.receive()
            seen.append(again)
            await peer.ok(again, sent=1)
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            self.assertEqual(await client.notify_many({"hr": b"\x00\x48", "t": b"\x1a"}, central="C0:00:00:00:00:01"), 1)
            with self.assertRaises(ValueError):
                await client.notify_many({})

        await self.run_with(script, body)
        self.assertEqual(seen[0], {
            "op": "notify",
            "values": [{"characteristic": "hr", "value": {"hex": "0048"}}, {"characteristic": "t", "value": {"hex": "1a"}}],
            "central": "C0:00:00:00:00:01",
            "id": seen[0]["id"],
        })
        self.assertEqual(seen[1]["values"], seen[0]["values"])

    async def test_busy_waits_for_ready_then_resends_in_order(self) -> None:
        """Two concurrent notifies: the first gets busy; the client resends it only after
        `ready` (a `ready` that came before the busy reply does not count) and sends the
        second only after the first was accepted."""

        async def script(peer: Peer) -> None:
            first = await peer.receive()
            # A stale ready (for an earlier busy) arrives just before the busy reply.
            await peer.send({"event": "ready"})
            await peer.error(first, "busy")
            await asyncio.sleep(0.3)  # the client must not resend during this
            peer.log.append("ready sent")
            await peer.send({"event": "ready"})
            again = await peer.receive()
            await peer.ok(again, sent=1)
            second = await peer.receive()
            await peer.ok(second, sent=1)
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            results = await asyncio.gather(client.notify("s", b"\x01"), client.notify("s", b"\x02"))
            self.assertEqual(results, [1, 1])

        fake = await self.run_with(script, body, ready_timeout=BOUND)
        notified = [line for line in fake.log if line.startswith("recv") and '"notify"' in line]
        self.assertEqual([json.loads(line[5:])["value"]["hex"] for line in notified], ["01", "01", "02"])
        # The resend came after the real ready, not after the stale one.
        self.assertLess(fake.log.index("ready sent"), fake.log.index(notified[1]))

    async def test_busy_without_ready_resends_after_ready_timeout(self) -> None:
        async def script(peer: Peer) -> None:
            first = await peer.receive()
            await peer.error(first, "busy")
            again = await peer.receive()
            await peer.ok(again, sent=1)
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            started = time.monotonic()
            self.assertEqual(await client.notify("s", b"x"), 1)
            self.assertGreaterEqual(time.monotonic() - started, 0.25)

        await self.run_with(script, body, ready_timeout=0.3)

    async def test_replies_matched_by_id_with_events_interleaved(self) -> None:
        async def script(peer: Peer) -> None:
            requests = [await peer.receive() for _ in range(3)]
            # Answer in reverse order, with events in between: ids decide.
            for request in reversed(requests):
                await peer.send({"event": "connected", "central": "C0:00:00:00:00:09"})
                if request["op"] == "get":
                    await peer.ok(request, value={"hex": request["characteristic"].encode().hex()})
                else:
                    await peer.ok(request, advertising=True, address="F0:F0:F0:F0:F0:01", connections=[])
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            a, status, b = await asyncio.gather(client.get("alpha"), client.status(), client.get("beta"))
            self.assertEqual((a, b), (b"alpha", b"beta"))
            self.assertTrue(status.advertising)

        await self.run_with(script, body)

    async def test_framing_split_and_joined_lines(self) -> None:
        """A reply split over several writes, lines joined in one write, and a line that is
        not JSON (ignored): the client frames by newline and keeps going."""

        async def script(peer: Peer) -> None:
            first = await peer.receive()
            line = json.dumps({"ok": True, "value": {"hex": "0102"}, "id": first["id"]}).encode() + b"\n"
            for start in range(0, len(line), 7):
                peer.writer.write(line[start:start + 7])
                await peer.writer.drain()
                await asyncio.sleep(0.01)
            second, third = await peer.receive(), await peer.receive()
            peer.writer.write(b"not json\n" + json.dumps({"event": "ready"}).encode() + b"\n"
                              + json.dumps({"ok": True, "value": {"hex": "03"}, "id": second["id"]}).encode() + b"\n"
                              + json.dumps({"ok": True, "value": {"hex": "04"}, "id": third["id"]}).encode() + b"\n")
            await peer.writer.drain()
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            self.assertEqual(await client.get("a"), b"\x01\x02")
            self.assertEqual(await asyncio.gather(client.get("b"), client.get("c")), [b"\x03", b"\x04"])

        await self.run_with(script, body)

    async def test_error_replies_raise_typed_errors(self) -> None:
        codes = ["unknown_characteristic", "value_too_long", "not_notifiable", "busy", "something_new"]

        async def script(peer: Peer) -> None:
            for code in codes:
                await peer.error(await peer.receive(), code, f"about {code}")
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            with self.assertRaises(UnknownCharacteristicError) as e1:
                await client.notify("nope", b"")
            self.assertEqual(e1.exception.code, ErrorCode.UNKNOWN_CHARACTERISTIC)
            self.assertEqual(e1.exception.code, "unknown_characteristic")
            self.assertEqual(e1.exception.message, "about unknown_characteristic")
            with self.assertRaises(ValueTooLongError):
                await client.set("c", b"x" * 600)
            with self.assertRaises(NotNotifiableError):
                await client.notify("c", b"")
            with self.assertRaises(BusyError):  # the raw request API does not retry
                await client.request({"op": "notify", "characteristic": "c", "value": {"hex": ""}})
            with self.assertRaises(GattdError) as e5:
                await client.get("c")
            self.assertIs(type(e5.exception), GattdError)
            self.assertEqual(e5.exception.code, "something_new")

        await self.run_with(script, body)

    async def test_status_parses_into_dataclasses(self) -> None:
        async def script(peer: Peer) -> None:
            request = await peer.receive()
            self.assertEqual(request["op"], "status")
            await peer.ok(request, advertising=False, address="F0:F0:F0:F0:F0:01", connections=[
                {"central": "C0:00:00:00:00:01", "address_type": "random", "mtu": 247, "security": "low",
                 "subscriptions": [{"characteristic": "hr", "notify": True, "indicate": False}], "queue": 3}],
                payloads={"advertising": "0201"}, state="powered_on",
                sets=[{"id": "primary", "advertising": False, "pdus": "legacy"}, {"id": "beacon", "advertising": True, "pdus": "legacy"}],
                controller={"address": "F0:F0:F0:F0:F0:01", "core_version": "5.2", "max_data_length": 1650, "sets_take_turns": False})
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            status = await client.status()
            self.assertFalse(status.advertising)
            self.assertEqual(status.state, "powered_on")
            self.assertEqual([(s["id"], s["advertising"]) for s in status.sets], [("primary", False), ("beacon", True)])
            assert status.controller is not None
            self.assertEqual((status.controller["core_version"], status.controller["max_data_length"]), ("5.2", 1650))
            self.assertEqual(status.address, "F0:F0:F0:F0:F0:01")
            [c] = status.connections
            self.assertEqual((c.central, c.address_type, c.mtu, c.security, c.queue),
                             ("C0:00:00:00:00:01", "random", 247, "low", 3))
            [s] = c.subscriptions
            self.assertEqual((s.characteristic, s.notify, s.indicate), ("hr", True, False))
            self.assertEqual(status.extra, {"payloads": {"advertising": "0201"}})

        await self.run_with(script, body)

    async def test_other_requests(self) -> None:
        seen: List[Dict[str, Any]] = []

        async def script(peer: Peer) -> None:
            for _ in range(8):
                request = await peer.receive()
                seen.append({k: v for k, v in request.items() if k != "id"})
                if request["op"] == "advertising_data" and request.get("set") == "long":
                    await peer.send({"ok": False, "error": "value_too_long", "message": "too long", "id": request["id"]})
                    continue
                await peer.ok(request, **({"value": {"hex": "00ff"}} if request["op"] == "get" else {}))
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            await client.set("level", "é")
            self.assertEqual(await client.get("level"), b"\x00\xff")
            await client.advertise(False)
            await client.advertise(True, set="beacon")
            await client.set_advertising_data(manufacturer_data={0xFFFF: b"\x01\x02"})
            await client.set_advertising_data("beacon", manufacturer_data=[(76, b"\x01"), (76, b"\x02")], service_data={})
            with self.assertRaises(ValueTooLongError):
                await client.set_advertising_data("long", service_data={"FEAA": bytes(40)})
            with self.assertRaises(ValueError):
                await client.set_advertising_data("beacon")
            await client.disconnect("C0:00:00:00:00:01")

        await self.run_with(script, body)
        self.assertEqual(seen, [
            {"op": "set", "characteristic": "level", "value": {"hex": "c3a9"}},
            {"op": "get", "characteristic": "level"},
            {"op": "advertise", "enable": False},
            {"op": "advertise", "enable": True, "set": "beacon"},
            {"op": "advertising_data", "manufacturer_data": [{"company_id": 65535, "data": {"hex": "0102"}}]},
            {"op": "advertising_data", "set": "beacon", "service_data": [],
             "manufacturer_data": [{"company_id": 76, "data": {"hex": "01"}}, {"company_id": 76, "data": {"hex": "02"}}]},
            {"op": "advertising_data", "set": "long", "service_data": [{"uuid": "FEAA", "data": {"hex": "00" * 40}}]},
            {"op": "disconnect", "central": "C0:00:00:00:00:01"},
        ])

    async def test_pairing_prompts_answers_and_bonds(self) -> None:
        seen: List[Dict[str, Any]] = []
        bond = {"central": "C0:00:00:00:00:01", "address_type": "random", "authenticated": True,
                "secure_connections": True, "key_size": 16, "irk": True, "created": 1790000000}

        async def script(peer: Peer) -> None:
            for _ in range(6):
                request = await peer.receive()
                seen.append({k: v for k, v in request.items() if k != "id"})
                if request["op"] == "bonds":
                    await peer.ok(request, bonds=[bond])
                elif request.get("passkey") == 13:
                    await peer.error(request, "no_pairing_prompt")
                elif request["op"] == "unbond" and request["central"] == "C0:00:00:00:00:09":
                    await peer.error(request, "unknown_bond")
                else:
                    await peer.ok(request)
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            await client.pairing_respond("C0:00:00:00:00:01", confirm=True)
            await client.pairing_respond(passkey=123456)
            with self.assertRaises(NoPairingPromptError):
                await client.pairing_respond(passkey=13)
            self.assertEqual(await client.bonds(), [Bond("C0:00:00:00:00:01", "random", True, True, 16, True, 1790000000)])
            await client.unbond("C0:00:00:00:00:01")
            with self.assertRaises(UnknownBondError):
                await client.unbond("C0:00:00:00:00:09")

        await self.run_with(script, body)
        self.assertEqual(seen, [
            {"op": "pairing_respond", "central": "C0:00:00:00:00:01", "confirm": True},
            {"op": "pairing_respond", "passkey": 123456},
            {"op": "pairing_respond", "passkey": 13},
            {"op": "bonds"},
            {"op": "unbond", "central": "C0:00:00:00:00:01"},
            {"op": "unbond", "central": "C0:00:00:00:00:09"},
        ])

    async def test_runtime_services(self) -> None:
        seen: List[Dict[str, Any]] = []
        added = {"id": "extra", "uuid": "5E60", "start": 40, "end": 42, "runtime": True}

        async def script(peer: Peer) -> None:
            for _ in range(4):
                request = await peer.receive()
                seen.append({k: v for k, v in request.items() if k != "id"})
                if request["op"] == "add_service":
                    await peer.ok(request, services=[added])
                elif request["op"] == "list_services":
                    await peer.ok(request, services=[dict(added, restored=True)])
                elif request["service"] == "nope":
                    await peer.error(request, "unknown_service")
                else:
                    await peer.ok(request)
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            service = {"id": "extra", "uuid": "5E60", "characteristics": []}
            self.assertEqual(await client.add_service(service), Service("extra", "5E60", 40, 42, True))
            self.assertEqual(await client.list_services(), [Service("extra", "5E60", 40, 42, True, restored=True)])
            await client.remove_service("extra")
            with self.assertRaises(UnknownServiceError):
                await client.remove_service("nope")

        await self.run_with(script, body)
        self.assertEqual([s["op"] for s in seen], ["add_service", "list_services", "remove_service", "remove_service"])
        self.assertEqual(seen[0]["service"]["uuid"], "5E60")

    async def test_connection_parameters_and_link_events(self) -> None:
        seen: List[Dict[str, Any]] = []

        async def script(peer: Peer) -> None:
            for n in range(4):
                request = await peer.receive()
                seen.append({k: v for k, v in request.items() if k != "id"})
                if n == 3:
                    await peer.send({"ok": False, "error": "timeout", "id": request["id"],
                                     "message": "C0:00:00:00:00:01: no answer within 20 s"})
                    continue
                if n == 2:
                    await peer.send({"ok": False, "error": "refused", "id": request["id"],
                                     "message": "C0:00:00:00:00:01: the central rejected the L2CAP Connection Parameter Update Request (result 1)"})
                    continue
                await peer.ok(request)
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            await client.connection_parameters("C0:00:00:00:00:01", preset="low_latency")
            await client.connection_parameters(interval_ms=(30, 45), latency=0, timeout_ms=4000)
            with self.assertRaises(RefusedError) as refused:
                await client.connection_parameters("C0:00:00:00:00:01", preset="low_power")
            self.assertIn("rejected", refused.exception.message)
            with self.assertRaises(RequestTimeoutError):
                await client.phy("C0:00:00:00:00:01", tx="2m", rx="2m")

        await self.run_with(script, body)
        self.assertEqual(seen, [
            {"op": "connection_parameters", "central": "C0:00:00:00:00:01", "preset": "low_latency"},
            {"op": "connection_parameters", "interval_ms": [30, 45], "latency": 0, "timeout_ms": 4000},
            {"op": "connection_parameters", "central": "C0:00:00:00:00:01", "preset": "low_power"},
            {"op": "phy", "central": "C0:00:00:00:00:01", "tx": "2m", "rx": "2m"},
        ])
        a = "C0:00:00:00:00:01"
        self.assertEqual(parse_event({"event": "link", "central": a, "interval_ms": 11.25, "latency": 0, "timeout_ms": 2000,
                                      "tx_phy": "2m", "rx_phy": "1m", "tx_octets": 251, "rx_octets": 27}),
                         LinkChanged(a, 11.25, 0, 2000, "2m", "1m", 251, 27))
        self.assertEqual(parse_event({"event": "link", "central": a, "interval_ms": None, "latency": None, "timeout_ms": None,
                                      "tx_phy": None, "rx_phy": None, "tx_octets": None, "rx_octets": None}), LinkChanged(a))

    def test_pairing_events_are_typed(self) -> None:
        a = "C0:00:00:00:00:01"
        self.assertEqual(parse_event({"event": "pairing_request", "central": a, "method": "just_works",
                                      "io_capability": "keyboard_only"}), PairingRequest(a, "just_works", "keyboard_only"))
        self.assertEqual(parse_event({"event": "passkey_display", "central": a, "passkey": "000042"}), PasskeyDisplay(a, "000042"))
        self.assertEqual(parse_event({"event": "numeric_comparison", "central": a, "value": "123456"}), NumericComparison(a, "123456"))
        self.assertEqual(parse_event({"event": "passkey_request", "central": a}), PasskeyRequest(a))
        self.assertEqual(parse_event({"event": "paired", "central": a, "identity": a, "bonded": True, "authenticated": False,
                                      "secure_connections": True, "key_size": 16}), Paired(a, a, True, False, True, 16))
        self.assertEqual(parse_event({"event": "pairing_failed", "central": a, "reason": "dhkey_check_failed", "by_central": False}),
                         PairingFailed(a, "dhkey_check_failed", False))
        self.assertEqual(parse_event({"event": "pairing_timeout", "central": a}), PairingTimeout(a))
        self.assertEqual(parse_event({"event": "persist_failed", "characteristic": "c", "message": "m"}), PersistFailed(None, "c", "m"))
        self.assertEqual(parse_event({"event": "paired", "central": a}).name, "paired")  # malformed: unknown, never raises

    def test_state_and_advertising_events_are_typed(self) -> None:
        self.assertEqual(parse_event({"event": "state", "state": "powered_on"}), StateChanged("powered_on"))
        self.assertEqual(parse_event({"event": "state", "state": "powered_off", "reason": "hci0 is down"}),
                         StateChanged("powered_off", "hci0 is down"))
        self.assertEqual(parse_event({"event": "advertising", "set": "primary", "state": "started"}),
                         AdvertisingChanged("primary", "started"))
        self.assertEqual(parse_event({"event": "advertising", "set": "beacon", "state": "failed", "reason": "Command Disallowed"}),
                         AdvertisingChanged("beacon", "failed", "Command Disallowed"))
        self.assertIsInstance(parse_event({"event": "state", "state": "powered_on", "reason": 7}), UnknownEvent)

    async def test_request_timeout_then_connection_still_usable(self) -> None:
        async def script(peer: Peer) -> None:
            slow = await peer.receive()
            second = await peer.receive()
            await peer.ok(slow, value={"hex": "01"})  # too late: ignored
            await peer.ok(second, value={"hex": "02"})
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            client.request_timeout = 0.2
            with self.assertRaises(GattdTimeoutError):
                await client.get("slow")
            client.request_timeout = BOUND
            self.assertEqual(await client.get("second"), b"\x02")

        await self.run_with(script, body)

    # ------------------------------------------------------------------ events

    async def test_events_are_typed_and_watch_is_sent_once(self) -> None:
        events: List[Dict[str, Any]] = [
            {"event": "connected", "central": "A"},
            {"event": "mtu", "central": "A", "mtu": 100},
            {"event": "subscribed", "central": "A", "characteristic": "hr", "notify": True, "indicate": False},
            {"event": "unsubscribed", "central": "A", "characteristic": "hr", "notify": False, "indicate": False},
            {"event": "written", "central": "A", "characteristic": "label", "value": {"hex": "6869"}},
            {"event": "read_request", "central": "A", "request": 7, "characteristic": "ctl", "offset": 0},
            {"event": "write_request", "central": "A", "request": 8, "characteristic": "ctl", "offset": 0, "value": {"hex": "01"}},
            {"event": "ready"},
            {"event": "confirmed", "central": "A", "characteristic": "alert"},
            {"event": "unconfirmed", "central": "A", "characteristic": "alert", "reason": "bearer_closed"},
            {"event": "persist_failed", "message": "disk full"},
            {"event": "connected"},  # malformed: still no exception
            {"event": "disconnected", "central": "A", "reason": "remote_user_terminated_connection"},
        ]
        watches: List[Dict[str, Any]] = []

        async def script(peer: Peer) -> None:
            watch = await peer.receive()
            watches.append(watch)
            await peer.ok(watch)
            await peer.send(*events)
            request = await peer.receive()  # only a status: no second watch
            await peer.ok(request, advertising=True, address="X", connections=[])
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            first, second = client.events(), client.events()
            async with first as stream:
                got = [await stream.next(BOUND) for _ in events]
                self.assertEqual(await second.next(BOUND), got[0])
                await client.status()
            self.assertEqual(got, [
                Connected("A"), MtuChanged("A", 100), Subscribed("A", "hr", True, False), Unsubscribed("A", "hr"),
                Written("A", "label", b"hi"), ReadRequest("A", 7, "ctl", 0), WriteRequest("A", 8, "ctl", 0, b"\x01"),
                Ready(), Confirmed("A", "alert"), Unconfirmed("A", "alert", "bearer_closed"),
                UnknownEvent("persist_failed", {"event": "persist_failed", "message": "disk full"}),
                UnknownEvent("connected", {"event": "connected"}),
                Disconnected("A", "remote_user_terminated_connection"),
            ])
            self.assertEqual([e.name for e in got][:3], ["connected", "mtu", "subscribed"])
            self.assertEqual(got[10].name, "persist_failed")

        await self.run_with(script, body)
        self.assertEqual([w["op"] for w in watches], ["watch"])

    async def test_wait_for_skips_other_events(self) -> None:
        async def script(peer: Peer) -> None:
            await peer.ok(await peer.receive())
            await peer.send({"event": "connected", "central": "A"}, {"event": "connected", "central": "B"},
                            {"event": "subscribed", "central": "B", "characteristic": "x", "notify": False, "indicate": True})
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            async with client.events() as stream:
                b = await stream.wait_for(Connected, BOUND, where=lambda e: e.central == "B")
                self.assertEqual(b.central, "B")
                s = await stream.wait_for(Subscribed, BOUND)
                self.assertTrue(s.indicate)
                with self.assertRaises(asyncio.TimeoutError):
                    await stream.wait_for(Ready, 0.1)

        await self.run_with(script, body)

    async def test_connection_lost_fails_requests_and_event_streams(self) -> None:
        async def script(peer: Peer) -> None:
            await peer.ok(await peer.receive())  # watch
            await peer.receive()  # a get, never answered: gattd goes away

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            stream = client.events()
            await stream.started()
            with self.assertRaises(GattdConnectionError):
                await client.get("x")
            with self.assertRaises(GattdConnectionError):
                await stream.next(BOUND)
            self.assertTrue(client.closed)
            with self.assertRaises(GattdConnectionError):
                await client.status()

        await self.run_with(script, body)

    async def test_close_ends_event_iteration(self) -> None:
        async def script(peer: Peer) -> None:
            await peer.ok(await peer.receive())
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            stream = client.events()
            await stream.started()

            async def collect() -> List[Any]:
                return [event async for event in stream]

            collector = asyncio.ensure_future(collect())
            await asyncio.sleep(0)
            await client.close()
            self.assertEqual(await asyncio.wait_for(collector, BOUND), [])

        await self.run_with(script, body)

    async def test_connect_errors_and_wait(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "control.sock")
            with self.assertRaises(GattdConnectionError) as error:
                await GattdClient.connect(path)
            self.assertIn("not running", str(error.exception))

            async def late_server() -> asyncio.AbstractServer:
                await asyncio.sleep(0.3)
                return await asyncio.start_unix_server(lambda r, w: None, path)

            starting = asyncio.ensure_future(late_server())
            async with GattdClient.connect(path, wait=BOUND) as client:
                self.assertFalse(client.closed)
            server = await starting
            server.close()
            await server.wait_closed()

    # ------------------------------------------------------------------ responder

    async def test_responder_answers_with_handlers(self) -> None:
        answers: List[Dict[str, Any]] = []
        answered = asyncio.Event()
        requests = [
            {"event": "read_request", "central": "A", "request": 1, "characteristic": "ctl", "offset": 0},
            {"event": "read_request", "central": "A", "request": 2, "characteristic": "ctl", "offset": 3},
            {"event": "write_request", "central": "A", "request": 3, "characteristic": "ctl", "offset": 0, "value": {"hex": "0102"}},
            {"event": "write_request", "central": "A", "request": 4, "characteristic": "ctl", "offset": 0, "value": {"hex": "ff"}},
            {"event": "read_request", "central": "A", "request": 5, "characteristic": "broken", "offset": 0},
            {"event": "read_request", "central": "A", "request": 6, "characteristic": "ctl", "offset": 99},
            {"event": "read_request", "central": "A", "request": 7, "characteristic": "nobody", "offset": 0},
            {"event": "read_request", "central": "A", "request": 8, "characteristic": "text", "offset": 0},
        ]

        async def script(peer: Peer) -> None:
            watch = await peer.receive()
            self.assertEqual({k: v for k, v in watch.items() if k != "id"}, {"op": "watch", "requests": True})
            await peer.ok(watch)
            await peer.send(*requests)
            for _ in range(7):  # 7 of 8 answered: "nobody" has no handler
                answer = await peer.receive()
                answers.append({k: v for k, v in answer.items() if k != "id"})
                await peer.ok(answer)
            answered.set()
            await peer.receive()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            written: List[bytes] = []

            @client.on_read("ctl")
            def read_ctl(request: ReadRequest) -> bytes:
                return b"hello world"

            @client.on_write("ctl")
            async def write_ctl(request: WriteRequest) -> None:
                await asyncio.sleep(0)
                if request.value == b"\xff":
                    raise AttError("value_not_allowed")
                written.append(request.value)

            @client.on_read("broken")
            def broken(request: ReadRequest) -> bytes:
                raise RuntimeError("bug")

            @client.on_read("text")
            async def text(request: ReadRequest) -> str:
                return "é"

            serving = asyncio.ensure_future(client.serve())
            await asyncio.wait_for(answered.wait(), BOUND)
            self.assertEqual(written, [b"\x01\x02"])
            await client.close()
            await asyncio.wait_for(serving, BOUND)  # returns when closed by the client

        await self.run_with(script, body)
        by_request = {a["request"]: a for a in answers}
        self.assertEqual(by_request[1], {"op": "respond", "request": 1, "status": "success", "value": {"hex": b"hello world".hex()}})
        self.assertEqual(by_request[2]["value"], {"hex": b"lo world".hex()})
        self.assertEqual(by_request[3], {"op": "respond", "request": 3, "status": "success"})
        self.assertEqual(by_request[4], {"op": "respond", "request": 4, "status": "value_not_allowed"})
        self.assertEqual(by_request[5], {"op": "respond", "request": 5, "status": "unlikely_error"})
        self.assertEqual(by_request[6]["status"], "invalid_offset")
        self.assertEqual(by_request[8]["value"], {"hex": "c3a9"})
        self.assertNotIn(7, by_request)

    async def test_unhandled_requests_answered_when_asked(self) -> None:
        async def script(peer: Peer) -> None:
            await peer.ok(await peer.receive())
            await peer.send({"event": "write_request", "central": "A", "request": 9, "characteristic": "x", "offset": 0,
                             "value": {"hex": ""}})
            answer = await peer.receive()
            self.assertEqual(answer["status"], "request_not_supported")
            await peer.ok(answer)
            answered.set()
            await peer.receive()

        answered = asyncio.Event()

        async def body(client: GattdClient, fake: FakeGattd) -> None:
            await client.start_serving(unhandled="request_not_supported")
            await asyncio.wait_for(answered.wait(), BOUND)

        await self.run_with(script, body)

    def test_att_error_names_and_codes(self) -> None:
        self.assertEqual(AttError(0x13).name, "value_not_allowed")
        self.assertEqual(AttError("write_request_rejected").code, 0xFC)
        with self.assertRaises(ValueError):
            AttError("no_such_error")

    def test_parse_event_never_raises(self) -> None:
        samples: List[Dict[str, Any]] = [{"event": 5}, {"event": "written", "central": "A", "characteristic": "c", "value": {"hex": "zz"}},
                    {"event": "mtu", "central": "A", "mtu": "big"}]
        for obj in samples:
            self.assertIsInstance(parse_event(obj), UnknownEvent)


if __name__ == "__main__":
    unittest.main()
