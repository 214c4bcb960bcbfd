"""The control socket's answers to bad input: every case its own test, and the
connection stays usable after each (checked with a `get` on the same connection)."""

from __future__ import annotations

import json

import pytest

from control_client import ControlClient
from harness import run

CONFIG = """{
  "name": "Ctl Errors",
  "advertising": { "local_name": "CTL-ERR", "interval_ms": [20, 30] },
  "services": [
    { "id": "svc", "uuid": "7a1c0000-0000-4000-8000-000000000000", "characteristics": [
        { "id": "stream", "uuid": "7a1c0001-0000-4000-8000-000000000000", "properties": ["notify"], "max_length": 4 },
        { "id": "plain", "uuid": "7a1c0002-0000-4000-8000-000000000000", "properties": ["read", "write"],
          "value": { "hex": "0102" }, "max_length": 8 } ] }
  ]
}
"""


@pytest.fixture
def control(gattd, tmp_path):
    """The control socket of a gattd that has brought its controller up and advertises (so
    `status` reports the controller's address)."""
    process = gattd(CONFIG)
    run(process.wait_for_log(r'advertising as "CTL-ERR"', timeout=10))
    return tmp_path / "control.sock"


def check(socket_path, line: bytes, code: str, *, id_echo=None):
    async def body():
        client = await ControlClient.open(socket_path)
        reply = await client.raw_request(line)
        assert reply["ok"] is False, reply
        assert reply["error"] == code, reply
        assert isinstance(reply["message"], str) and reply["message"]
        if id_echo is not None:
            assert reply["id"] == id_echo
        # The connection is still usable.
        after = await client.request({"op": "get", "characteristic": "plain", "id": "after"})
        assert after == {"ok": True, "value": {"hex": "0102"}, "id": "after"}
        await client.close()
        return reply

    return run(body())


def test_malformed_json(control):
    check(control, b'{"op": "get", ', "bad_json")


def test_not_an_object(control):
    check(control, b'[1, 2]', "bad_json")


def test_unknown_op(control):
    check(control, b'{"op": "explode", "id": 7}', "unknown_op", id_echo=7)


def test_missing_op(control):
    check(control, b'{"characteristic": "plain"}', "missing_field")


def test_missing_characteristic(control):
    check(control, b'{"op": "get", "id": "x"}', "missing_field", id_echo="x")


def test_missing_value(control):
    check(control, b'{"op": "set", "characteristic": "plain"}', "missing_field")


def test_unknown_characteristic(control):
    check(control, b'{"op": "get", "characteristic": "nope"}', "unknown_characteristic")


def test_value_too_long_set(control):
    check(control, b'{"op": "set", "characteristic": "plain", "value": {"hex": "000102030405060708"}}', "value_too_long")


def test_value_too_long_notify(control):
    check(control, b'{"op": "notify", "characteristic": "stream", "value": {"hex": "0001020304"}}', "value_too_long")


def test_bad_hex(control):
    check(control, b'{"op": "set", "characteristic": "plain", "value": {"hex": "0g"}}', "invalid_value")


def test_odd_hex(control):
    check(control, b'{"op": "set", "characteristic": "plain", "value": {"hex": "012"}}', "invalid_value")


def test_bad_base64(control):
    check(control, b'{"op": "set", "characteristic": "plain", "value": {"base64": "*"}}', "invalid_value")


def test_value_with_two_encodings(control):
    check(control, b'{"op": "set", "characteristic": "plain", "value": {"hex": "01", "utf8": "a"}}', "invalid_value")


def test_not_notifiable(control):
    check(control, b'{"op": "notify", "characteristic": "plain", "value": {"hex": "01"}}', "not_notifiable")


def test_unknown_central_notify(control):
    check(control, b'{"op": "notify", "characteristic": "stream", "value": {"hex": "01"}, "central": "11:22:33:44:55:66"}',
          "unknown_central")


def test_unknown_central_disconnect(control):
    check(control, b'{"op": "disconnect", "central": "11:22:33:44:55:66"}', "unknown_central")


def test_malformed_central(control):
    check(control, b'{"op": "disconnect", "central": "not-an-address"}', "unknown_central")


def test_unknown_request(control):
    check(control, b'{"op": "respond", "request": 12345, "status": "success", "value": {"hex": ""}}', "unknown_request")


def test_bad_status_name(control):
    check(control, b'{"op": "respond", "request": 1, "status": "sort_of_ok"}', "invalid_value")


def test_wrong_type(control):
    check(control, b'{"op": "advertise", "enable": "yes"}', "invalid_value")


def test_line_too_long(control):
    line = b'{"op": "get", "characteristic": "' + b"x" * (70 * 1024) + b'"}'
    check(control, line, "bad_json")


def test_several_requests_in_one_write_answered_in_order(control):
    async def body():
        client = await ControlClient.open(control)
        client.send_line(b'{"op":"get","characteristic":"plain","id":1}\n{"op":"nope","id":2}\n'
                         b'{"op":"set","characteristic":"plain","value":{"utf8":"ab"},"id":3}\n'
                         b'{"op":"get","characteristic":"plain","id":4}\n')
        await client.writer.drain()
        replies = [await client.reply() for _ in range(4)]
        assert [r["id"] for r in replies] == [1, 2, 3, 4]
        assert replies[1]["error"] == "unknown_op"
        assert replies[3]["value"] == {"hex": "6162"}
        # The exact text of a reply (stable key order, id last).
        assert client.raw_lines[0] == '{"ok":true,"value":{"hex":"0102"},"id":1}\n'
        await client.close()

    run(body())


def test_status_without_centrals(control):
    async def body():
        client = await ControlClient.open(control)
        reply = await client.request({"op": "status"})
        assert reply["ok"] is True
        assert reply["connections"] == []
        assert reply["address"] == "F0:F0:F0:F0:F0:00"
        assert reply["advertising"] is True
        await client.close()

    run(body())


def test_second_daemon_on_the_same_socket_is_refused(gattd, tmp_path):
    gattd(CONFIG)
    with pytest.raises(RuntimeError, match="another gattd is running"):
        gattd(CONFIG, controller=1)


def test_json_lines_are_valid_json(control):
    async def body():
        client = await ControlClient.open(control)
        await client.raw_request(b'{"op": "get", "characteristic": "a\\"b\\u0001"}')
        for line in client.raw_lines:
            json.loads(line)
        assert '\\"' in client.raw_lines[0] and "\\u0001" in client.raw_lines[0]
        await client.close()

    run(body())
