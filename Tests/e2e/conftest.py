"""Fixtures for the end-to-end tests. See README.md in this folder."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from harness import GattdProcess, VirtualControllers, default_link_layer


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the item so fixtures can print logs on failure."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


def _failed(request) -> bool:
    return any(getattr(getattr(request.node, f"report_{phase}", None), "failed", False)
               for phase in ("setup", "call"))


def _print_log(title: str, text: str) -> None:
    print(f"\n===== {title} =====\n{text[-20000:] if text else '(empty)'}\n===== end of {title} =====")


@pytest.fixture
def controller_count() -> int:
    """How many virtual controllers the `controllers` fixture starts; override per module or test."""
    return 2


@pytest.fixture
def legacy_only() -> bool:
    """Whether the controllers lack extended advertising (hosts then use legacy commands)."""
    return False


@pytest.fixture
def batch_completions() -> bool:
    """Whether the controllers report the completions of a batch of host ACL packets in one
    Number Of Completed Packets event (default: one event per packet, as stock Bumble)."""
    return False


@pytest.fixture
def link_layer() -> str:
    """Which simulated air the `controllers` fixture starts: "bumble" (Bumble's LocalLink,
    virtual_controllers.py) or "rootcanal" (Android's rootcanal, rootcanal_controllers.py).
    Default "bumble" (or $GATTD_E2E_LINK_LAYER); a test runs on both with
    `@both_link_layers` (harness.py), ids `[bumble]` and `[rootcanal]`."""
    return default_link_layer()


@pytest.fixture
def controllers(request, tmp_path: Path, controller_count: int, legacy_only: bool,
                batch_completions: bool, link_layer: str) -> Iterator[VirtualControllers]:
    """A fresh simulated radio with `controller_count` virtual controllers (subprocess).

    `controllers[i].transport` is the gattd transport string, `.bumble_transport` the one for a
    Bumble Device, `.commands(opcode)` the HCI commands that controller received. The
    controllers' process must still run at teardown: a link layer that died (rootcanal aborts
    on host behaviour it does not accept) fails the test.
    """
    link = VirtualControllers(controller_count, tmp_path, legacy_only=legacy_only,
                              batch_completions=batch_completions, link_layer=link_layer).start()
    yield link
    died = link.process is not None and link.process.poll() is not None
    link.stop()
    if died or _failed(request):
        _print_log(f"{link_layer} controllers log", link.log())
    if died:
        pytest.fail(f"the {link_layer} controllers exited during the test (status {link.process.returncode})")


@pytest.fixture
def gattd(request, tmp_path: Path, controllers: VirtualControllers) -> Iterator[Callable[..., GattdProcess]]:
    """Factory: `gattd(config_text, controller=0, extra_args=[])` starts gattd on a virtual
    controller and returns the GattdProcess once its control socket listens. A gattd that is not
    built, or exits at start, fails the test. Every gattd started is stopped at teardown; its log
    is printed if the test failed."""
    started: list[GattdProcess] = []

    def start(config: str | Path, controller: int = 0, extra_args: list[str] | None = None) -> GattdProcess:
        if isinstance(config, str) and "\n" in config:
            path = tmp_path / f"gattd-{len(started)}.conf"
            path.write_text(config)
        else:
            path = Path(config)
        # Private control socket and state directory, debug logs; extra_args may add more.
        state_dir = tmp_path / "state"
        state_dir.mkdir(exist_ok=True)
        arguments = ["--control", str(tmp_path / "control.sock"), "--state-dir", str(state_dir),
                     "--log-level", "debug", *(extra_args or [])]
        process = GattdProcess(path, controllers[controller].transport, tmp_path, arguments,
                               name=f"gattd-{len(started)}")
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()
    if _failed(request):
        for process in started:
            _print_log(f"{process.log_path.name} ({' '.join(process.command)})", process.log())
