"""The control socket end to end: gattd on a virtual controller, a Bumble central on
another, and the test driving gattd through its control socket."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import struct
import time

import pytest

from bumble import att
from bumble.core import UUID

from advertising_commands import wait_for_enable
from control_client import ControlClient, hex_value
from harness import (
    att_round_trip,
    both_link_layers,
    bumble_device,
    connect,
    find_characteristic,
    named,
    read,
    record_updates,
    run,
    scan_for,
    subscribe,
    wait_for_log,
    write,
)


def uuid(n: int) -> str:
    return f"7a1c{n:04x}-0000-4000-8000-000000000000"


CONFIG = """{
  "name": "Ctl Test",
  "advertising": { "local_name": "CTL", "interval_ms": [20, 30] },
  "services": [
    { "id": "svc", "uuid": "%s", "characteristics": [
        { "id": "stream", "uuid": "%s", "properties": ["notify"], "max_length": 20 },
        { "id": "alert", "uuid": "%s", "properties": ["indicate"], "max_length": 20 },
        { "id": "ctl", "uuid": "%s", "properties": ["read", "write"], "handler": "control", "max_length": 512 },
        { "id": "label", "uuid": "%s", "properties": ["read", "write"], "persist": true, "max_length": 64,
          "value": { "utf8": "default" } } ] }
  ]
}
""" % (uuid(0), uuid(1), uuid(2), uuid(3), uuid(4))

CENTRAL_ADDRESS = "C0:00:00:00:00:01"


async def connect_central(controllers, index=1, address=CENTRAL_ADDRESS):
    device_cm = bumble_device(controllers[index], f"central-{index}", address)
    device = await device_cm.__aenter__()
    advertisement = await scan_for(device, named("CTL"))
    peer = await connect(device, advertisement.address)
    return device_cm, peer


async def close_central(device_cm, peer=None):
    if peer is not None:
        try:
            await asyncio.wait_for(peer.connection.disconnect(), 5)
        except Exception:
            pass
    await device_cm.__aexit__(None, None, None)


@both_link_layers
def test_notify_values_arrive_in_order(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        device_cm, peer = await connect_central(controllers)
        values = await subscribe(peer, uuid(1))
        for n in range(50):
            reply = await control.request({"op": "notify", "characteristic": "stream", "value": hex_value(bytes([n, 0xAA])), "id": n})
            assert reply == {"ok": True, "sent": 1, "id": n}
        received = [await asyncio.wait_for(values.get(), 5) for _ in range(50)]
        assert received == [bytes([n, 0xAA]) for n in range(50)]
        assert (await control.request({"op": "get", "characteristic": "stream"}))["value"] == {"hex": "31aa"}
        status = await control.request({"op": "status"})
        [central] = status["connections"]
        assert central["central"] == CENTRAL_ADDRESS
        assert central["address_type"] == "random"
        assert central["security"] == "low"
        assert central["subscriptions"] == [{"characteristic": "stream", "notify": True, "indicate": False}]
        await close_central(device_cm)
        await control.close()

    run(body())


@both_link_layers
@pytest.mark.parametrize("controller_count", [3])
def test_unsubscribed_central_gets_nothing(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        cm1, peer1 = await connect_central(controllers, 1, "C0:00:00:00:00:01")
        cm2, peer2 = await connect_central(controllers, 2, "C0:00:00:00:00:02")
        got1 = await subscribe(peer1, uuid(1))
        got2 = await subscribe(peer2, uuid(1))
        await find_characteristic(peer2, uuid(1)).unsubscribe()
        # Bumble drops notifications nobody subscribed to: record what reaches peer2 at all
        # (and peer1, to show the recorder sees what arrives).
        updates1 = record_updates(peer1)
        updates2 = record_updates(peer2)
        reply = await control.request({"op": "notify", "characteristic": "stream", "value": hex_value(b"\x01")})
        assert reply == {"ok": True, "sent": 1}
        assert await asyncio.wait_for(got1.get(), 5) == b"\x01"
        # Targeted at one central.
        reply = await control.request({"op": "notify", "characteristic": "stream", "value": hex_value(b"\x02"),
                                       "central": "C0:00:00:00:00:01"})
        assert reply == {"ok": True, "sent": 1}
        assert await asyncio.wait_for(got1.get(), 5) == b"\x02"
        # Nothing reached peer2: a round trip behind both notifications (see att_round_trip).
        await att_round_trip(peer2)
        assert updates2 == []
        assert got2.empty()
        assert [value for _, value in updates1] == [b"\x01", b"\x02"]
        status = await control.request({"op": "status"})
        by_address = {c["central"]: c for c in status["connections"]}
        assert by_address["C0:00:00:00:00:02"]["subscriptions"] == []
        # Nobody subscribed to alert: sent 0, value still set.
        assert await control.request({"op": "notify", "characteristic": "alert", "value": hex_value(b"\x09")}) == {"ok": True, "sent": 0}
        assert (await control.request({"op": "get", "characteristic": "alert"}))["value"] == {"hex": "09"}
        await close_central(cm1)
        await close_central(cm2)
        await control.close()

    run(body())


@both_link_layers
def test_indication_confirmed_event(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        assert (await control.event("connected")) == {"event": "connected", "central": CENTRAL_ADDRESS}
        values = await subscribe(peer, uuid(2), prefer_notify=False)
        assert await control.event("subscribed") == {"event": "subscribed", "central": CENTRAL_ADDRESS,
                                                     "characteristic": "alert", "notify": False, "indicate": True}
        reply = await control.request({"op": "notify", "characteristic": "alert", "value": hex_value(b"hi")})
        assert reply == {"ok": True, "sent": 1}
        assert await asyncio.wait_for(values.get(), 5) == b"hi"
        assert await control.event("confirmed") == {"event": "confirmed", "central": CENTRAL_ADDRESS, "characteristic": "alert"}
        await close_central(device_cm, peer)
        event = await control.event("disconnected")
        assert event["central"] == CENTRAL_ADDRESS and isinstance(event["reason"], str)
        await control.close()

    run(body())


@both_link_layers
def test_burst_of_10000_notifications_with_busy_and_ready(controllers, gattd, tmp_path):
    gattd(CONFIG)
    total = 10_000

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        device_cm, peer = await connect_central(controllers)
        received: list[bytes] = []
        done = asyncio.Event()

        def on_value(value):
            received.append(bytes(value))
            if len(received) == total:
                done.set()

        await find_characteristic(peer, uuid(1)).subscribe(on_value)
        # One request at a time: a `busy` reply means nothing changed, so the
        # value is resent after `ready` (pipelining past a busy would reorder).
        busy = 0
        started = time.monotonic()
        for n in range(total):
            while True:
                reply = await control.request({"op": "notify", "characteristic": "stream",
                                               "value": hex_value(struct.pack("<I", n)), "id": n}, timeout=20)
                assert reply["id"] == n
                if reply["ok"]:
                    assert reply["sent"] == 1
                    break
                assert reply["error"] == "busy", reply
                busy += 1
                await control.event("ready", timeout=20)
        pushed = time.monotonic() - started
        await asyncio.wait_for(done.wait(), 120)
        # No more than `total` (no duplicates): a round trip behind them (see att_round_trip).
        await att_round_trip(peer)
        assert len(received) == total
        assert [struct.unpack("<I", v)[0] for v in received] == list(range(total))
        print(f"{total} notifications pushed in {pushed:.1f} s, {busy} busy replies")
        await close_central(device_cm)
        await control.close()

    run(body(), timeout=240)


async def pipelined_burst(controllers, tmp_path, total: int, extra: dict | None = None, then: dict | None = None):
    """A control client and a central subscribed to `stream`; `total` notify requests (value:
    the little-endian sequence number; `extra` members added) written at once, then `then`.
    Returns the client, the central and the list the received sequence numbers go to."""
    control = await ControlClient.open(tmp_path / "control.sock")
    device_cm, peer = await connect_central(controllers)
    received: list[int] = []
    await find_characteristic(peer, uuid(1)).subscribe(lambda v: received.append(struct.unpack("<I", bytes(v))[0]))
    for n in range(total):
        control.send({"op": "notify", "characteristic": "stream", "value": hex_value(struct.pack("<I", n)), "id": n}
                     | (extra or {}))
    if then:
        control.send(then)
    await control.writer.drain()
    return control, device_cm, peer, received


@both_link_layers
def test_pipelined_burst_gets_busy_then_ready(controllers, gattd, tmp_path):
    """2,000 notify requests written at once: the transmit queue fills, later requests get
    `busy` (and change nothing), the client gets `ready` without watching, and the central
    receives exactly the accepted values, once each, in order."""
    gattd(CONFIG)
    total = 2_000

    async def body():
        control, device_cm, peer, received = await pipelined_burst(controllers, tmp_path, total)
        replies = [await control.reply(20) for _ in range(total)]
        assert [r["id"] for r in replies] == list(range(total))
        accepted = [r["id"] for r in replies if r["ok"]]
        busy = [r["id"] for r in replies if not r["ok"]]
        assert all(r["error"] == "busy" for r in replies if not r["ok"])
        assert busy, "the queue never filled: busy/ready untested"
        ready = await control.event("ready", timeout=10)
        assert ready == {"event": "ready"}
        deadline = time.monotonic() + 30
        while len(received) < len(accepted) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # polls the received values, bounded by the deadline
        # And nothing after them: a round trip behind the accepted values (see att_round_trip).
        await att_round_trip(peer)
        assert received == accepted
        # The stored value is the last accepted one (busy changed nothing).
        value = (await control.request({"op": "get", "characteristic": "stream"}))["value"]["hex"]
        assert value == struct.pack("<I", accepted[-1]).hex()
        await close_central(device_cm, peer)
        await control.close()

    run(body(), timeout=90)


@both_link_layers
def test_pipelined_burst_with_wait_delivers_every_value_in_order(controllers, gattd, tmp_path):
    """2,000 notify requests with `"wait": true` written at once: the transmit queue fills,
    and instead of `busy` gattd waits for room (holding the connection's later requests), so
    every request is answered `sent` in order, no `ready` is owed, and the central receives
    all 2,000 values in order. A `get` pipelined behind them sees the last value."""
    gattd(CONFIG)
    total = 2_000

    async def body():
        control, device_cm, peer, received = await pipelined_burst(
            controllers, tmp_path, total, {"wait": True}, then={"op": "get", "characteristic": "stream", "id": "last"})
        replies = [await control.reply(30) for _ in range(total + 1)]
        assert replies[:total] == [{"ok": True, "sent": 1, "id": n} for n in range(total)]
        assert replies[total] == {"ok": True, "value": {"hex": struct.pack("<I", total - 1).hex()}, "id": "last"}
        deadline = time.monotonic() + 30
        while len(received) < total and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # polls the received values, bounded by the deadline
        assert received == list(range(total))
        assert control.events.empty(), "a waiting client is owed no ready event"
        await close_central(device_cm, peer)
        await control.close()

    run(body(), timeout=120)


@pytest.mark.parametrize("link_layer", ["bumble"])  # batch_completions is a Bumble link option
@pytest.mark.parametrize("batch_completions", [True], ids=["completions-batched"])
def test_pipelined_burst_with_batched_completions(controllers, gattd, tmp_path):
    """The same burst on controllers that report the completions of a batch of ACL packets in
    one Number Of Completed Packets event (as a real controller reports a connection event's
    worth): the btsnoop capture shows events completing several packets at once, every packet
    gattd sent is completed exactly once, and every value arrives in order."""
    from test_capture import parse_btsnoop

    capture = tmp_path / "capture.btsnoop"
    process = gattd(CONFIG, extra_args=["--btsnoop", str(capture)])
    total = 2_000

    async def body():
        control, device_cm, peer, received = await pipelined_burst(controllers, tmp_path, total, {"wait": True})
        replies = [await control.reply(30) for _ in range(total)]
        assert replies == [{"ok": True, "sent": 1, "id": n} for n in range(total)]
        deadline = time.monotonic() + 30
        while len(received) < total and time.monotonic() < deadline:
            await asyncio.sleep(0.05)  # polls the received values, bounded by the deadline
        assert received == list(range(total))
        await close_central(device_cm, peer)
        await control.close()

    run(body(), timeout=120)
    assert process.stop() == 0
    records = parse_btsnoop(capture.read_bytes())
    acl_sent = sum(1 for flags, _, packet in records if flags == 0 and packet[0] == 0x02)
    completions = []  # Number Of Completed Packets (Core Spec Vol 4 Part E §7.7.19): H4 0x04, code 0x13
    for flags, _, packet in records:
        if flags == 3 and packet[:2] == b"\x04\x13":
            handles = packet[3]
            completions += [int.from_bytes(packet[6 + 4 * i:8 + 4 * i], "little") for i in range(handles)]
    assert acl_sent >= total
    assert max(completions) > 1, "no event completed more than one packet: the controllers did not batch"
    assert sum(completions) == acl_sent


def test_control_read_and_write_round_trip(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch", "requests": True}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)

        async def answer_read(value: bytes):
            event = await control.event("read_request")
            assert event["central"] == CENTRAL_ADDRESS and event["characteristic"] == "ctl"
            reply = await control.request({"op": "respond", "request": event["request"], "status": "success",
                                           "value": hex_value(value[event["offset"]:])})
            assert reply == {"ok": True}
            return event

        # Read.
        reader = asyncio.ensure_future(read(peer, uuid(3)))
        await answer_read(b"from-client")
        assert await reader == b"from-client"

        # Write accepted.
        writer = asyncio.ensure_future(write(peer, uuid(3), b"\x01\x02\x03"))
        event = await control.event("write_request")
        assert event["value"] == {"hex": "010203"} and event["offset"] == 0 and event["characteristic"] == "ctl"
        assert await control.request({"op": "respond", "request": event["request"], "status": "success"}) == {"ok": True}
        await writer

        # Write refused with an ATT error.
        writer = asyncio.ensure_future(write(peer, uuid(3), b"\x09"))
        event = await control.event("write_request")
        assert await control.request({"op": "respond", "request": event["request"], "status": "write_not_permitted"}) == {"ok": True}
        with pytest.raises(att.ATT_Error) as error:
            await writer
        assert error.value.error_code == 0x03

        # Long write (Prepare/Execute at MTU 23): one write_request with the whole value.
        long_value = bytes(range(256)) + bytes(range(44))
        writer = asyncio.ensure_future(write(peer, uuid(3), long_value))
        event = await control.event("write_request", timeout=15)
        assert event["value"] == {"hex": long_value.hex()}
        assert await control.request({"op": "respond", "request": event["request"], "status": "success"}) == {"ok": True}
        await writer

        # A second answer to the same request is refused.
        late = await control.request({"op": "respond", "request": event["request"], "status": "success"})
        assert late["ok"] is False and late["error"] == "unknown_request"
        await close_central(device_cm)
        await control.close()

    run(body(), timeout=60)


def test_control_request_timeout(controllers, gattd, tmp_path):
    gattd(CONFIG, extra_args=["--request-timeout", "1"])

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch", "requests": True}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        started = time.monotonic()
        reader = asyncio.ensure_future(read(peer, uuid(3)))
        event = await control.event("read_request")
        with pytest.raises(att.ATT_Error) as error:
            await reader
        assert error.value.error_code == 0x0E  # Unlikely Error
        assert 0.8 < time.monotonic() - started < 4
        late = await control.request({"op": "respond", "request": event["request"], "status": "success", "value": hex_value(b"x")})
        assert late["ok"] is False and late["error"] == "unknown_request"
        await close_central(device_cm)
        await control.close()

    run(body())


def test_control_characteristic_without_watcher(controllers, gattd, tmp_path):
    """No responder: reads get the stored value, writes get Write Request Rejected (0xFC);
    a responder leaving fails its pending request at once (Unlikely Error)."""
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        device_cm, peer = await connect_central(controllers)
        assert await control.request({"op": "set", "characteristic": "ctl", "value": hex_value(b"stored")}) == {"ok": True}
        assert await read(peer, uuid(3)) == b"stored"
        with pytest.raises(att.ATT_Error) as error:
            await write(peer, uuid(3), b"\x01")
        assert error.value.error_code == 0xFC
        watcher = await ControlClient.open(tmp_path / "control.sock")
        assert await watcher.request({"op": "watch", "requests": True}) == {"ok": True}
        reader = asyncio.ensure_future(read(peer, uuid(3)))
        await watcher.event("read_request")
        started = time.monotonic()
        await watcher.close()
        with pytest.raises(att.ATT_Error) as error:
            await reader
        assert error.value.error_code == 0x0E
        assert time.monotonic() - started < 2
        await close_central(device_cm)
        await control.close()

    run(body())


@both_link_layers
def test_advertise_and_disconnect_ops(controllers, gattd, tmp_path):
    process = gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        await control.event("connected")
        assert await control.request({"op": "disconnect", "central": CENTRAL_ADDRESS.lower()}) == {"ok": True}
        event = await control.event("disconnected")
        # gattd disconnected: its controller reports Connection Terminated By Local Host (0x16).
        assert event == {"event": "disconnected", "central": CENTRAL_ADDRESS, "reason": "connection_terminated_by_local_host"}
        off_at = time.time()
        log_start = len(process.log())
        assert await control.request({"op": "advertise", "enable": False}) == {"ok": True}
        await wait_for_enable(controllers[0], on=False, after=off_at)
        await wait_for_log(process, r"advertising stopped", start=log_start)
        assert (await control.request({"op": "status"}))["advertising"] is False
        device = peer.connection.device
        with pytest.raises((asyncio.TimeoutError, TimeoutError)):
            await scan_for(device, named("CTL"), timeout=1.0)
        assert await control.request({"op": "advertise", "enable": True}) == {"ok": True}
        await scan_for(device, named("CTL"), timeout=5.0)
        assert (await control.request({"op": "status"}))["advertising"] is True
        await close_central(device_cm)
        await control.close()

    run(body())


@both_link_layers
def test_state_and_advertising_events(controllers, gattd, tmp_path):
    """Core Bluetooth's peripheralManagerDidUpdateState and didStartAdvertising as control
    events: `status` says the controller is powered on; `advertise` off and on reach a watcher
    as the primary set's advertising stopped and started."""
    process = gattd(CONFIG)

    async def body():
        await wait_for_log(process, r"advertising as")  # the controller is up
        control = await ControlClient.open(tmp_path / "control.sock")
        assert (await control.request({"op": "status"}))["state"] == "powered_on"
        assert await control.request({"op": "watch"}) == {"ok": True}
        assert await control.request({"op": "advertise", "enable": False}) == {"ok": True}
        assert await control.event("advertising") == {"event": "advertising", "set": "primary", "state": "stopped"}
        assert await control.request({"op": "advertise", "enable": True}) == {"ok": True}
        assert await control.event("advertising") == {"event": "advertising", "set": "primary", "state": "started"}
        await control.close()

    run(body())


def test_written_event_and_mtu_event(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        await peer.request_mtu(100)
        event = await control.event("mtu")
        assert event == {"event": "mtu", "central": CENTRAL_ADDRESS, "mtu": 100}
        await write(peer, uuid(4), b"kitchen")
        assert await control.event("written") == {"event": "written", "central": CENTRAL_ADDRESS,
                                                   "characteristic": "label", "value": {"hex": b"kitchen".hex()}}
        await close_central(device_cm)
        await control.close()

    run(body())


def test_persisted_values_survive_restart(controllers, gattd, tmp_path):
    first = gattd(CONFIG)

    async def body():
        device_cm, peer = await connect_central(controllers)
        await write(peer, uuid(4), b"kitchen")
        await close_central(device_cm)
        first.stop()
        second = gattd(CONFIG)
        device_cm, peer = await connect_central(controllers)
        assert await read(peer, uuid(4)) == b"kitchen"
        # Set through the socket, then restart again.
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "set", "characteristic": "label", "value": {"utf8": "hall"}}) == {"ok": True}
        await control.close()
        await close_central(device_cm)
        assert second.stop() == 0
        third = gattd(CONFIG)
        device_cm, peer = await connect_central(controllers)
        assert await read(peer, uuid(4)) == b"hall"
        await close_central(device_cm)
        third.stop()

    run(body())
    state = json.loads((tmp_path / "state" / "values.json").read_text())
    assert state["values"]["label"] == {"hex": b"hall".hex()}


