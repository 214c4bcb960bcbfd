"""Watching is not answering: a passive watch leaves control characteristics to gattd (stored
value, 0xFC); `gattctl watch --requests` + `gattctl respond` and `gattctl serve --exec` answer
them; `gattctl watch --follow` survives a gattd restart; `gattctl notify` says when nobody is
subscribed. gattd on a virtual controller, a Bumble central, gattctl as a subprocess."""

from __future__ import annotations

import asyncio
import json

import pytest

from bumble import att

from control_client import ControlClient, hex_value
from harness import REPO_ROOT, read, require_built, run, wait_for_log, write
from test_control import CENTRAL_ADDRESS, CONFIG, close_central, connect_central, uuid

GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"


@pytest.fixture(autouse=True)
def gattctl_is_built() -> None:
    require_built(GATTCTL)


async def start_gattctl(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(GATTCTL), *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)


async def gattctl(*args: str) -> tuple[int, str, str]:
    proc = await start_gattctl(*args)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    return proc.returncode, out.decode(), err.decode()


async def line(stream: asyncio.StreamReader, timeout: float = 15) -> str:
    text = (await asyncio.wait_for(stream.readline(), timeout)).decode()
    assert text, "gattctl ended"
    return text.rstrip("\n")


async def next_event(stream: asyncio.StreamReader) -> dict:
    """The next `gattctl watch --json` event about centrals: the controller's `state`, the
    advertising sets' `advertising` events (advertising stops when a central connects) and the
    links' `link` events (the PHY and data length a new link is asked for) are not what these
    tests are about."""
    while (event := json.loads(await line(stream)))["event"] in ("state", "advertising", "link"):
        pass
    return event


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


