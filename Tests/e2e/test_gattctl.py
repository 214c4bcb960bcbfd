"""gattctl against a fake control server (no gattd, no Bluetooth).

A tiny server on a temp Unix socket records every request line and answers with a
scripted responder, so each test checks both the exact requests gattctl sends and how
it renders replies, errors and events.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from typing import Callable

import pytest

from harness import REPO_ROOT, require_built

GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"


@pytest.fixture(autouse=True)
def gattctl_is_built() -> None:
    """Every test here runs gattctl: a missing binary fails each test (never skips it)."""
    require_built(GATTCTL)


class Connection:
    """One accepted client: `send(obj)` writes a JSON line."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, obj: dict) -> None:
        self.send_raw(json.dumps(obj, separators=(",", ":")))

    def send_raw(self, line: str) -> None:
        with self.lock:
            try:
                self.sock.sendall((line + "\n").encode())
            except OSError:
                pass


Responder = Callable[[dict, Connection], None]


def ok(request: dict, conn: Connection, **fields) -> None:
    conn.send({"ok": True, **({"id": request["id"]} if "id" in request else {}), **fields})


def error(request: dict, conn: Connection, code: str, message: str) -> None:
    conn.send({"ok": False, "id": request.get("id"), "error": code, "message": message})


class FakeGattd:
    """Listens on `path`; `requests` holds every parsed request line, in order."""

    def __init__(self, path: str, responder: Responder):
        self.path = path
        self.responder = responder
        self.requests: list[dict] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(8)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        conn = Connection(sock)
        buffer = b""
        with sock:
            while True:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                buffer += data
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    request = json.loads(line)
                    self.requests.append(request)
                    self.responder(request, conn)

    def close(self) -> None:
        self.server.close()

    def ops(self) -> list[dict]:
        """The requests without their "id" member."""
        return [{k: v for k, v in r.items() if k != "id"} for r in self.requests]