def test_persisted_value_survives_kill_9_during_writes(controllers, gattd, tmp_path):
    first = gattd(CONFIG)

    async def body():
        device_cm, peer = await connect_central(controllers)
        acked: list[tuple[float, int]] = []
        stop = asyncio.Event()

        async def writer():
            n = 0
            while not stop.is_set():
                await write(peer, uuid(4), f"v{n:05d}".encode())
                acked.append((time.monotonic(), n))
                n += 1

        task = asyncio.ensure_future(writer())
        # Kill once writes acknowledged more than 0.5 s ago exist (the bound asserted below)
        # and many more have followed them: a wait on the acknowledged writes, up to 10 s.
        deadline = time.monotonic() + 10
        while not (acked and time.monotonic() - acked[0][0] > 0.8 and len(acked) > 20):
            assert time.monotonic() < deadline, f"only {len(acked)} writes acknowledged in 10 s"
            await asyncio.sleep(0.05)
        first.kill()
        # Cancelling alone is not enough: on Python 3.11 asyncio.wait_for (inside Bumble's
        # request) swallows a cancel that lands as the write's response arrives, and the next
        # write to the dead gattd would wait out Bumble's 30 s ATT timeout. So also stop the loop.
        stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await close_central(device_cm)
        assert len(acked) > 10
        gattd(CONFIG)  # the stale socket of the killed daemon is replaced
        device_cm, peer = await connect_central(controllers)
        value = (await read(peer, uuid(4))).decode()
        assert value.startswith("v")
        restored = int(value[1:])
        # Every acknowledged write is on disk (the one in flight at the kill may be too).
        assert acked[-1][1] <= restored <= acked[-1][1] + 1
        await close_central(device_cm)

    run(body(), timeout=60)