def test_passive_watch_leaves_control_characteristics_to_gattd(controllers, gattd, tmp_path):
    """Watchers without "requests" (gattctl watch, a raw watch) are not responders: a read gets
    the stored value at once (a responder that never answers would make it Unlikely Error after
    --request-timeout), a write Write Request Rejected; the watch still sees the central."""
    process = gattd(CONFIG, extra_args=["--request-timeout", "30"])
    sock = str(tmp_path / "control.sock")

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        log_start = len(process.log())
        watch = await start_gattctl("--socket", sock, "watch", "--json")
        await wait_for_log(process, r"control client \d+ watches$", start=log_start)
        assert await control.request({"op": "set", "characteristic": "ctl", "value": hex_value(b"stored")}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        assert (await next_event(watch.stdout)) == {"event": "connected", "central": CENTRAL_ADDRESS}
        assert await asyncio.wait_for(read(peer, uuid(3)), 10) == b"stored"
        with pytest.raises(att.ATT_Error) as error:
            await asyncio.wait_for(write(peer, uuid(3), b"\x01"), 10)
        assert error.value.error_code == 0xFC
        await close_central(device_cm, peer)
        assert (await next_event(watch.stdout))["event"] == "disconnected"
        await stop(watch)
        await control.close()

    run(body(), timeout=90)


def test_watch_requests_and_gattctl_respond(controllers, gattd, tmp_path):
    process = gattd(CONFIG)
    sock = str(tmp_path / "control.sock")

    async def body():
        watch = await start_gattctl("--socket", sock, "watch", "--requests", "--json")
        await wait_for_log(process, r"control client \d+ watches and answers requests$")
        device_cm, peer = await connect_central(controllers)
        assert (await next_event(watch.stdout))["event"] == "connected"
        reader = asyncio.ensure_future(read(peer, uuid(3)))
        event = (await next_event(watch.stdout))
        assert event["event"] == "read_request" and event["characteristic"] == "ctl" and event["offset"] == 0
        assert await gattctl("--socket", sock, "respond", str(event["request"]), "--utf8", "hello") == (0, "", "")
        assert await asyncio.wait_for(reader, 10) == b"hello"

        writer = asyncio.ensure_future(write(peer, uuid(3), b"\x05"))
        event = (await next_event(watch.stdout))
        assert event["event"] == "write_request" and event["value"] == {"hex": "05"}
        code, out, err = await gattctl("--socket", sock, "respond", str(event["request"]), "--status", "write_not_permitted")
        assert (code, err) == (0, "")
        with pytest.raises(att.ATT_Error) as error:
            await asyncio.wait_for(writer, 10)
        assert error.value.error_code == 0x03
        # Too late, and nonsense: 1 (gattd's error) and 64 (usage).
        code, _, err = await gattctl("--socket", sock, "respond", str(event["request"]))
        assert code == 1 and "no pending request" in err
        code, _, err = await gattctl("--socket", sock, "respond", "1", "--status", "nonsense")
        assert code == 64 and "--status nonsense" in err
        await close_central(device_cm, peer)
        await stop(watch)

    run(body(), timeout=90)


def test_serve_exec_answers_reads_and_writes(controllers, gattd, tmp_path):
    gattd(CONFIG)
    sock = str(tmp_path / "control.sock")
    log = tmp_path / "requests.log"
    script = tmp_path / "handler.sh"
    script.write_text(f"""#!/bin/sh
cat >> {log}
echo "$GATTD_OP $GATTD_CHARACTERISTIC $GATTD_CENTRAL $GATTD_OFFSET $GATTD_VALUE" >> {log}
if [ "$GATTD_OP" = read ]; then
    printf 'value of %s\\n' "$GATTD_CHARACTERISTIC"
    exit 0
fi
[ "$GATTD_VALUE" = 01 ] && exit 0
[ "$GATTD_VALUE" = 02 ] && {{ echo value_not_allowed; exit 3; }}
exit 1
""")
    script.chmod(0o755)

    async def body():
        serve = await start_gattctl("--socket", sock, "serve", "--utf8", "--exec", str(script))
        assert (await line(serve.stderr)).startswith("gattctl: serving control requests")
        device_cm, peer = await connect_central(controllers)
        assert await asyncio.wait_for(read(peer, uuid(3)), 10) == b"value of ctl"
        await asyncio.wait_for(write(peer, uuid(3), b"\x01"), 10)
        with pytest.raises(att.ATT_Error) as error:
            await asyncio.wait_for(write(peer, uuid(3), b"\x02"), 10)
        assert error.value.error_code == 0x13  # named on stdout
        with pytest.raises(att.ATT_Error) as error:
            await asyncio.wait_for(write(peer, uuid(3), b"\x03"), 10)
        assert error.value.error_code == 0x0E  # --error-status default
        lines = log.read_text().splitlines()
        assert json.loads(lines[0])["event"] == "read_request"
        assert lines[1] == f"read ctl {CENTRAL_ADDRESS} 0 "
        assert json.loads(lines[2])["value"] == {"hex": "01"}
        assert lines[3] == f"write ctl {CENTRAL_ADDRESS} 0 01"
        assert len(lines) == 8
        await close_central(device_cm, peer)
        await stop(serve)

    run(body(), timeout=90)


def test_watch_follow_keeps_watching_across_a_restart(controllers, gattd, tmp_path):
    first = gattd(CONFIG)
    sock = str(tmp_path / "control.sock")

    async def body():
        watch = await start_gattctl("--socket", sock, "watch", "--follow", "--json")
        await wait_for_log(first, r"control client \d+ watches$")
        # Watching (it saw a central come and go); then gattd goes away, gattctl says so and waits.
        device_cm, peer = await connect_central(controllers)
        assert (await next_event(watch.stdout)) == {"event": "connected", "central": CENTRAL_ADDRESS}
        await close_central(device_cm, peer)
        assert (await next_event(watch.stdout))["event"] == "disconnected"
        first.stop()
        assert "reconnecting (--follow)" in await line(watch.stderr)
        gattd(CONFIG)
        assert await line(watch.stderr) == "gattctl: watching again"
        device_cm, peer = await connect_central(controllers)
        assert (await next_event(watch.stdout)) == {"event": "connected", "central": CENTRAL_ADDRESS}
        await close_central(device_cm, peer)
        assert watch.returncode is None
        await stop(watch)

    run(body(), timeout=90)


def test_serve_follow_keeps_answering_across_a_restart(controllers, gattd, tmp_path):
    first = gattd(CONFIG)
    sock = str(tmp_path / "control.sock")

    async def body():
        serve = await start_gattctl("--socket", sock, "serve", "--follow", "--quiet", "--utf8", "--exec", "echo answered")
        await wait_for_log(first, r"control client \d+ watches")
        device_cm, peer = await connect_central(controllers)
        assert await asyncio.wait_for(read(peer, uuid(3)), 10) == b"answered"
        await close_central(device_cm, peer)
        first.stop()
        assert "reconnecting (--follow)" in await line(serve.stderr)
        second = gattd(CONFIG)
        assert (await line(serve.stderr)).startswith("gattctl: serving control requests")
        await wait_for_log(second, r"control client \d+ watches")
        device_cm, peer = await connect_central(controllers)
        assert await asyncio.wait_for(read(peer, uuid(3)), 10) == b"answered", "answered by the same serve after the restart"
        await close_central(device_cm, peer)
        assert serve.returncode is None
        await stop(serve)

    run(body(), timeout=90)


def test_notify_says_when_nobody_is_subscribed(controllers, gattd, tmp_path):
    gattd(CONFIG)
    sock = str(tmp_path / "control.sock")

    async def body():
        code, out, err = await gattctl("--socket", sock, "notify", "stream", "01")
        assert (code, out) == (0, "")
        assert err == "gattctl: nobody is subscribed to stream; the value was set but not sent\n"
        assert await gattctl("--socket", sock, "notify", "--quiet", "stream", "02") == (0, "", "")
        assert await gattctl("--socket", sock, "get", "stream") == (0, "02\n", "")

    run(body())
