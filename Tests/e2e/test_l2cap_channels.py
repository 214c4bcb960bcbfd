"""App L2CAP channels on the H4 transport (issue #21): a Bumble central opens LE credit-based
channels (Core Spec Vol 3 Part A §4.22) to gattd's H4 host, which hands each one to a
program as a SOCK_SEQPACKET socket (`gattctl l2cap serve --exec`). An echo through `cat`,
a stream of SDUs that comes back complete and in order, and the security refusals.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from bumble import hci, l2cap

from gatt_central import central_device, connect_peer
from harness import REPO_ROOT, both_link_layers, require_built, run, wait_for_log

GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"
STREAM_PSM = 0x0081
SECRET_PSM = 0x0082
CONFIG = json.dumps({
    "name": "gattd l2cap",
    "advertising": {"service_uuids": ["FFF0"]},
    "l2cap_channels": [
        {"id": "stream", "psm": STREAM_PSM, "mtu": 2048},
        {"id": "secret", "psm": SECRET_PSM, "security": "encryption", "mtu": 512},
    ],
    "services": [{"uuid": "FFF0", "characteristics": [
        {"uuid": "ABDD3056-28FA-441D-A470-55A75A52553A", "properties": ["read"], "value": {"l2cap_psm": "stream"}}]}],
}, indent=1)
INSUFFICIENT_AUTHENTICATION = 0x0005
LE_PSM_NOT_SUPPORTED = 0x0002


def gattd_address(controllers) -> hci.Address:
    return hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)


async def serve(sock: str, channel: str, command: str) -> asyncio.subprocess.Process:
    """`gattctl l2cap serve CHANNEL --exec COMMAND`, once it says it serves."""
    require_built(GATTCTL)
    process = await asyncio.create_subprocess_exec(
        str(GATTCTL), "--socket", sock, "l2cap", "serve", channel, "--exec", command,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    line = (await asyncio.wait_for(process.stderr.readline(), 15)).decode()
    assert line.startswith(f'gattctl: serving L2CAP channel "{channel}"'), line
    return process


async def stop(process: asyncio.subprocess.Process) -> None:
    """Ends gattctl. (asyncio's wait also waits for its stderr pipe, which a `cat` still
    serving an open channel inherited: the tests close their channels first.)"""
    if process.returncode is None:
        process.terminate()
        await asyncio.wait_for(process.wait(), 10)


class Receiver:
    """The SDUs a Bumble channel receives, waited for by count."""

    def __init__(self, channel) -> None:
        self.sdus: list[bytes] = []
        self.changed = asyncio.Event()
        channel.sink = self.on_sdu

    def on_sdu(self, sdu: bytes) -> None:
        self.sdus.append(bytes(sdu))
        self.changed.set()

    async def wait_for(self, count: int, timeout: float) -> list[bytes]:
        async def until() -> None:
            while len(self.sdus) < count:
                self.changed.clear()
                await self.changed.wait()
        try:
            await asyncio.wait_for(until(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"{len(self.sdus)} of {count} SDUs after {timeout} s") from None
        return self.sdus


@both_link_layers
def test_echo_through_a_program(controllers, gattd, tmp_path):
    daemon = gattd(CONFIG)

    async def body():
        echo = await serve(str(tmp_path / "control.sock"), "stream", "cat")
        try:
            async with central_device(controllers[1]) as device:
                peer = await connect_peer(device, gattd_address(controllers))
                channel = await asyncio.wait_for(peer.connection.create_l2cap_channel(
                    spec=l2cap.LeCreditBasedChannelSpec(psm=STREAM_PSM, mtu=1024, mps=100, max_credits=8)), 10)
                # gattd's side of the parameters: its MTU from the config, a K-frame per LE packet.
                assert channel.peer_mtu == 2048
                assert channel.peer_mps == 247
                await wait_for_log(daemon, r'opened L2CAP channel "stream" \(PSM 129, MTU 1024\); handed to a listening program')
                received = Receiver(channel)
                sdus = [b"hello", bytes(range(256)) * 4, b"x" * 1024]  # (Bumble cannot send an empty SDU)
                for sdu in sdus:
                    channel.write(sdu)
                    await channel.drain()  # (see below: Bumble would merge queued SDUs)
                # `cat` writes what one read returned: one message back per SDU.
                assert await received.wait_for(len(sdus), 20) == sdus
                await asyncio.wait_for(channel.disconnect(), 10)
        finally:
            await stop(echo)

    run(body(), 60)


@both_link_layers
def test_cat_bridges_a_channel_and_an_empty_sdu_does_not_end_it(controllers, gattd, tmp_path):
    """`gattctl l2cap cat`: the phone's SDUs reach stdout, stdin reaches the phone; an empty SDU
    (a K-frame with SDU length 0) is an SDU, not the end of the channel."""
    gattd(CONFIG)

    async def body():
        require_built(GATTCTL)
        cat = await asyncio.create_subprocess_exec(
            str(GATTCTL), "--socket", str(tmp_path / "control.sock"), "l2cap", "cat", "stream",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            line = (await asyncio.wait_for(cat.stderr.readline(), 15)).decode()
            assert line.startswith('gattctl: waiting for a central to open "stream"'), line
            async with central_device(controllers[1]) as device:
                peer = await connect_peer(device, gattd_address(controllers))
                channel = await asyncio.wait_for(peer.connection.create_l2cap_channel(
                    spec=l2cap.LeCreditBasedChannelSpec(psm=STREAM_PSM, mtu=512, mps=100, max_credits=8)), 10)
                received = Receiver(channel)
                line = (await asyncio.wait_for(cat.stderr.readline(), 10)).decode()
                assert "opened" in line, line
                # Bumble's write() cannot send an empty SDU: one K-frame whose SDU length is 0.
                await asyncio.wait_for(channel.drain(), 10)
                assert channel.credits > 0
                channel.credits -= 1
                channel.send_pdu(bytes(2))
                channel.write(b"after the empty SDU")
                assert await asyncio.wait_for(cat.stdout.readexactly(19), 10) == b"after the empty SDU"
                cat.stdin.write(b"from stdin")
                await cat.stdin.drain()
                assert await received.wait_for(1, 10) == [b"from stdin"]
                await asyncio.wait_for(channel.disconnect(), 10)
            # The central closed the channel: cat ends.
            assert await asyncio.wait_for(cat.wait(), 10) == 0
        finally:
            if cat.returncode is None:
                cat.kill()
                await cat.wait()

    run(body(), 60)


# Bytes each way: 10 MB on Bumble's link (the volume: no buffer on the way holds a fraction of
# it); on rootcanal, the stricter link layer, 0.5 MB (its timing, at ~25 KB/s, not its volume).
STREAM_BYTES = {"bumble": 10_000_000, "rootcanal": 500_000}


@both_link_layers
def test_a_stream_comes_back_complete_and_in_order(controllers, gattd, tmp_path, link_layer):
    """10 MB each way through `cat` (0.5 MB on rootcanal), SDUs of every size up to the
    central's MTU: none lost, none reordered, none merged (gattd's credits never let the pair
    overflow)."""
    gattd(CONFIG)
    goal = STREAM_BYTES[link_layer]

    async def body():
        echo = await serve(str(tmp_path / "control.sock"), "stream", "cat")
        try:
            async with central_device(controllers[1]) as device:
                peer = await connect_peer(device, gattd_address(controllers))
                channel = await asyncio.wait_for(peer.connection.create_l2cap_channel(
                    spec=l2cap.LeCreditBasedChannelSpec(psm=STREAM_PSM, mtu=2048, mps=247, max_credits=16)), 10)
                received = Receiver(channel)
                sdus, total, k = [], 0, 0
                while total < goal:
                    sdu = (bytes([k & 0xFF]) * (1 + (k * 37) % 2048) + k.to_bytes(4, "little"))[-2048:]
                    sdus.append(sdu)
                    total += len(sdu)
                    k += 1
                for sdu in sdus:
                    # Bumble's channel is a byte stream that merges queued writes into MTU-sized
                    # SDUs: one SDU at a time keeps each its own (it waits for credits, not echoes).
                    channel.write(sdu)
                    await channel.drain()
                assert await received.wait_for(len(sdus), 400) == sdus
                await asyncio.wait_for(channel.disconnect(), 10)
        finally:
            await stop(echo)

    run(body(), 480)


@both_link_layers
def test_refusals(controllers, gattd, tmp_path):
    daemon = gattd(CONFIG)

    async def body():
        async with central_device(controllers[1]) as device:
            peer = await connect_peer(device, gattd_address(controllers))
            # Nobody listens for "stream": refused, LE_PSM not supported, and logged.
            with pytest.raises(l2cap.L2capError) as error:
                await asyncio.wait_for(peer.connection.create_l2cap_channel(
                    spec=l2cap.LeCreditBasedChannelSpec(psm=STREAM_PSM)), 10)
            assert error.value.error_code == LE_PSM_NOT_SUPPORTED
            # "secret" needs encryption; this central has no keys: Insufficient Authentication (pair first).
            listener = await serve(str(tmp_path / "control.sock"), "secret", "cat")
            try:
                with pytest.raises(l2cap.L2capError) as error:
                    await asyncio.wait_for(peer.connection.create_l2cap_channel(
                        spec=l2cap.LeCreditBasedChannelSpec(psm=SECRET_PSM)), 10)
                assert error.value.error_code == INSUFFICIENT_AUTHENTICATION
            finally:
                await stop(listener)
        assert "handed to a listening program" not in daemon.log()

    run(body(), 60)
