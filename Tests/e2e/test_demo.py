"""scripts/demo (docs/demo.md) with the default config and with others: the scripted central
finds gattd by the name it advertises (or its address), prints whatever tree it finds and
subscribes only when a characteristic can notify or indicate."""

from __future__ import annotations

import subprocess

import pytest

from harness import REPO_ROOT, require_built

DEMO = REPO_ROOT / "scripts" / "demo"


@pytest.fixture(autouse=True)
def built() -> None:
    require_built(REPO_ROOT / ".build" / "debug" / "gattd")
    require_built(REPO_ROOT / ".build" / "debug" / "gattctl")
    assert (REPO_ROOT / ".venv" / "bin" / "python").exists(), "scripts/demo needs the .venv that scripts/test creates"


def demo(*args: str) -> str:
    result = subprocess.run([str(DEMO), "--no-build", *args], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_default_config_notifies_heart_rate():
    out = demo()
    assert '== Scanning for "HR-Demo"' in out
    assert "pushing 3 values with gattctl notify hr_measurement" in out
    assert "notification 3: 00 50  (flags 0x00, 80 bpm)" in out


def test_a_config_without_notify_and_with_a_shortened_name(tmp_path):
    config = tmp_path / "plain.json"
    config.write_text("""{ "name": "Kitchen Window Thermometer 7", "services": [
      { "uuid": "180F", "characteristics": [
        { "id": "level", "uuid": "2A19", "properties": ["read"], "value": { "hex": "64" } } ] } ] }""")
    out = demo("--config", str(config))
    assert '== Scanning for "Kitchen Window Thermometer"' in out  # shortened: no room for the last 2 bytes
    assert "characteristic 2A19 (Battery Level)  [read]" in out
    assert "value: 64" in out
    assert "no characteristic can notify or indicate: nothing to subscribe to" in out


def test_an_ibeacon_is_found_by_address():
    out = demo("--config", str(REPO_ROOT / "config" / "ibeacon.json"))
    assert "== Scanning for F0:F0:F0:F0:F0:00" in out
    assert "Manufacturer Specific Data: company 0x004C, 02 15" in out
    assert "not connectable" in out
