"""Pairing prompts answered by a person through the control socket and gattctl (like a
BlueZ agent): Numeric Comparison and Passkey Entry with Bumble's Security Manager as the
phone, then `gattctl bonds` and `gattctl unbond` (the central must pair again).
"""

from __future__ import annotations

import asyncio

from bumble import hci
from bumble.core import ProtocolError
from bumble.pairing import PairingConfig, PairingDelegate

from control_client import ControlClient
from gatt_central import central_device, connect_peer
from harness import run, require_built
from test_gattctl import GATTCTL, gattctl_async
from test_pairing import AUTHENTICATED, ENCRYPTED, config_with, gattd_address

PHONE = "C0:00:00:00:00:01"
PAIRING_NOT_SUPPORTED = 0x05


class Phone(PairingDelegate):
    """The phone's user: confirms numbers that match and shows its passkey."""

    def __init__(self, io_capability: int) -> None:
        super().__init__(io_capability=io_capability)
        self.shown: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def compare_numbers(self, number: int, digits: int) -> bool:
        self.shown.set_result(number)
        return True

    async def display_number(self, number: int, digits: int) -> None:
        self.shown.set_result(number)


def phone_config(delegate: Phone) -> PairingConfig:
    return PairingConfig(sc=True, mitm=True, bonding=True, delegate=delegate,
                         identity_address_type=PairingConfig.AddressType.RANDOM)


async def gattctl_ok(socket: str, *args: str) -> str:
    code, out, err = await gattctl_async("--socket", socket, *args)
    assert code == 0, f"gattctl {' '.join(args)}: exit {code}: {err}"
    return out


def test_numeric_comparison_confirmed_with_gattctl_then_unbond(controllers, gattd, tmp_path):
    require_built(GATTCTL)
    gattd(config_with({"io_capability": "display_yes_no"}))
    socket = str(tmp_path / "control.sock")

    async def body():
        watcher = await ControlClient.open(socket)
        assert (await watcher.request({"op": "watch"}))["ok"]
        async with central_device(controllers[1]) as device:
            phone = Phone(PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT)
            device.pairing_config_factory = lambda _connection: phone_config(phone)
            peer = await connect_peer(device, gattd_address(controllers))
            pairing = asyncio.ensure_future(peer.connection.pair())
            prompt = await watcher.event("numeric_comparison")
            assert prompt["central"] == PHONE
            assert int(prompt["value"]) == await asyncio.wait_for(phone.shown, 5), "both sides show the same number"
            await gattctl_ok(socket, "confirm", "yes")
            await asyncio.wait_for(pairing, 10)
            paired = await watcher.event("paired")
            assert (paired["identity"], paired["bonded"], paired["authenticated"]) == (PHONE, True, True)
            assert await peer.gatt_client.read_value(AUTHENTICATED) == b"\xa5"

            # gattctl bonds lists it; unbond forgets it and disconnects the central.
            listing = await gattctl_ok(socket, "bonds")
            assert PHONE in listing and "authenticated, LE SC" in listing, listing
            disconnected = asyncio.get_running_loop().create_future()
            peer.connection.on("disconnection", lambda _reason: disconnected.done() or disconnected.set_result(True))
            await gattctl_ok(socket, "unbond", PHONE)
            await asyncio.wait_for(disconnected, 5)
            assert "no bonds" in await gattctl_ok(socket, "bonds")
            assert not list((tmp_path / "state" / "bonds").glob("*.json"))
            # The central still has its keys, but gattd refuses them: it must pair again.
            peer = await connect_peer(device, gattd_address(controllers))
            try:
                await asyncio.wait_for(peer.connection.encrypt(), 5)
                raise AssertionError("encryption with a forgotten bond succeeded")
            except hci.HCI_Error as error:
                assert error.error_code == hci.HCI_PIN_OR_KEY_MISSING_ERROR
            assert not peer.connection.is_encrypted
        await watcher.close()

    run(body(), timeout=60)


def test_passkey_request_answered_with_gattctl(controllers, gattd, tmp_path):
    require_built(GATTCTL)
    gattd(config_with({"io_capability": "keyboard_only"}))
    socket = str(tmp_path / "control.sock")

    async def body():
        watcher = await ControlClient.open(socket)
        assert (await watcher.request({"op": "watch"}))["ok"]
        async with central_device(controllers[1]) as device:
            phone = Phone(PairingDelegate.DISPLAY_OUTPUT_ONLY)
            device.pairing_config_factory = lambda _connection: phone_config(phone)
            peer = await connect_peer(device, gattd_address(controllers))
            pairing = asyncio.ensure_future(peer.connection.pair())
            prompt = await watcher.event("passkey_request")
            assert prompt["central"] == PHONE
            passkey = await asyncio.wait_for(phone.shown, 5)
            await gattctl_ok(socket, "passkey", f"{passkey:06d}", "--central", PHONE)
            await asyncio.wait_for(pairing, 10)
            assert peer.connection.authenticated
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
            assert await peer.gatt_client.read_value(AUTHENTICATED) == b"\xa5"
        await watcher.close()

    run(body(), timeout=60)


def test_confirm_pairing_asks_before_just_works(controllers, gattd, tmp_path):
    """`confirm_pairing`: even Just Works waits for `gattctl pair-accept`; with nobody watching
    (or `pair-reject`) the central gets Pairing Failed, Pairing Not Supported (0x05)."""
    require_built(GATTCTL)
    gattd(config_with({"confirm_pairing": True}))
    socket = str(tmp_path / "control.sock")

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = lambda _c: PairingConfig(
                sc=True, mitm=False, bonding=True, identity_address_type=PairingConfig.AddressType.RANDOM)
            # Nobody watches: refused at once.
            peer = await connect_peer(device, gattd_address(controllers))
            try:
                await asyncio.wait_for(peer.connection.pair(), 10)
                raise AssertionError("paired without anyone accepting")
            except ProtocolError as error:
                assert error.error_code == PAIRING_NOT_SUPPORTED
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            watcher = await ControlClient.open(socket)
            assert (await watcher.request({"op": "watch"}))["ok"]
            peer = await connect_peer(device, gattd_address(controllers))
            pairing = asyncio.ensure_future(peer.connection.pair())
            prompt = await watcher.event("pairing_request")
            assert (prompt["central"], prompt["method"], prompt["io_capability"]) == (PHONE, "just_works", "no_input_no_output")
            await gattctl_ok(socket, "pair-accept")
            await asyncio.wait_for(pairing, 10)
            assert peer.connection.is_encrypted
            assert (await watcher.event("paired"))["bonded"] is True
            await watcher.close()

    run(body(), timeout=60)