@pytest.fixture
def sockdir():
    # Short path: sun_path is 108 bytes and pytest's tmp_path can be long.
    d = tempfile.mkdtemp(prefix="gattctl-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def fake(sockdir):
    servers: list[FakeGattd] = []

    def start(responder: Responder) -> FakeGattd:
        server = FakeGattd(os.path.join(sockdir, "control.sock"), responder)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.close()


def gattctl(*args: str, socket_path: str | None = None, stdin: str | None = None, env: dict | None = None,
            timeout: float = 20, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    argv = [*(prefix or []), str(GATTCTL), *args]
    if socket_path is not None:
        argv += ["--socket", socket_path]
    full_env = {k: v for k, v in os.environ.items() if k != "GATTD_SOCKET"}
    full_env.update(env or {})
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout, env=full_env)


def always_ok(request: dict, conn: Connection) -> None:
    ok(request, conn)


# ---------------------------------------------------------------- one binary, two names


def test_gattd_called_gattctl_is_gattctl(fake, tmp_path):
    """The installed gattctl is a link to gattd (scripts/install, scripts/package): called by
    that name, the gattd executable is gattctl; by any other name it stays gattd."""
    gattd = require_built(REPO_ROOT / ".build" / "debug" / "gattd")
    (tmp_path / "gattctl").symlink_to(gattd)
    (tmp_path / "gattd").symlink_to(gattd)
    env = {k: v for k, v in os.environ.items() if k != "GATTD_SOCKET"}

    def run(name: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(tmp_path / name), *args], capture_output=True, text=True, timeout=20, env=env)

    assert run("gattctl", "--help").stdout.startswith("OVERVIEW: Control a running gattd")
    assert "USAGE: gattctl [--socket <path>] <subcommand>" in run("gattctl", "--help").stdout
    assert "USAGE: gattd " in run("gattd", "--help").stdout
    assert run("gattctl", "--version").stdout == run("gattd", "--version").stdout != ""
    server = fake(always_ok)
    result = run("gattctl", "notify", "hr_measurement", "00 48", "--socket", server.path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert server.requests == [{"op": "notify", "characteristic": "hr_measurement", "value": {"hex": "00 48"}, "id": 1}]


# ---------------------------------------------------------------- notify


def test_notify_sends_hex_by_default_and_is_silent(fake):
    server = fake(always_ok)
    result = gattctl("notify", "hr_measurement", "00 48", socket_path=server.path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert server.requests == [{"op": "notify", "characteristic": "hr_measurement", "value": {"hex": "00 48"}, "id": 1}]


def test_notify_utf8_base64_and_central(fake):
    server = fake(always_ok)
    assert gattctl("notify", "temp", "21.5", "--utf8", "--central", "11:22:33:44:55:66", socket_path=server.path).returncode == 0
    assert gattctl("notify", "temp", "AEg=", "--base64", socket_path=server.path).returncode == 0
    assert server.ops() == [
        {"op": "notify", "characteristic": "temp", "value": {"utf8": "21.5"}, "central": "11:22:33:44:55:66"},
        {"op": "notify", "characteristic": "temp", "value": {"base64": "AEg="}},
    ]


def test_invalid_hex_is_rejected_locally_with_a_hint(fake):
    server = fake(always_ok)
    result = gattctl("notify", "name", "hello", socket_path=server.path)
    assert result.returncode == 64
    assert result.stderr == ('gattctl: invalid hex value "hello": \'h\' at position 1 is not a hex digit '
                             "(use --utf8 to send text)\n")
    assert server.requests == []


def test_notify_single_value_waits_out_busy(fake):
    attempts = []

    def responder(request, conn):
        attempts.append(request["value"])
        if len(attempts) == 1:
            error(request, conn, "busy", "the notification queue is full")
            threading.Timer(0.2, lambda: conn.send({"event": "ready"})).start()
        else:
            ok(request, conn, sent=1)

    server = fake(responder)
    result = gattctl("notify", "hr", "0048", socket_path=server.path)
    assert (result.returncode, result.stderr) == (0, "")
    assert attempts == [{"hex": "0048"}, {"hex": "0048"}]


def test_notify_stdin_streams_every_line_in_order_through_busy_cycles(fake):
    """Every third request is refused as busy; gattctl must resend it after "ready"."""
    count = {"n": 0}

    def responder(request, conn):
        count["n"] += 1
        if count["n"] % 3 == 0:
            error(request, conn, "busy", "queue full")
            # Unrelated events before the ready must be ignored.
            conn.send({"event": "mtu", "central": "11:22:33:44:55:66", "mtu": 247})
            threading.Timer(0.05, lambda: conn.send({"event": "ready"})).start()
        else:
            ok(request, conn, sent=1)

    server = fake(responder)
    lines = [f"{20 + i / 10:.1f}" for i in range(20)]
    result = gattctl("notify", "temp", "-", "--utf8", socket_path=server.path, stdin="\n".join(lines) + "\n\n")
    assert (result.returncode, result.stderr) == (0, "")
    sent = [r["value"]["utf8"] for r in server.requests]
    # Each busy value appears twice in a row; de-duplicated the order is exactly the input.
    deduped = [v for i, v in enumerate(sent) if i == 0 or sent[i - 1] != v]
    assert deduped == lines
    assert len(sent) > len(lines)  # busy really happened
    assert all(r["characteristic"] == "temp" for r in server.requests)
    assert len({r["id"] for r in server.requests}) == len(server.requests)  # fresh ids
    # One connection for the whole stream.
    assert [r["id"] for r in server.requests] == list(range(1, len(server.requests) + 1))


def test_notify_stdin_skips_rejected_values_and_stops_on_fatal_errors(fake):
    def responder(request, conn):
        v = request["value"]["hex"]
        if v == "ffffffff":
            error(request, conn, "value_too_long", "4 bytes exceed max_length 2")
        elif v == "dead":
            error(request, conn, "unknown_characteristic", 'no characteristic "x"')
        else:
            ok(request, conn, sent=1)

    server = fake(responder)
    result = gattctl("notify", "x", "-", socket_path=server.path, stdin="0102\nzz\nffffffff\r\n0304\n")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "gattctl: stdin line 2: invalid hex value \"zz\": 'z' at position 1 is not a hex digit (use --utf8 to send text); skipped",
        "gattctl: stdin line 3: 4 bytes exceed max_length 2; skipped",
        "gattctl: 2 values not sent",
    ]
    assert [r["value"]["hex"] for r in server.requests] == ["0102", "ffffffff", "0304"]

    server.requests.clear()
    result = gattctl("notify", "x", "-", socket_path=server.path, stdin="0102\ndead\n0304\n")
    assert result.returncode == 1
    assert result.stderr == 'gattctl: stdin line 2: no characteristic "x"\n'
    assert [r["value"]["hex"] for r in server.requests] == ["0102", "dead"]


# ---------------------------------------------------------------- set / get


def test_set_and_error_reply(fake):
    def responder(request, conn):
        if request["characteristic"] == "nope":
            error(request, conn, "unknown_characteristic", 'no characteristic with id or UUID "nope"')
        else:
            ok(request, conn)

    server = fake(responder)
    result = gattctl("set", "label", "Kitchen", "--utf8", socket_path=server.path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    result = gattctl("set", "nope", "01", socket_path=server.path)
    assert result.returncode == 1
    assert result.stderr == 'gattctl: no characteristic with id or UUID "nope"\n'
    assert server.ops() == [
        {"op": "set", "characteristic": "label", "value": {"utf8": "Kitchen"}},
        {"op": "set", "characteristic": "nope", "value": {"hex": "01"}},
    ]


def test_get_prints_in_each_encoding(fake):
    values = {"label": "4b69746368656e", "raw": "ff00"}

    def responder(request, conn):
        # An event before the reply must not be taken for it.
        conn.send({"event": "ready"})
        ok(request, conn, value={"hex": values[request["characteristic"]]})

    server = fake(responder)
    assert gattctl("get", "label", socket_path=server.path).stdout == "4b69746368656e\n"
    assert gattctl("get", "label", "--utf8", socket_path=server.path).stdout == "Kitchen\n"
    assert gattctl("get", "label", "--base64", socket_path=server.path).stdout == "S2l0Y2hlbg==\n"
    result = gattctl("get", "raw", "--utf8", socket_path=server.path)
    assert result.returncode == 1
    assert result.stderr == "gattctl: the value (ff00) is not valid UTF-8; use --hex\n"
    assert server.ops()[0] == {"op": "get", "characteristic": "label"}


# ---------------------------------------------------------------- status


STATUS = {
    "advertising": True,
    "address": "F0:F0:F0:F0:F0:00",
    "connections": [
        {"central": "11:22:33:44:55:66", "address_type": "random", "mtu": 247, "security": "medium",
         "subscriptions": [{"characteristic": "hr_measurement", "notify": True, "indicate": False},
                           {"characteristic": "battery", "notify": True, "indicate": True}],
         "queue": 3, "interval_ms": 11.25, "latency": 0, "timeout_ms": 2000, "tx_phy": "2m", "rx_phy": "2m",
         "tx_octets": 251, "rx_octets": 251},
        {"central": "AA:BB:CC:DD:EE:FF", "address_type": "public", "mtu": 23, "security": "low",
         "subscriptions": [], "queue": 0},
    ],
}


def test_status_table(fake):
    server = fake(lambda r, c: ok(r, c, **STATUS))
    result = gattctl("status", socket_path=server.path)
    assert result.returncode == 0
    assert result.stdout == (
        "advertising  yes\n"
        "address      F0:F0:F0:F0:F0:00\n"
        "connections  2\n"
        "\n"
        "CENTRAL            TYPE    MTU  SECURITY  QUEUE  LINK                             SUBSCRIPTIONS\n"
        "11:22:33:44:55:66  random  247  medium        3  11.25ms/0/2000ms 2M/2M 251/251B  hr_measurement (notify), battery (notify, indicate)\n"
        "AA:BB:CC:DD:EE:FF  public   23  low           0  -                                -\n"
    )
    assert server.ops() == [{"op": "status"}]


def test_status_without_connections_and_json(fake):
    server = fake(lambda r, c: ok(r, c, advertising=False, address="F0:F0:F0:F0:F0:00", connections=[]))
    assert gattctl("status", socket_path=server.path).stdout == (
        "advertising  no\naddress      F0:F0:F0:F0:F0:00\nconnections  0\n")
    out = json.loads(gattctl("status", "--json", socket_path=server.path).stdout)
    assert out == {"ok": True, "id": 1, "advertising": False, "address": "F0:F0:F0:F0:F0:00", "connections": []}


# ---------------------------------------------------------------- watch


EVENTS = [
    {"event": "connected", "central": "11:22:33:44:55:66"},
    {"event": "mtu", "central": "11:22:33:44:55:66", "mtu": 247},
    {"event": "subscribed", "central": "11:22:33:44:55:66", "characteristic": "hr", "notify": True, "indicate": False},
    {"event": "written", "central": "11:22:33:44:55:66", "characteristic": "label", "value": {"hex": "4869"}},
    {"event": "write_request", "central": "11:22:33:44:55:66", "request": 7, "characteristic": "cp", "offset": 0,
     "value": {"hex": "01ff"}},
    {"event": "disconnected", "central": "11:22:33:44:55:66", "reason": "remote_user_terminated_connection"},
]


def watch_responder(request, conn):
    ok(request, conn)
    for e in EVENTS:
        conn.send(e)
    # Then the daemon goes away.
    conn.sock.shutdown(socket.SHUT_RDWR)


def test_watch_readable_lines(fake):
    server = fake(watch_responder)
    result = gattctl("watch", socket_path=server.path)
    assert result.returncode == 1
    assert result.stderr == "gattctl: gattd closed the connection\n"
    lines = result.stdout.splitlines()
    assert all(re.match(r"^\d\d:\d\d:\d\d\.\d\d\d ", line) for line in lines)
    assert [line[13:] for line in lines] == [
        "connected central=11:22:33:44:55:66",
        "mtu central=11:22:33:44:55:66 mtu=247",
        "subscribed central=11:22:33:44:55:66 characteristic=hr notify=true indicate=false",
        'written central=11:22:33:44:55:66 characteristic=label value=4869 "Hi"',
        "write_request central=11:22:33:44:55:66 characteristic=cp request=7 offset=0 value=01ff",
        "disconnected central=11:22:33:44:55:66 reason=remote_user_terminated_connection",
    ]
    assert server.ops() == [{"op": "watch"}]


def test_watch_json_prints_raw_lines(fake):
    server = fake(watch_responder)
    result = gattctl("watch", "--json", socket_path=server.path)
    assert result.returncode == 1
    assert [json.loads(line) for line in result.stdout.splitlines()] == EVENTS
    assert result.stdout.splitlines()[0] == '{"event":"connected","central":"11:22:33:44:55:66"}'


def test_watch_streams_before_the_connection_ends(fake):
    """Lines must reach a pipe as they happen, not when gattctl exits."""
    release = threading.Event()

    def responder(request, conn):
        ok(request, conn)
        conn.send(EVENTS[0])
        release.wait(10)
        conn.sock.shutdown(socket.SHUT_RDWR)

    server = fake(responder)
    proc = subprocess.Popen([str(GATTCTL), "watch", "--socket", server.path], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.endswith("connected central=11:22:33:44:55:66\n")
        assert proc.poll() is None
    finally:
        release.set()
        proc.wait(10)


# ---------------------------------------------------------------- advertise / disconnect


def test_advertise_and_disconnect(fake):
    def responder(request, conn):
        if request["op"] == "disconnect" and request["central"] != "11:22:33:44:55:66":
            error(request, conn, "unknown_central", f"no central {request['central']} is connected")
        else:
            ok(request, conn)

    server = fake(responder)
    assert gattctl("advertise", "off", socket_path=server.path).returncode == 0
    assert gattctl("advertise", "on", socket_path=server.path).returncode == 0
    assert gattctl("disconnect", "11:22:33:44:55:66", socket_path=server.path).returncode == 0
    result = gattctl("disconnect", "00:00:00:00:00:01", socket_path=server.path)
    assert (result.returncode, result.stderr) == (1, "gattctl: no central 00:00:00:00:00:01 is connected\n")
    assert server.ops() == [
        {"op": "advertise", "enable": False},
        {"op": "advertise", "enable": True},
        {"op": "disconnect", "central": "11:22:33:44:55:66"},
        {"op": "disconnect", "central": "00:00:00:00:00:01"},
    ]
    assert gattctl("advertise", "maybe", socket_path=server.path).returncode == 64


def test_connection_parameters(fake):
    def responder(request, conn):
        if request.get("preset") == "low_power":
            error(request, conn, "refused", "11:22:33:44:55:66: the central rejected the L2CAP Connection Parameter Update Request (result 1)")
        else:
            ok(request, conn)

    server = fake(responder)
    assert gattctl("connection-parameters", "low_latency", "--central", "11:22:33:44:55:66", socket_path=server.path).returncode == 0
    assert gattctl("connection-parameters", "--interval", "30,45", "--latency", "0", "--timeout", "4000",
                   socket_path=server.path).returncode == 0
    result = gattctl("connection-parameters", "low_power", socket_path=server.path)
    assert (result.returncode, result.stderr) == (
        1, "gattctl: 11:22:33:44:55:66: the central rejected the L2CAP Connection Parameter Update Request (result 1)\n")
    assert server.ops() == [
        {"op": "connection_parameters", "central": "11:22:33:44:55:66", "preset": "low_latency"},
        {"op": "connection_parameters", "interval_ms": [30, 45], "latency": 0, "timeout_ms": 4000},
        {"op": "connection_parameters", "preset": "low_power"},
    ]
    assert gattctl("connection-parameters", "fast", socket_path=server.path).returncode == 64
    assert gattctl("connection-parameters", "--interval", "30,45", socket_path=server.path).returncode == 64
    assert gattctl("connection-parameters", "balanced", "--latency", "1", socket_path=server.path).returncode == 64
    # Not finite, or beyond what an interval can be: a usage error, and nothing sent (no trap).
    for interval in ("inf,30", "nan,30", "30,1e300", "5,30"):
        result = gattctl("connection-parameters", "--interval", interval, "--latency", "0", "--timeout", "4000",
                         socket_path=server.path)
        assert result.returncode == 64, (interval, result.stderr)
        assert "MIN and MAX are milliseconds from 7.5 to 4000" in result.stderr
    result = gattctl("connection-parameters", "--interval", "30,45", "--latency", "0", "--timeout", "99999999",
                     socket_path=server.path)
    assert result.returncode == 64 and "100 to 32000 ms" in result.stderr
    assert len(server.ops()) == 3


def test_phy(fake):
    server = fake(lambda r, c: ok(r, c))
    assert gattctl("phy", "11:22:33:44:55:66", "2m", socket_path=server.path).returncode == 0
    assert gattctl("phy", "11:22:33:44:55:66", "--tx", "coded_s8", "--rx", "1m", socket_path=server.path).returncode == 0
    result = gattctl("phy", "11:22:33:44:55:66", "3m", socket_path=server.path)
    assert result.returncode == 64 and '"tx" must be one of' in result.stderr
    assert server.ops() == [
        {"op": "phy", "central": "11:22:33:44:55:66", "tx": "2m", "rx": "2m"},
        {"op": "phy", "central": "11:22:33:44:55:66", "tx": "coded_s8", "rx": "1m"},
    ]


# ---------------------------------------------------------------- socket problems


def test_daemon_not_running(sockdir):
    path = os.path.join(sockdir, "control.sock")
    result = gattctl("status", socket_path=path)
    assert (result.returncode, result.stdout) == (69, "")
    assert result.stderr == f"gattctl: gattd is not running (no socket at {path})\n"

    # A stale socket file nobody listens on.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()
    result = gattctl("status", socket_path=path)
    assert result.returncode == 69
    assert result.stderr == f"gattctl: gattd is not running ({path} exists but nothing is listening)\n"


def test_gattd_socket_environment_variable(fake):
    server = fake(lambda r, c: ok(r, c, value={"hex": "01"}))
    result = gattctl("get", "x", env={"GATTD_SOCKET": server.path})
    assert (result.returncode, result.stdout) == (0, "01\n")
    # --socket wins over the environment.
    result = gattctl("get", "x", "--socket", server.path, env={"GATTD_SOCKET": "/nonexistent/sock"})
    assert result.returncode == 0
    result = gattctl("get", "x", env={"GATTD_SOCKET": "/nonexistent/sock"})
    assert (result.returncode, result.stderr) == (69, "gattctl: gattd is not running (no socket at /nonexistent/sock)\n")


def test_socket_option_before_the_subcommand(fake):
    server = fake(lambda r, c: ok(r, c, value={"hex": "0a"}))
    result = gattctl("--socket", server.path, "get", "x")
    assert (result.returncode, result.stdout, result.stderr) == (0, "0a\n", "")


def test_permission_denied(fake, sockdir):
    server = fake(always_ok)
    os.chmod(server.path, 0o660)
    prefix = None
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot drop privileges")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        os.chmod(sockdir, 0o755)
        # The unprivileged user must be able to run the binary.
        probe = subprocess.run([*prefix, str(GATTCTL), "--help"], capture_output=True)
        if probe.returncode != 0:
            pytest.skip("nobody cannot execute the gattctl binary here")
    else:
        os.chmod(server.path, 0o600)
        if os.stat(server.path).st_uid == os.geteuid():
            os.chmod(server.path, 0o000)
    result = gattctl("status", socket_path=server.path, prefix=prefix)
    assert result.returncode == 77
    assert result.stderr == f"gattctl: permission denied: add yourself to the gattd group ({server.path})\n"
    assert server.requests == []



# ---------------------------------------------------------------- against the real gattd


REAL_CONFIG = """{
  "name": "Ctl Demo",
  "advertising": { "local_name": "CTL-HR", "service_uuids": ["180D"], "interval_ms": [20, 30] },
  "services": [
    { "id": "hr", "uuid": "180D", "characteristics": [
        { "id": "hr_measurement", "uuid": "2A37", "properties": ["notify"], "value": { "hex": "0048" } } ] }
  ]
}
"""


async def gattctl_async(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """gattctl as an asyncio subprocess, so Bumble's event loop keeps running meanwhile."""
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        str(GATTCTL), *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin), 60)
    return proc.returncode, out.decode(), err.decode()


def test_stdin_stream_reaches_a_subscribed_central_in_order_without_loss(controllers, gattd, tmp_path):
    import asyncio

    from harness import bumble_device, connect, named, run, scan_for, subscribe

    gattd(REAL_CONFIG, controller=0)
    sock = str(tmp_path / "control.sock")
    count = 300

    async def body():
        async with bumble_device(controllers[1]) as central:
            advertisement = await scan_for(central, named("CTL-HR"))
            peer = await connect(central, advertisement.address)
            queue = await subscribe(peer, "2A37")
            # gattd has seen the CCCD write once status lists the subscription.
            for _ in range(50):
                code, out, err = await gattctl_async("--socket", sock, "status", "--json")
                assert code == 0, err
                connections = json.loads(out)["connections"]
                if connections and connections[0]["subscriptions"]:
                    break
                await asyncio.sleep(0.1)
            assert connections[0]["subscriptions"] == [
                {"characteristic": "hr_measurement", "notify": True, "indicate": False}]
            code, out, err = await gattctl_async("--socket", sock, "status")
            assert code == 0, err
            assert "hr_measurement (notify)" in out

            values = "".join(f"{i:04x}\n" for i in range(count)).encode()
            code, out, err = await gattctl_async("--socket", sock, "notify", "hr_measurement", "-", stdin=values)
            assert (code, err) == (0, "")
            received = [await asyncio.wait_for(queue.get(), 10) for _ in range(count)]
            assert received == [i.to_bytes(2, "big") for i in range(count)]

            code, out, err = await gattctl_async("--socket", sock, "get", "hr_measurement")
            assert (code, out) == (0, f"{count - 1:04x}\n")

    run(body(), timeout=120)
