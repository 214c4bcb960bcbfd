"""Advertising sets (`advertising_sets`, config/advertising-sets.json: the issue's example) on
the H4 transports, on both link layers: `status` lists every set with its PDUs, PHYs and
payloads; the `advertise` op takes a set and names the sets when the id is unknown; the H4 host
advertises the primary set only so far and refuses the others with the reason (an `advertising`
event with `"state":"failed"`). The kernel transport puts all three on the air: see
Tests/kernel-vm/test.sh."""

from __future__ import annotations

import subprocess

from control_client import ControlClient
from gatt_central import wait_for_log
from harness import REPO_ROOT, both_link_layers, require_built, run

GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"
SETS_CONFIG = REPO_ROOT / "config" / "advertising-sets.json"


@both_link_layers
def test_status_lists_every_set_and_the_advertise_op_takes_a_set(controllers, gattd, tmp_path):
    require_built(GATTCTL)
    process = gattd(SETS_CONFIG)

    async def body():
        await wait_for_log(process, r'advertising as "SetsA"')
        control = await ControlClient.open(tmp_path / "control.sock")
        status = await control.request({"op": "status"})
        sets = {s["id"]: s for s in status["sets"]}
        assert list(sets) == ["primary", "beacon", "long"]
        assert sets["primary"]["advertising"] is True
        assert (sets["primary"]["pdus"], sets["primary"]["connectable"]) == ("legacy", True)
        assert (sets["beacon"]["pdus"], sets["beacon"]["connectable"], sets["beacon"]["scannable"]) == ("legacy", False, False)
        assert bytes.fromhex(sets["beacon"]["advertising_data"]["hex"])[3:9] == bytes([0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15])
        long = sets["long"]
        assert (long["pdus"], long["primary_phy"], long["secondary_phy"], long["connectable"]) == ("extended", "1m", "1m", False)
        assert bytes.fromhex(long["advertising_data"]["hex"])[-8:] == bytes(range(0x70, 0x78))
        assert len(bytes.fromhex(long["advertising_data"]["hex"])) > 31

        # The H4 host advertises the primary set only so far: the others are off, and asking
        # for one again says why.
        assert sets["beacon"]["advertising"] is False and long["advertising"] is False
        reply = await control.request({"op": "advertise", "enable": False, "set": "nope"})
        assert reply["ok"] is False and reply["error"] == "invalid_value"
        assert reply["message"] == 'no advertising set "nope"; the sets are "primary", "beacon", "long"'
        assert await control.request({"op": "watch"}) == {"ok": True}
        assert await control.request({"op": "advertise", "enable": True, "set": "beacon"}) == {"ok": True}
        event = await control.event("advertising")
        assert (event["set"], event["state"]) == ("beacon", "failed") and "primary set" in event["reason"]
        # The primary set's advertise op still works, and only it stops.
        assert await control.request({"op": "advertise", "enable": False}) == {"ok": True}
        assert await control.event("advertising") == {"event": "advertising", "set": "primary", "state": "stopped"}
        await control.close()

    run(body())

    # gattctl status decodes every set.
    out = subprocess.run([str(GATTCTL), "--socket", str(tmp_path / "control.sock"), "status"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 0, out.stderr
    assert "set beacon: off, legacy PDUs, non-connectable" in out.stdout
    assert "set long: off, extended PDUs (primary PHY LE 1M, secondary PHY LE 1M), non-connectable" in out.stdout
