"""Acknowledged means durable: `"persist": true` values a central or a control client was
told are written survive `kill -9`, and a full or read-only state directory is answered
with an error (ATT Unlikely Error, `persist_failed`) instead of a lie."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from bumble import att

from control_client import ControlClient
from harness import OPCODE_RESET, bumble_device, connect, named, read, run, scan_for, write


def uuid(n: int) -> str:
    return f"7a1d{n:04x}-0000-4000-8000-000000000000"


CONFIG = """{
  "name": "Persist Test",
  "advertising": { "local_name": "PST", "interval_ms": [20, 30] },
  "services": [
    { "id": "svc", "uuid": "%s", "characteristics": [
        { "id": "label", "uuid": "%s", "properties": ["read", "write"], "persist": true, "max_length": 64,
          "value": { "utf8": "default" } },
        { "id": "scratch", "uuid": "%s", "properties": ["read", "write"], "max_length": 64 } ] }
  ]
}
""" % (uuid(0), uuid(1), uuid(2))

LABEL = uuid(1)
SCRATCH = uuid(2)
UNLIKELY_ERROR = 0x0E


_central_number = 0


async def connect_central(controllers, address=None, attempts=3):
    """A fresh Bumble central connected to gattd, with a new address each time: after a
    `kill -9` the simulated link keeps the dead host's connection, and a new central with the
    same address may then connect to that ghost (gattd never hears of it). An attempt that
    hangs anyway is abandoned after 15 s and retried."""
    global _central_number
    for attempt in range(attempts):
        _central_number += 1
        own = address or f"C0:00:00:00:{(_central_number >> 8) & 0xFF:02X}:{_central_number & 0xFF:02X}"
        device_cm = bumble_device(controllers[1], "central", own)
        device = await device_cm.__aenter__()

        async def attempt_connect():
            advertisement = await scan_for(device, named("PST"))
            return await connect(device, advertisement.address)

        task = asyncio.ensure_future(attempt_connect())
        done, _ = await asyncio.wait({task}, timeout=15)
        # (A link that drops during discovery cancels Bumble's pending request: a failed attempt.)
        if done and not task.cancelled() and task.exception() is None:
            return device_cm, task.result()
        task.cancel()
        try:
            await task
        except BaseException:
            pass
        await device_cm.__aexit__(None, None, None)
        if attempt == attempts - 1:
            raise TimeoutError(f"could not connect to gattd in {attempts} attempts")
        print(f"\nconnect attempt {attempt + 1} failed; retrying with a new central")


async def close_central(device_cm, peer=None):
    if peer is not None:
        try:
            await asyncio.wait_for(peer.connection.disconnect(), 5)
        except Exception:
            pass
    await device_cm.__aexit__(None, None, None)


# ----------------------------------------------------------------------------------------
# Crash consistency
# ----------------------------------------------------------------------------------------
TRIALS = int(os.environ.get("GATTD_PERSIST_TRIALS", "50"))
SEED = int(os.environ.get("GATTD_PERSIST_SEED", "20261123"))

# "label" is written by the central and both control clients; "a0"…"a7" by control client A
# only, "b0"…"b7" by B. Every value starts with 4 bytes, big-endian: the writer (1 central,
# 2 client A, 3 client B) in the top byte, that writer's own counter below it, increasing.
# The control clients' values are those 4 bytes 128 times (512 bytes), spread over 17
# characteristics: one group commit's log line then holds up to 17 values of 1 KiB of hex,
# so gattd's own compaction threshold (256 KiB of log) is crossed every few dozen commits.
CENTRAL, CLIENT_A, CLIENT_B = 1, 2, 3
OWN = {CLIENT_A: [f"a{i}" for i in range(16)], CLIENT_B: [f"b{i}" for i in range(16)]}
KILL_KEYS = ["label", *OWN[CLIENT_A], *OWN[CLIENT_B]]
KILL_CONFIG = json.dumps({
    "name": "Persist Test",
    "advertising": {"local_name": "PST", "interval_ms": [20, 30]},
    "services": [{"id": "svc", "uuid": uuid(0), "characteristics": [
        {"id": key, "uuid": LABEL if key == "label" else uuid(16 + i), "properties": ["read", "write"] if key == "label" else ["read"],
         "persist": True, "max_length": 512, "value": {"hex": "00000000"}}
        for i, key in enumerate(KILL_KEYS)]}],
}, indent=2) + "\n"
PIPELINE = 16  # control requests in flight per client


def encoded(v: int) -> bytes:
    """The bytes of value `v`: 4 for the central's (and the initial ones), 512 for a control client's."""
    return v.to_bytes(4, "big") * (128 if v >> 24 in (CLIENT_A, CLIENT_B) else 1)


def decoded(key: str, hex_value: str, number: int) -> int:
    raw = bytes.fromhex(hex_value)
    v = int.from_bytes(raw[:4], "big")
    assert raw == encoded(v), f"trial {number} (seed {SEED}): {key} holds {len(raw)} bytes that no writer sent"
    return v


def snapshot_generation(state: Path) -> int:
    """The generation of values.json (each compaction writes the next one); 0 before the first."""
    path = state / "values.json"
    return json.loads(path.read_text())["generation"] if path.exists() else 0


def test_no_acknowledged_write_is_lost_across_seeded_kill_9(controllers, gattd, tmp_path):
    """A central writes "label" back to back while two control clients pipeline `set`s (16 in
    flight each) of "label" and of characteristics of their own; the log is compacted every
    few dozen commits (gattd's default threshold, no test hook: the clients' values are large);
    gattd is killed with SIGKILL at a seeded random moment and restarted. After each restart
    no characteristic is older than a value acknowledged before the kill: a client's own
    characteristics hold at least their last acknowledged values, and "label" holds a value
    of some writer at least as new as that writer's last acknowledged one; and the log was
    compacted while the writes went on in at least a quarter of the trials."""
    rng = random.Random(SEED)
    counters = {CENTRAL: 0, CLIENT_A: 0, CLIENT_B: 0}
    # The newest value acknowledged: per (characteristic, writer); and every value sent.
    acked: dict[tuple[str, int], int] = {}
    sent: set[tuple[str, int]] = {(key, 0) for key in KILL_KEYS}
    totals = {"acked": 0}
    # Compactions while each trial's writes went on (snapshot generations between restarts).
    compactions: list[int] = []

    def value(writer: int) -> int:
        counters[writer] += 1
        return writer << 24 | counters[writer]

    def check(number: int, restored: dict[str, int]) -> None:
        for key, v in restored.items():
            assert (key, v) in sent, f"trial {number} (seed {SEED}): {key} holds {v:#010x}, never written"
            newest = acked.get((key, v >> 24), 0)
            assert v >= newest, (f"trial {number} (seed {SEED}): {key} restored {v:#010x}, older than the "
                                 f"acknowledged {newest:#010x} of the same writer")
        for writer, keys in OWN.items():
            for key in keys:
                newest = acked.get((key, writer), 0)
                assert restored[key] >= newest, (f"trial {number} (seed {SEED}): {key} restored {restored[key]:#010x}, "
                                                 f"older than the acknowledged {newest:#010x}")

    async def start_gattd():
        """gattd, once it reset the controller: the killed one's advertising, still on the air
        until then, would take the central's connection, then the Reset drops it."""
        started = time.time()
        process = gattd(KILL_CONFIG)
        await controllers[0].wait_for_command(OPCODE_RESET, after=started)
        return process

    async def restored_values(process) -> dict[str, int]:
        client = await ControlClient.open(tmp_path / "control.sock")
        values = {}
        for key in KILL_KEYS:
            reply = await client.request({"op": "get", "characteristic": key})
            assert reply["ok"], reply
            values[key] = decoded(key, reply["value"]["hex"], len(compactions))
        await client.close()
        return values

    async def control_writer(client: ControlClient, writer: int) -> None:
        """Keeps PIPELINE `set`s in flight, "label" then each own characteristic in turn;
        replies come in request order."""
        in_flight: list[tuple[str, int]] = []
        while True:
            while len(in_flight) < PIPELINE:
                turn = counters[writer] % (len(OWN[writer]) + 1)
                key = OWN[writer][turn - 1] if turn else "label"
                v = value(writer)
                sent.add((key, v))
                in_flight.append((key, v))
                client.send({"op": "set", "characteristic": key, "value": {"hex": encoded(v).hex()}})
            await client.writer.drain()
            reply = await client.reply(timeout=30)
            key, v = in_flight.pop(0)
            if reply.get("ok"):
                acked[(key, writer)] = max(acked.get((key, writer), 0), v)
                totals["acked"] += 1

    async def central_writer(peer) -> None:
        while True:
            v = value(CENTRAL)
            sent.add(("label", v))
            await write(peer, LABEL, encoded(v))
            acked[("label", CENTRAL)] = v
            totals["acked"] += 1

    async def trial(number: int, process) -> None:
        device_cm, peer = await connect_central(controllers)
        clients = [await ControlClient.open(tmp_path / "control.sock") for _ in range(2)]
        tasks = [asyncio.ensure_future(central_writer(peer)),
                 asyncio.ensure_future(control_writer(clients[0], CLIENT_A)),
                 asyncio.ensure_future(control_writer(clients[1], CLIENT_B))]
        await asyncio.sleep(rng.uniform(0.1, 0.6))
        process.kill()
        for task in tasks:
            task.cancel()
        # A Write Request in flight at the kill is not interrupted by the cancellation: Bumble's
        # client waits out its 30 s ATT transaction timeout. Give the tasks a moment, then let
        # the central's teardown end them (their outcome no longer matters: `acked` is final).
        await asyncio.wait(set(tasks), timeout=1)
        for task in tasks:
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
        for client in clients:
            await client.close()
        await close_central(device_cm)

    async def body() -> None:
        state = tmp_path / "state"
        for number in range(TRIALS):
            process = await start_gattd()
            check(number, await restored_values(process))
            generation = snapshot_generation(state)
            await trial(number, process)
            compactions.append(snapshot_generation(state) - generation)
        process = await start_gattd()
        check(TRIALS, await restored_values(process))
        process.stop()

    run(body(), timeout=60 + 20 * TRIALS)
    crossed = sum(1 for n in compactions if n > 0)
    print(f"\n{TRIALS} kill -9 trials (seed {SEED}): {totals['acked']} acknowledged writes, none lost; "
          f"{sum(compactions)} compactions while writing, in {crossed} trials")
    assert totals["acked"] > TRIALS  # the trials did write
    # and compacted while writing (about every other trial here; a quarter leaves room for a
    # slow machine): the kills land before, during and after compactions.
    assert crossed >= max(1, TRIALS // 4), f"only {crossed} of {TRIALS} trials compacted: {compactions}"
    assert acked.get(("label", CENTRAL)) and all(acked.get((key, w)) for w, keys in OWN.items() for key in keys)


# ----------------------------------------------------------------------------------------
# Full and read-only state directory
# ----------------------------------------------------------------------------------------
def mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): {result.stderr.strip()}")


def umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def small_state_dir(tmp_path: Path):
    """tmp_path/state (the gattd fixture's --state-dir) as a 64 KiB tmpfs."""
    state = tmp_path / "state"
    mount_tmpfs(state, "64k")
    yield state
    umount(state)


def fill(directory: Path) -> Path:
    """Fills the file system until ENOSPC; returns the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


async def write_error(peer, uuid_: str, value: bytes) -> int | None:
    try:
        await write(peer, uuid_, value)
        return None
    except att.ATT_Error as error:
        return error.error_code


def error_lines(process) -> list[str]:
    return [l for l in process.log().splitlines() if "cannot save persisted values" in l]


def assert_kept_after_kill_9(process, controllers, gattd, value: bytes) -> None:
    """Kills gattd (no shutdown compaction: the log alone must hold the value) and reads
    the value through a fresh one."""
    process.kill()
    second = gattd(CONFIG)

    async def check():
        device_cm, peer = await connect_central(controllers)
        assert await read(peer, LABEL) == value
        await close_central(device_cm, peer)

    run(check())
    second.stop()


def test_full_disk_is_answered_with_an_error_and_recovers(controllers, gattd, tmp_path, small_state_dir):
    process = gattd(CONFIG)
    filler = fill(small_state_dir)

    async def body():
        watcher = await ControlClient.open(tmp_path / "control.sock")
        assert await watcher.request({"op": "watch"}) == {"ok": True}
        control = await ControlClient.open(tmp_path / "control.sock")
        device_cm, peer = await connect_central(controllers)
        for n in range(3):
            assert await write_error(peer, LABEL, f"full{n}".encode()) == UNLIKELY_ERROR
        assert (await read(peer, LABEL)) == b"default"  # not changed in memory either
        event = await watcher.event("persist_failed")
        assert event["characteristic"] == "label" and event["central"].startswith("C0:00:00:00:")
        assert "No space left on device" in event["message"]
        reply = await control.request({"op": "set", "characteristic": "label", "value": {"utf8": "socket"}, "id": 7})
        assert reply["ok"] is False and reply["error"] == "persist_failed" and reply["id"] == 7
        assert "No space left on device" in reply["message"]
        assert (await control.request({"op": "get", "characteristic": "label"}))["value"] == {"hex": b"default".hex()}
        # Writes of values that are not persisted still work.
        await write(peer, SCRATCH, b"fine")
        # Once per condition, not per write.
        assert len(error_lines(process)) == 1, process.log()
        # Room again: the next write is saved, with no restart.
        filler.unlink()
        await write(peer, LABEL, b"recovered")
        assert await control.request({"op": "set", "characteristic": "label", "value": {"utf8": "again"}}) == {"ok": True}
        assert "persisted values are saved again" in process.log()
        await control.close()
        await watcher.close()
        await close_central(device_cm, peer)

    run(body(), timeout=60)
    assert_kept_after_kill_9(process, controllers, gattd, b"again")


def test_read_only_state_directory_is_answered_with_an_error_and_recovers(controllers, gattd, tmp_path,
                                                                          small_state_dir):
    process = gattd(CONFIG)

    async def body():
        device_cm, peer = await connect_central(controllers)
        await write(peer, LABEL, b"before")
        result = subprocess.run(["mount", "-o", "remount,ro", str(small_state_dir)], capture_output=True, text=True)
        if result.returncode != 0:
            await close_central(device_cm, peer)
            pytest.skip(f"cannot remount read-only: {result.stderr.strip()}")
        try:
            for n in range(3):
                assert await write_error(peer, LABEL, f"ro{n}".encode()) == UNLIKELY_ERROR
            assert await read(peer, LABEL) == b"before"
            assert len(error_lines(process)) == 1, process.log()
            assert "Read-only file system" in error_lines(process)[0]
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(small_state_dir)], check=True)
        await write(peer, LABEL, b"after")
        await close_central(device_cm, peer)

    run(body(), timeout=60)
    assert_kept_after_kill_9(process, controllers, gattd, b"after")


# ----------------------------------------------------------------------------------------
# Figures (printed, not asserted: run with -s)
# ----------------------------------------------------------------------------------------
def test_report_persisted_write_latency_and_burst_rate(controllers, gattd, tmp_path):
    process = gattd(CONFIG)
    count = int(os.environ.get("GATTD_PERSIST_WRITES", "200"))
    burst = int(os.environ.get("GATTD_PERSIST_BURST", "5000"))

    async def body():
        device_cm, peer = await connect_central(controllers)
        timings = {}
        for name, target in (("not persisted", SCRATCH), ("persisted", LABEL)):
            samples = []
            for n in range(count):
                started = time.perf_counter()
                await write(peer, target, f"{n:06d}".encode())
                samples.append(time.perf_counter() - started)
                await asyncio.sleep(0.01)  # low rate
            samples.sort()
            timings[name] = (sum(samples) / len(samples), samples[len(samples) // 2], samples[int(len(samples) * 0.99)])
        assert await read(peer, LABEL) == f"{count - 1:06d}".encode()
        # Burst: one client pipelines `set`s of the persisted value; group commit shares flushes.
        control = await ControlClient.open(tmp_path / "control.sock")
        started = time.perf_counter()
        for n in range(burst):
            control.send({"op": "set", "characteristic": "label", "value": {"utf8": f"b{n}"}, "id": n})
        await control.writer.drain()
        replies = [await control.reply(30) for _ in range(burst)]
        elapsed = time.perf_counter() - started
        assert [r["id"] for r in replies] == list(range(burst)) and all(r["ok"] for r in replies)
        # Several centrals' writes... and a sequential central: rate bounded by one flush per write.
        started = time.perf_counter()
        for n in range(count):
            await write(peer, LABEL, f"s{n}".encode())
        sequential = count / (time.perf_counter() - started)
        await control.close()
        await close_central(device_cm, peer)
        persisted, plain = timings["persisted"], timings["not persisted"]
        print(f"\nwrite round trip at low rate (mean / median / p99, ms): not persisted "
              f"{plain[0] * 1e3:.2f} / {plain[1] * 1e3:.2f} / {plain[2] * 1e3:.2f}; persisted "
              f"{persisted[0] * 1e3:.2f} / {persisted[1] * 1e3:.2f} / {persisted[2] * 1e3:.2f}; added (median) "
              f"{(persisted[1] - plain[1]) * 1e3:.2f} ms")
        print(f"burst of {burst} pipelined control-socket sets: {burst / elapsed:.0f} acknowledged persisted writes/s")
        print(f"one central writing back to back: {sequential:.0f} acknowledged persisted writes/s")

    run(body(), timeout=120)
    process.stop()
