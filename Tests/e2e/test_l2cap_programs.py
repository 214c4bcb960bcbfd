"""L2CAP channels for apps as programs see them: the phone finds the PSM in the published
characteristic, the Python client gets each channel, a slow reader holds the phone back with
credits, and an encrypted channel opens once the phone pairs (test_l2cap_channels.py covers
the echo, the stream and the refusals)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from bumble import l2cap
from bumble.core import UUID

from gatt_central import central_device, connect_peer, wait_for_log
from harness import REPO_ROOT, both_link_layers, run
from test_pairing import gattd_address, pairing

GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"
PSM_UUID = "ABDD3056-28FA-441D-A470-55A75A52553A"


def config(channels: list[dict] | None = None) -> str:
    return json.dumps({
        "name": "l2cap",
        "l2cap_channels": channels if channels is not None else [
            {"id": "stream"}, {"id": "secure", "psm": 0x0091, "security": "encryption"}],
        "services": [{"uuid": "FFF0", "characteristics": [
            {"id": "psm", "uuid": PSM_UUID, "properties": ["read"], "value": {"l2cap_psm": "stream"}}]}],
    }, indent=1)


def gattctl(tmp_path, *args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([str(GATTCTL), "--socket", str(tmp_path / "control.sock"), *args],
                            stderr=subprocess.PIPE, **kwargs)


async def wait_for_line(stream, text: str, timeout: float = 10.0) -> str:
    """The first line of `stream` (a gattctl's stderr) containing `text`."""
    loop = asyncio.get_running_loop()
    while True:
        line = await asyncio.wait_for(loop.run_in_executor(None, stream.readline), timeout)
        if not line:
            raise AssertionError(f"ended before {text!r}")
        if text in line.decode():
            return line.decode()


async def psm_characteristic(peer):
    """The characteristic publishing the channel's PSM (as a phone app finds it)."""
    await peer.discover_services()
    for service in peer.services:
        for characteristic in await service.discover_characteristics():
            if characteristic.uuid == UUID(PSM_UUID):
                return characteristic
    raise AssertionError("no PSM characteristic")


async def published_psm(peer, characteristic=None) -> int:
    """The PSM the gattd characteristic publishes (as a phone app reads it)."""
    value = bytes(await (characteristic or await psm_characteristic(peer)).read_value())
    assert len(value) == 2
    return int.from_bytes(value, "little")


async def settled(channel, characteristic, timeout: float = 60.0) -> tuple[int, int]:
    """The phone's channel once it stops moving: (SDUs queued, credits), the same before and
    after a read on the same link (a round trip: gattd has taken all the phone sent before its
    request, and any credits it gave back for them have reached the phone first)."""
    async def rounds() -> tuple[int, int]:
        before = None
        while True:
            await characteristic.read_value()
            now = (len(channel.out_queue), channel.credits)
            if now == before:
                return now
            before = now
    try:
        return await asyncio.wait_for(rounds(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"the phone's channel never settled: {len(channel.out_queue)} SDUs queued") from None


class Collector:
    """What a Bumble channel receives, SDU by SDU."""

    def __init__(self, channel) -> None:
        self.sdus: list[bytes] = []
        self.size = 0
        self.changed = asyncio.Event()
        channel.sink = self.add

    def add(self, sdu: bytes) -> None:
        self.sdus.append(bytes(sdu))
        self.size += len(sdu)
        self.changed.set()

    async def until(self, size: int, timeout: float = 60.0) -> bytes:
        async def wait() -> None:
            while self.size < size:
                self.changed.clear()
                await self.changed.wait()
        await asyncio.wait_for(wait(), timeout)
        return b"".join(self.sdus)


# SDUs of 2 KB the phone writes: 4 MB on Bumble's link (far more than any buffer on the way),
# 1.2 MB on rootcanal (still over 5 times the program's socket buffer; its link is slower).
SLOW_READER_SDUS = {"bumble": 2000, "rootcanal": 600}


@both_link_layers
def test_python_client_listens_and_a_slow_reader_holds_the_phone_back(controllers, gattd, tmp_path, link_layer):
    """The Python client gets each channel; while it does not read, the phone runs out of
    credits instead of gattd buffering without bound; once it reads, everything arrives in order."""
    gattd(config())
    script = f"""
import asyncio, sys
sys.path.insert(0, {str(REPO_ROOT / 'clients' / 'python' / 'src')!r})
from gattd_client import GattdClient

async def main():
    async with GattdClient.connect({str(tmp_path / 'control.sock')!r}) as gattd:
        async with gattd.l2cap_listen("stream") as channels:
            print("listening", channels.psm, flush=True)
            async for channel in channels:
                print("opened", channel.central, flush=True)
                sys.stdin.readline()            # hold: do not read until told
                total = 0
                async for sdu in channel:
                    total += len(sdu)
                    await channel.send(sdu[:4])
                print("closed", total, flush=True)
                return

asyncio.run(main())
"""
    program = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        async def body():
            loop = asyncio.get_running_loop()
            line = (await loop.run_in_executor(None, program.stdout.readline)).decode()
            assert line.startswith("listening ")
            async with central_device(controllers[1]) as device:
                peer = await connect_peer(device, gattd_address(controllers))
                characteristic = await psm_characteristic(peer)
                psm = await published_psm(peer, characteristic)
                assert psm == int(line.split()[1]), "the characteristic publishes the channel's PSM"
                channel = await peer.connection.create_l2cap_channel(
                    spec=l2cap.LeCreditBasedChannelSpec(psm=psm, mtu=2048, mps=247, max_credits=8))
                received = Collector(channel)
                assert (await loop.run_in_executor(None, program.stdout.readline)).decode().startswith("opened")
                data = os.urandom(2048)
                count = SLOW_READER_SDUS[link_layer]
                for _ in range(count):
                    channel.write(data)
                # The program does not read: the phone runs out of credits and stays there
                # (gattd gives none back while the program's socket is full).
                queued, credits = await settled(channel, characteristic)
                assert credits == 0
                assert queued > count // 2, f"most SDUs still wait on the phone ({queued} of {count})"
                program.stdin.write(b"go\n")
                program.stdin.flush()
                await channel.drain()
                await received.until(4 * count, timeout=120)
                assert received.sdus == [data[:4]] * count
                await channel.disconnect()
            assert (await loop.run_in_executor(None, program.stdout.readline)).decode().split() == ["closed", str(2048 * count)]
        run(body(), timeout=180)
    finally:
        program.kill()
        program.wait()


@both_link_layers
def test_an_encrypted_channel_opens_once_the_phone_pairs(controllers, gattd, tmp_path):
    gattd(config())
    server = gattctl(tmp_path, "l2cap", "serve", "secure", "--exec", "cat")
    try:
        async def body():
            await wait_for_line(server.stderr, "serving L2CAP channel")
            async with central_device(controllers[1]) as device:
                device.pairing_config_factory = pairing(sc=True)
                peer = await connect_peer(device, gattd_address(controllers))
                with pytest.raises(l2cap.L2capError) as refused:
                    await peer.connection.create_l2cap_channel(spec=l2cap.LeCreditBasedChannelSpec(psm=0x0091))
                assert refused.value.error_code in (0x0005, 0x0008)  # insufficient authentication / encryption
                await peer.connection.pair()
                channel = await peer.connection.create_l2cap_channel(spec=l2cap.LeCreditBasedChannelSpec(psm=0x0091))
                received = Collector(channel)
                channel.write(b"sealed")
                assert await received.until(6) == b"sealed"
                await channel.disconnect()
        run(body(), timeout=60)
    finally:
        server.terminate()
        server.wait()