def test_sighup_with_changed_database_sends_service_changed(controllers, gattd, tmp_path):
    config_path = tmp_path / "reload.json"
    config_path.write_text(CONFIG)
    process = gattd(config_path)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        device_cm, peer = await connect_central(controllers)
        changed = await subscribe(peer, "2A05", prefer_notify=False)
        assert await control.request({"op": "set", "characteristic": "label", "value": {"utf8": "kept"}}) == {"ok": True}
        hash_before = await read(peer, "2B2A")

        # An invalid config is rejected; the old one keeps running.
        config_path.write_text("{ not json")
        log_start = len(process.log())
        os.kill(process.process.pid, signal.SIGHUP)
        await wait_for_log(process, r"config reload rejected", start=log_start)
        # The read is also a round trip behind any Service Changed (see att_round_trip).
        assert await read(peer, uuid(4)) == b"kept"
        assert changed.empty()

        # A new characteristic changes the database.
        config = json.loads(CONFIG)
        config["services"][0]["characteristics"].append(
            {"id": "extra", "uuid": uuid(5), "properties": ["read"], "value": {"hex": "beef"}})
        config_path.write_text(json.dumps(config))
        os.kill(process.process.pid, signal.SIGHUP)
        indicated = await asyncio.wait_for(changed.get(), 5)
        start, end = int.from_bytes(indicated[0:2], "little"), int.from_bytes(indicated[2:4], "little")
        services = await peer.discover_services()
        found = None
        for service in services:
            for characteristic in await service.discover_characteristics():
                if characteristic.uuid == UUID(uuid(5)):
                    found = characteristic
                    changed_service = service
        assert found is not None, "the new characteristic is not discoverable"
        # The affected range is the changed service's (Vol 3 Part G §7.1), not GAP/GATT.
        assert (start, end) == (changed_service.handle, changed_service.end_group_handle), indicated.hex()
        assert bytes(await found.read_value()) == b"\xbe\xef"
        assert bytes(await find_characteristic(peer, uuid(4)).read_value()) == b"kept"
        hash_after = await read(peer, "2B2A")
        assert hash_after != hash_before
        assert (await control.request({"op": "get", "characteristic": "extra"}))["value"] == {"hex": "beef"}
        await close_central(device_cm)
        await control.close()

    run(body())


