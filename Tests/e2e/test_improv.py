"""The improv_wifi profile against a client written from the Improv Wi-Fi BLE spec
(improv-wifi.com/ble, version 2.2), not from gattd's code: what Home Assistant's and ESPHome's
web clients do (find the service data 0x4677 in a passive scan, connect, subscribe to Current
State, Error State and RPC Result, write framed RPCs to RPC Command).

The Wi-Fi backend is a fake command that records what it was asked.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat

from bumble import att

from gatt_central import central_device, connect_peer, discover_everything, raw_request
from test_pairing import gattd_address
from harness import both_link_layers, find_characteristic, run, scan_for, wait_for_log
from test_gattctl import gattctl_async

SERVICE = "00467768-6228-2272-4663-277478268000"
STATE, ERROR, RPC, RESULT, CAPABILITIES = (f"00467768-6228-2272-4663-27747826800{n}" for n in range(1, 6))
AUTHORIZATION_REQUIRED, AUTHORIZED, PROVISIONING, PROVISIONED = 1, 2, 3, 4
NO_ERROR, INVALID_RPC, UNKNOWN_COMMAND, UNABLE_TO_CONNECT, NOT_AUTHORIZED = 0, 1, 2, 3, 4
SERVICE_UUID_LE = bytes.fromhex(SERVICE.replace("-", ""))[::-1]


# ---- the client side of the spec ------------------------------------------------------------
def frame(command: int, data: bytes = b"") -> bytes:
    """[command][length][data][checksum: low byte of the sum of the bytes before it]"""
    body = bytes([command, len(data)]) + data
    return body + bytes([sum(body) & 0xFF])


def wifi_settings(ssid: str, password: str) -> bytes:
    s, p = ssid.encode(), password.encode()
    return frame(0x01, bytes([len(s)]) + s + bytes([len(p)]) + p)


def parse_result(value: bytes) -> tuple[int, list[str]]:
    assert sum(value[:-1]) & 0xFF == value[-1], f"bad checksum in {value.hex()}"
    command, length = value[0], value[1]
    assert length == len(value) - 3
    strings, i = [], 2
    while i < 2 + length:
        n = value[i]
        strings.append(value[i + 1:i + 1 + n].decode())
        i += 1 + n
    return command, strings


def improv_state_in(advertisement) -> int | None:
    """The Current State in the advertisement's service data 0x4677, when the advertising data
    (not a scan response: the scan is passive) has both it and the Improv service UUID."""
    data = bytes(advertisement.data)
    fields, i = [], 0
    while i < len(data) and data[i]:
        fields.append((data[i + 1], data[i + 2:i + 1 + data[i]]))
        i += 1 + data[i]
    uuids = b"".join(d for t, d in fields if t in (0x06, 0x07))
    service_data = [d for t, d in fields if t == 0x16 and d[:2] == b"\x77\x46"]
    if SERVICE_UUID_LE not in uuids or not service_data:
        return None
    assert len(service_data[0]) == 8 and service_data[0][4:] == b"\x00\x00\x00\x00"
    return service_data[0][2]


class ImprovClient:
    def __init__(self, peer) -> None:
        self.peer = peer
        self.states: asyncio.Queue[int] = asyncio.Queue()
        self.errors: asyncio.Queue[int] = asyncio.Queue()
        self.results: asyncio.Queue[bytes] = asyncio.Queue()

    async def open(self) -> None:
        await self.peer.request_mtu(247)
        await discover_everything(self.peer)
        await find_characteristic(self.peer, STATE).subscribe(lambda v: self.states.put_nowait(v[0]))
        await find_characteristic(self.peer, ERROR).subscribe(lambda v: self.errors.put_nowait(v[0]))
        await find_characteristic(self.peer, RESULT).subscribe(self.results.put_nowait)

    async def rpc(self, data: bytes, piece: int | None = None) -> None:
        rpc = find_characteristic(self.peer, RPC)
        for i in range(0, len(data), piece or len(data)):
            await rpc.write_value(data[i:i + (piece or len(data))], with_response=True)

    async def read(self, uuid: str) -> bytes:
        return await find_characteristic(self.peer, uuid).read_value()


async def next_of(queue: asyncio.Queue, timeout: float = 10.0):
    return await asyncio.wait_for(queue.get(), timeout)


# ---- the fake backend --------------------------------------------------------------------
def fake_backend(tmp_path, password: str = "correct horse", hang: bool = False) -> tuple[str, str]:
    """A connect command that records its argv and stdin, prints an address and exits 0 for
    `password`, else prints to stderr and exits 1; and a scan command."""
    record = tmp_path / "asked.jsonl"
    script = tmp_path / "wifi-connect"
    script.write_text(f"""#!/bin/sh
