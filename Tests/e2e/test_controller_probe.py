"""What the controller is and can do, in one place (issue #19, item 5), on both link layers and
both kinds of controller: `gattd --probe --transport SPEC` prints it and exits; gattd logs it in
one line when the controller comes up, and `status` carries it (`controller`). Advertising sets
that the controller cannot take are a config error at start (exit 65, naming the set's path and
the bytes), as an invalid config is; on a controller without extended advertising the sets take
turns, which gattd says once at start and in `status`."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from control_client import ControlClient
from gatt_central import wait_for_log
from harness import GATTD_BINARY, REPO_ROOT, both_link_layers, require_built, run

SETS_CONFIG = REPO_ROOT / "config" / "advertising-sets.json"
BOTH_KINDS = pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])


def probe(transport: str) -> subprocess.CompletedProcess:
    require_built(GATTD_BINARY)
    return subprocess.run([str(GATTD_BINARY), "--probe", "--transport", transport], capture_output=True, text=True, timeout=30)


def fields(report: str) -> dict[str, str]:
    """The probe's `  name   value` lines."""
    return {m[1]: m[2] for m in re.finditer(r"^  (\S+(?: \S+)?)\s{2,}(.*)$", report, re.M)}


@both_link_layers
@BOTH_KINDS
def test_probe_log_line_and_status_agree(controllers, gattd, tmp_path, legacy_only):
    result = probe(controllers[0].transport)
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first == f"controller {controllers[0].address} at {controllers[0].transport}"
    f = fields(result.stdout)
    assert f["version"].startswith("Bluetooth ") and "HCI " in f["version"]
    assert "LE Encryption" in f["LE features"]
    assert ("Extended Advertising" in f["LE features"]) is not legacy_only
    assert re.fullmatch(r"\d+ bytes x \d+ buffers", f["LE ACL"])
    if legacy_only:
        assert f["advertising"] == "legacy advertising"
        assert f["sets"] == "any number, taking turns on the air; 31 bytes of data per set; extended PDUs no"
    else:
        assert f["advertising"].startswith("extended advertising (")
        assert re.fullmatch(r"up to (\d+) on the air at once; (\d+) bytes of data per set; extended PDUs yes", f["sets"])

    # The same facts in gattd's one controller line and in status. A config with legacy sets
    # only: both kinds of controller can serve it.
    config = json.loads(SETS_CONFIG.read_text())
    config["advertising_sets"] = config["advertising_sets"][:1]
    path = tmp_path / "legacy-sets.json"
    path.write_text(json.dumps(config))
    process = gattd(path)

    async def body():
        line = await wait_for_log(process, rf"controller {controllers[0].address}: (Bluetooth .*)$", timeout=10)
        assert "LE features: LE Encryption" in line[1]
        control = await ControlClient.open(tmp_path / "control.sock")
        status = await control.request({"op": "status"})
        await control.close()
        return line, status["controller"]

    line, controller = run(body())
    assert controller["address"] == controllers[0].address
    assert f["version"].startswith(f"Bluetooth {controller['core_version']} (HCI {controller['hci_version']}")
    assert ("Extended Advertising" in controller["le_features"]) is not legacy_only
    assert (controller["advertising_commands"], controller["advertised_by"]) == ("legacy" if legacy_only else "extended", "host")
    assert controller["sets_take_turns"] is legacy_only and controller["extended_pdus"] is not legacy_only
    assert ("max_sets" in controller) is not legacy_only
    assert f["LE ACL"] == f"{controller['acl_buffers']['length']} bytes x {controller['acl_buffers']['count']} buffers"
    log = process.log()
    assert len(re.findall(r"controller \S+: Bluetooth", log)) == 1
    turns = "the 2 advertising sets take turns on the air"
    assert (turns in log) is legacy_only


@both_link_layers
@pytest.mark.parametrize("legacy_only", [True], ids=["legacy-controllers"])
def test_sets_the_controller_cannot_take_are_a_config_error_at_start(controllers, tmp_path, legacy_only):
    """The issue's config (a 120-byte extended set) on a controller without extended advertising."""
    require_built(GATTD_BINARY)
    result = subprocess.run(
        [str(GATTD_BINARY), "--config", str(SETS_CONFIG), "--transport", controllers[0].transport,
         "--control", str(tmp_path / "control.sock"), "--state-dir", str(tmp_path / "state")],
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 65, result.stderr
    assert (f"{SETS_CONFIG}: advertising_sets[1].extended: extended advertising PDUs need LE Extended Advertising, "
            "and this controller has legacy advertising only") in result.stderr
    assert "the controller cannot advertise the config's advertising sets (1 error above); exiting" in result.stderr
    # Nothing went on the air: the controller was brought up (HCI Reset), and not one
    # advertising enable reached it.
    assert controllers[0].commands(0x0C03)
    assert not controllers[0].commands(0x200A) and not controllers[0].commands(0x2039)


def test_probe_of_a_controller_that_is_not_there_fails_clearly(tmp_path):
    result = probe("tcp:127.0.0.1:1")
    assert result.returncode == 69
    assert result.stdout == ""
    assert result.stderr.strip().endswith("gattd: probing tcp:127.0.0.1:1: cannot open tcp:127.0.0.1:1: Connection refused")
    result = probe("nonsense:x")
    assert result.returncode == 64 and "--transport" in result.stderr


@both_link_layers
@BOTH_KINDS
def test_check_config_with_probe_checks_the_sets_against_the_controller(controllers, legacy_only):
    """`gattd --check-config FILE --probe --transport SPEC`: the config's rules, then its sets
    against that controller, as gattd would report them at start."""
    require_built(GATTD_BINARY)
    result = subprocess.run([str(GATTD_BINARY), "--check-config", str(SETS_CONFIG), "--probe", "--transport", controllers[0].transport],
                            capture_output=True, text=True, timeout=30)
    assert f"controller {controllers[0].address} at {controllers[0].transport}" in result.stdout
    if legacy_only:
        assert result.returncode == 65, result.stderr
        assert (f"{SETS_CONFIG}: advertising_sets[1].extended: extended advertising PDUs need LE Extended Advertising"
                in result.stderr)
        assert result.stderr.strip().endswith(f"{SETS_CONFIG}: 1 advertising set error with this controller")
    else:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip().endswith(f"{SETS_CONFIG}: the 3 advertising sets fit this controller")
