"""Control socket limits: a client that never reads gives its memory back once dropped,
the number of clients is capped, and request ids are short strings or Int64 integers."""

from __future__ import annotations

import asyncio
import json
import socket
import time

from control_client import ControlClient
from harness import run, wait_for_log

CONFIG = """{
  "name": "Limits",
  "advertising": { "local_name": "LIM", "interval_ms": [100, 150] },
  "services": [
    { "id": "svc", "uuid": "7a1e0000-0000-4000-8000-000000000000", "characteristics": [
        { "id": "plain", "uuid": "7a1e0001-0000-4000-8000-000000000000", "properties": ["read", "write"],
          "value": { "hex": "0102" } } ] }
  ]
}
"""


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def flood_without_reading(path: str, seconds: float = 20.0) -> None:
    """Sends `status` requests and never reads a reply, until gattd drops the connection."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(path)
    s.settimeout(1.0)
    line = b'{"op":"status","id":1}\n' * 1000
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            s.sendall(line)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    finally:
        s.close()


def test_a_dropped_client_that_never_read_gives_its_memory_back(gattd, tmp_path):
    process = gattd(CONFIG)
    path = str(tmp_path / "control.sock")

    async def warm_up():
        client = await ControlClient.open(path)
        for _ in range(200):
            assert (await client.request({"op": "status"}))["ok"] is True
        await client.close()

    run(warm_up())
    time.sleep(0.5)
    before = rss_kib(process.process.pid)
    flood_without_reading(path)
    deadline = time.monotonic() + 10
    while "does not read its replies" not in process.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "does not read its replies" in process.log()
    # The memory comes back as the dropped client's queue is freed: wait for that, bounded.
    deadline = time.monotonic() + 10
    while (after := rss_kib(process.process.pid)) - before >= 2048 and time.monotonic() < deadline:
        time.sleep(0.1)
    print(f"\nRSS before {before} KiB, after the dropped client {after} KiB")
    # The client's queued replies (1 MiB of text, ~15 MB with per-line overhead before) are freed.
    assert after - before < 2048, f"RSS grew by {after - before} KiB"

    async def still_serves():
        client = await ControlClient.open(path)
        assert (await client.request({"op": "get", "characteristic": "plain", "id": 1})) == \
            {"ok": True, "value": {"hex": "0102"}, "id": 1}
        await client.close()

    run(still_serves())


def test_clients_over_the_limit_are_refused_with_one_line(gattd, tmp_path):
    process = gattd(CONFIG, extra_args=["--max-control-clients", "3"])
    path = tmp_path / "control.sock"

    async def body():
        clients = [await ControlClient.open(path) for _ in range(3)]
        for c in clients:
            assert (await c.request({"op": "status"}))["ok"] is True
        for _ in range(2):
            refused = await ControlClient.open(path)
            reply = await refused.reply()
            assert reply["ok"] is False and reply["error"] == "too_many_clients"
            await asyncio.wait_for(refused.closed.wait(), 5)
            assert len(refused.raw_lines) == 1
        log_start = len(process.log())
        await clients[0].close()
        # gattd saw it leave (the fixture's --log-level debug): a place is free.
        await wait_for_log(process, r"control client \d+ disconnected$", start=log_start)
        again = await ControlClient.open(path)
        assert (await again.request({"op": "status"}))["ok"] is True
        for c in clients[1:] + [again]:
            await c.close()

    run(body())
    assert process.log().count("refusing more") == 1


def test_ids_that_are_not_short_strings_or_int64_are_rejected(gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        client = await ControlClient.open(tmp_path / "control.sock")
        for raw in [b"9" * 60000, b'"' + b"x" * 65 + b'"', b"1.5", b"null", b"true", b"9223372036854775808"]:
            reply = await client.raw_request(b'{"op":"status","id":' + raw + b"}")
            assert reply["ok"] is False and reply["error"] == "invalid_value"
            assert "id" not in reply
            assert len(client.raw_lines[-1]) < 400
        for good in [b"-9223372036854775808", b'"' + b"x" * 64 + b'"', b"0"]:
            line = b'{"op":"status","id":' + good + b"}"
            reply = await client.raw_request(line)
            assert reply["ok"] is True and reply["id"] == json.loads(good)
        await client.close()

    run(body())