line=$(cat)
printf '%s\\n' "$line" >> {record}
printf 'ARGV %s\\n' "$*" >> {record}
{"exec sleep 30" if hang else ""}
case "$line" in
  *'"password":"{password}"'*) echo 192.0.2.7; exit 0 ;;
  *) echo "wrong password for that network" >&2; exit 1 ;;
esac
""")
    scan = tmp_path / "wifi-scan"
    scan.write_text("""#!/bin/sh
echo '{"ssid": "Home", "rssi": -48, "auth": "WPA2"}'
echo '{"ssid": "Cafe", "rssi": -80, "auth": "NO"}'
""")
    for f in (script, scan):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return str(script), str(scan)


def improv_config(connect: str | None, scan: str | None = None, **options) -> str:
    wifi = "networkmanager" if connect is None else {"command": [connect]} | ({"scan_command": [scan]} if scan else {})
    entry = {"profile": "improv_wifi", "id": "improv", "wifi": wifi, "advertising_set": "improv",
             "redirect_url": "http://{ip}/", "device_name": "Test Gateway"} | options
    return json.dumps({
        "name": "Gateway",
        "advertising_sets": [{"id": "improv", "service_uuids": [SERVICE],
                              "service_data": [{"uuid": "4677", "data": {"hex": "010000000000"}}]}],
        "services": [entry]}, indent=1) + "\n"


async def scan_for_state(device, state: int, timeout: float = 10.0):
    return await scan_for(device, lambda a: improv_state_in(a) == state, timeout=timeout, active=False)


@both_link_layers
def test_improv_provisioning_with_authorization(controllers, gattd, tmp_path):
    connect, scan = fake_backend(tmp_path)
    g = gattd(improv_config(connect, scan, authorization=30))
    socket = str(tmp_path / "control.sock")

    async def body():
        async with central_device(controllers[1]) as device:
            # The advertisement says: authorization required (and it carries the UUID too).
            await scan_for_state(device, AUTHORIZATION_REQUIRED)
            peer = await connect_peer(device, gattd_address(controllers))
            improv = ImprovClient(peer)
            await improv.open()
            assert await improv.read(STATE) == bytes([AUTHORIZATION_REQUIRED])
            assert await improv.read(CAPABILITIES) == bytes([0x06])  # device info, scan; no identify
            assert await improv.read(ERROR) == bytes([NO_ERROR])

            # Not authorized: the credentials are refused, the backend not asked.
            await improv.rpc(wifi_settings("Home", "correct horse"))
            assert await next_of(improv.errors) == NOT_AUTHORIZED
            assert not (tmp_path / "asked.jsonl").exists()

            # The button (any program): authorized.
            code, _, err = await gattctl_async("--socket", socket, "improv", "authorize")
            assert code == 0, err
            assert await next_of(improv.states) == AUTHORIZED

            # A wrong password: provisioning, then "unable to connect" and authorized again.
            await improv.rpc(wifi_settings("Home", "wrong"))
            assert await next_of(improv.errors) == NO_ERROR  # the next valid RPC clears the error
            assert await next_of(improv.states) == PROVISIONING
            assert await next_of(improv.errors) == UNABLE_TO_CONNECT
            assert await next_of(improv.states) == AUTHORIZED
            await wait_for_log(g, r"improv: \S*/wifi-connect failed \(exit status 1\): wrong password for that network")

            # The right one, written in 20-byte pieces as some clients do: provisioned, and the
            # RPC result carries the redirect URL with the address the command printed.
            await improv.rpc(wifi_settings("Home", "correct horse"), piece=20)
            assert await next_of(improv.errors) == NO_ERROR
            assert await next_of(improv.states) == PROVISIONING
            assert await next_of(improv.states) == PROVISIONED
            assert parse_result(await next_of(improv.results)) == (0x01, ["http://192.0.2.7/"])

            asked = (tmp_path / "asked.jsonl").read_text().splitlines()
            assert [json.loads(line) for line in asked[0::2]] == [{"ssid": "Home", "password": "wrong"},
                                                                  {"ssid": "Home", "password": "correct horse"}]
            assert all(line == "ARGV " for line in asked[1::2]), "the password is never on a command line"
            await peer.connection.disconnect()
            # The advertisement follows the state.
            await scan_for_state(device, PROVISIONED)

    run(body(), timeout=90)


def test_improv_rpc_errors_device_info_and_scan(controllers, gattd, tmp_path):
    connect, scan = fake_backend(tmp_path)
    gattd(improv_config(connect, scan, authorization="none"))

    async def body():
        async with central_device(controllers[1]) as device:
            await scan_for_state(device, AUTHORIZED)
            peer = await connect_peer(device, gattd_address(controllers))
            improv = ImprovClient(peer)
            await improv.open()

            bad = bytearray(frame(0x03))
            bad[-1] ^= 0xFF
            await improv.rpc(bytes(bad))
            assert await next_of(improv.errors) == INVALID_RPC
            await improv.rpc(frame(0x09))
            assert await next_of(improv.errors) == UNKNOWN_COMMAND
            await improv.rpc(frame(0x01, b"\x09Home"))  # a truncated Send Wi-Fi Settings
            assert await next_of(improv.errors) == INVALID_RPC
            await improv.rpc(frame(0x02))  # identify: not in the capabilities
            assert await next_of(improv.errors) == UNKNOWN_COMMAND

            await improv.rpc(frame(0x03))  # taken: the error is cleared
            assert await next_of(improv.errors) == NO_ERROR
            command, strings = parse_result(await next_of(improv.results))
            assert command == 0x03 and strings[0] == "gattd" and strings[3] == "Test Gateway" and len(strings) == 4
            await improv.rpc(frame(0x04))
            assert parse_result(await next_of(improv.results)) == (0x04, ["Home", "-48", "WPA2", "Cafe", "-80", "NO"])

            # An oversized write is refused by ATT, and the service goes on.
            prepared = await raw_request(peer, att.ATT_Prepare_Write_Request(
                attribute_handle=find_characteristic(peer, RPC).handle, value_offset=600, part_attribute_value=b"x"))
            assert prepared.op_code == att.Opcode.ATT_PREPARE_WRITE_RESPONSE  # checked at execution (Vol 3 Part F §3.4.6.3)
            response = await raw_request(peer, att.ATT_Execute_Write_Request(flags=1))
            assert response.op_code == att.Opcode.ATT_ERROR_RESPONSE
            assert response.error_code in (att.ErrorCode.INVALID_OFFSET, att.ErrorCode.INVALID_ATTRIBUTE_LENGTH)
            await improv.rpc(frame(0x03))
            assert parse_result(await next_of(improv.results))[0] == 0x03

    run(body(), timeout=60)


def test_improv_backend_that_hangs_and_a_central_that_leaves(controllers, gattd, tmp_path):
    connect, _ = fake_backend(tmp_path, hang=True)
    g = gattd(improv_config(connect, authorization="none", timeout_s=1))

    async def body():
        async with central_device(controllers[1]) as device:
            address = gattd_address(controllers)
            peer = await connect_peer(device, address)
            improv = ImprovClient(peer)
            await improv.open()
            await improv.rpc(wifi_settings("Home", "correct horse"))
            assert await next_of(improv.states) == PROVISIONING
            await peer.connection.disconnect()  # mid-provisioning
            await wait_for_log(g, r"improv: \S*/wifi-connect did not finish within 1.0 seconds \(timeout_s\); killed")
            await wait_for_log(g, r'improv: could not join "Home"')
            peer = await connect_peer(device, address)
            improv = ImprovClient(peer)
            await discover_everything(peer)
            assert await improv.read(STATE) == bytes([AUTHORIZED])
            assert await improv.read(ERROR) == bytes([UNABLE_TO_CONNECT])

    run(body(), timeout=60)


def test_improv_through_networkmanager(controllers, gattd, tmp_path, monkeypatch):
    """"wifi": "networkmanager" drives nmcli (a fake here, first in PATH, that records what it
    was asked): a connection of its own with the SSID, brought up with the password on stdin
    (passwd-file /dev/stdin), never on the command line; the scan parses nmcli's terse output."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "nmcli.log"
    nmcli = bin_dir / "nmcli"
    nmcli.write_text(f"""#!/bin/sh
printf 'ARGS %s\\n' "$*" >> {record}
case "$*" in
  *"connection up"*) printf 'STDIN %s\\n' "$(cat)" >> {record} ;;
  *"wifi list"*) printf 'Home\\\\:5G:70:WPA2\\nCafe:30:\\n' ;;
esac
exit 0
""")
    nmcli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    gattd(improv_config(None, authorization="none"))

    async def body():
        async with central_device(controllers[1]) as device:
            peer = await connect_peer(device, gattd_address(controllers))
            improv = ImprovClient(peer)
            await improv.open()
            assert await improv.read(CAPABILITIES) == bytes([0x06])
            await improv.rpc(frame(0x04))
            assert parse_result(await next_of(improv.results)) == (0x04, ["Home:5G", "-65", "WPA2", "Cafe", "-85", "NO"])
            await improv.rpc(wifi_settings("Home:5G", "s3cret pass"))
            assert await next_of(improv.states) == PROVISIONING
            assert await next_of(improv.states) == PROVISIONED
            log = record.read_text()
            assert "s3cret" not in "".join(line for line in log.splitlines() if line.startswith("ARGS")), log
            assert "ARGS connection delete id gattd-improv\n" in log
            assert "ARGS connection add type wifi con-name gattd-improv ifname * ssid Home:5G wifi-sec.key-mgmt wpa-psk\n" in log
            assert "ARGS --wait 60 connection up id gattd-improv passwd-file /dev/stdin\nSTDIN 802-11-wireless-security.psk:s3cret pass\n" in log

    run(body(), timeout=60)