def test_systemd_notifications(controllers, gattd, tmp_path, monkeypatch):
    """READY=1 once, the status line once advertising starts, STATUS= on connection changes, WATCHDOG=1 pings."""
    import socket as socketlib

    notify_path = tmp_path / "notify.sock"
    listener = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_DGRAM)
    listener.bind(str(notify_path))
    listener.settimeout(0.2)
    monkeypatch.setenv("NOTIFY_SOCKET", str(notify_path))
    monkeypatch.setenv("WATCHDOG_USEC", "400000")
    gattd(CONFIG)
    messages: list[str] = []

    def drain_until(done, timeout: float = 5.0) -> None:
        """Collects notifications until `done()` holds; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, f"not seen in {timeout} s: {messages}"
            try:
                messages.append(listener.recv(4096).decode())
            except socketlib.timeout:
                pass

    async def body():
        drain_until(lambda: any("READY=1" in m for m in messages)
                    and sum("WATCHDOG=1" in m for m in messages) >= 3)
        device_cm, peer = await connect_central(controllers)
        drain_until(lambda: any('STATUS="CTL": 1 central connected' in m for m in messages))
        await close_central(device_cm, peer)

    run(body())
    listener.close()
    ready = [m for m in messages if "READY=1" in m]
    assert len(ready) == 1, messages
    # READY=1 comes once the controller has been tried; the status line follows advertising.
    assert any('STATUS="CTL": 0 centrals connected' in m for m in messages), messages
    assert any('STATUS="CTL": 1 central connected' in m for m in messages), messages
    assert sum("WATCHDOG=1" in m for m in messages) >= 3, messages


def test_systemd_ready_while_the_controller_is_missing(tmp_path, monkeypatch):
    """No controller at the transport's address (a dongle missing at boot): gattd still
    reports READY=1 (config, control socket and persistence are up) with a STATUS= saying
    what it waits for, so systemd neither times out nor restarts it in a loop."""
    import socket as socketlib

    from gatt_central import free_ports, gattd_arguments
    from harness import GattdProcess

    notify_path = tmp_path / "notify.sock"
    listener = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_DGRAM)
    listener.bind(str(notify_path))
    listener.settimeout(0.2)
    monkeypatch.setenv("NOTIFY_SOCKET", str(notify_path))
    config = tmp_path / "gattd.json"
    config.write_text(CONFIG)
    port = free_ports(1)[0]  # nothing listens there
    transport = f"tcp:127.0.0.1:{port}"
    process = GattdProcess(config, transport, tmp_path, gattd_arguments(tmp_path)).start()
    messages: list[str] = []
    try:
        deadline = time.monotonic() + 10
        while not any("READY=1" in m for m in messages):
            assert time.monotonic() < deadline, f"no READY=1 in 10 s: {messages}\n{process.log()}"
            try:
                messages.append(listener.recv(4096).decode())
            except socketlib.timeout:
                pass
        ready = next(m for m in messages if "READY=1" in m)
        assert f"STATUS=waiting for the controller at {transport}" in ready, messages
        assert process.running
        assert "advertising as" not in process.log()
    finally:
        process.stop()
        listener.close()
