"""`security.request_security_on_connect`: gattd sends an SMP Security Request (Core Spec
Vol 3 Part H §3.6.7) as soon as a central connects, with its AuthReq (bonding); by default
it sends none and waits for the central to meet an attribute that needs security.
"""

from __future__ import annotations

import asyncio

from bumble.smp import AuthReq

from gatt_central import central_device, connect_peer
from harness import run
from test_pairing import ENCRYPTED, config_with, gattd_address, pairing


async def security_request(controllers, timeout: float):
    """Connects and returns the AuthReq of the Security Request gattd sends (None when none
    comes within `timeout`), then pairs if one came."""
    async with central_device(controllers[1]) as device:
        device.pairing_config_factory = pairing(sc=True)
        # The listener goes on the connection as it comes up, before anything else runs on it:
        # gattd sends its Security Request right after the connection.
        requested = asyncio.get_running_loop().create_future()

        def on_connection(connection) -> None:
            connection.on("security_request", lambda auth_req: requested.done() or requested.set_result(auth_req))

        device.on("connection", on_connection)
        peer = await connect_peer(device, gattd_address(controllers))
        try:
            auth_req = await asyncio.wait_for(requested, timeout)
        except asyncio.TimeoutError:
            return None
        await asyncio.wait_for(peer.connection.pair(), 15)
        assert peer.connection.is_encrypted
        assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
        return auth_req


def test_a_security_request_on_connect_when_configured(controllers, gattd):
    gattd(config_with({"request_security_on_connect": True}))
    auth_req = run(security_request(controllers, 5), timeout=60)
    assert auth_req is not None, "no Security Request"
    assert auth_req & AuthReq.BONDING and auth_req & AuthReq.SC
    assert not auth_req & AuthReq.MITM, "no_input_no_output offers no MITM"


def test_no_security_request_by_default(controllers, gattd):
    gattd(config_with())
    assert run(security_request(controllers, 2), timeout=60) is None
