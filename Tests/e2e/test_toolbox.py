"""The operator's toolbox against a running gattd: `gattctl capture start|stop` writes a btsnoop
file at run time, and `gattctl status` shows the advertising payloads as sent."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from gatt_central import FULL_CONFIG, Link, central, raw_request
from harness import REPO_ROOT, require_built, run
from test_capture import att_payload, parse_btsnoop

GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"
READONLY = 0x0014  # "hello" in config/test/gatt-full.json


@pytest.fixture(autouse=True)
def gattctl_is_built() -> None:
    require_built(GATTCTL)


def gattctl(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(GATTCTL), "--socket", str(tmp_path / "control.sock"), *args],
                          capture_output=True, text=True, timeout=30)


def test_capture_started_and_stopped_at_run_time(controllers, gattd, tmp_path):
    process = gattd(FULL_CONFIG)
    link = Link(controllers, process)
    capture = tmp_path / "runtime.btsnoop"

    async def body():
        async with central(link, 1, "C0:00:00:00:00:01") as peer:
            await raw_request(peer, bytes([0x0A, READONLY, 0x00]))  # before: not recorded
            started = await asyncio.to_thread(gattctl, tmp_path, "capture", "start", str(capture))
            assert started.returncode == 0, started.stderr
            assert started.stdout == f"capturing every HCI packet (commands, events, ACL data) as it crosses the H4 link to {capture}\n"
            await raw_request(peer, bytes([0x0A, READONLY, 0x00]))
            stopped = await asyncio.to_thread(gattctl, tmp_path, "capture", "stop")
            assert (stopped.returncode, stopped.stderr) == (0, "")
            size = capture.stat().st_size
            await raw_request(peer, bytes([0x0A, READONLY, 0x00]))  # after: not recorded
            assert capture.stat().st_size == size
        await process.wait_for_log(r"capture stopped")

    run(body())
    records = parse_btsnoop(capture.read_bytes())
    sent = [att_payload(p) for f, _, p in records if f == 0]
    received = [att_payload(p) for f, _, p in records if f == 1]
    assert received.count(bytes([0x0A, READONLY, 0x00])) == 1
    assert sent.count(b"\x0bhello") == 1

    # Never over an existing file; a relative path or a missing FILE is a usage error.
    again = gattctl(tmp_path, "capture", "start", str(capture))
    assert again.returncode == 1 and f"cannot create {capture}" in again.stderr
    assert gattctl(tmp_path, "capture", "start", "relative.btsnoop").returncode == 64
    assert gattctl(tmp_path, "capture", "start").returncode == 64


def test_status_shows_the_advertising_payloads(controllers, gattd, tmp_path):
    gattd(REPO_ROOT / "config" / "heart-rate.json")
    check = subprocess.run([str(REPO_ROOT / ".build" / "debug" / "gattd"), "--check-config",
                            str(REPO_ROOT / "config" / "heart-rate.json")], capture_output=True, text=True)
    payload_lines = check.stdout[check.stdout.index("advertising data:"):check.stdout.index("log:")]
    status = gattctl(tmp_path, "status")
    assert status.returncode == 0, status.stderr
    # The same lines --check-config prints: hex, byte counts of 31, each AD structure decoded.
    assert payload_lines in status.stdout
    assert "advertising data: 16 of 31 bytes: 020106080948522d44656d6f03030d18" in status.stdout
    as_json = json.loads(gattctl(tmp_path, "status", "--json").stdout)
    assert as_json["advertising_data"] == {"hex": "020106080948522d44656d6f03030d18"}
    assert as_json["scan_response"] == {"hex": ""}
