"""`--control-group` with a real, non-root group: the socket belongs to that group with mode
0660, a user in the group can use it and a user outside it cannot.

Needs root (to create the group and to act as other users): the test creates a temporary
group with groupadd, and forked children drop to uid 65534 with or without that group
before connecting. Skipped, saying why, when not root or without groupadd.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from harness import GattdProcess

CONFIG = json.dumps({
    "name": "Group Test",
    "advertising": {"local_name": "GRP"},
    "services": [{"id": "svc", "uuid": "7a1e0000-0000-4000-8000-000000000000", "characteristics": [
        {"id": "value", "uuid": "7a1e0001-0000-4000-8000-000000000000", "properties": ["read"],
         "value": {"hex": "2a"}}]}],
})

UNPRIVILEGED_UID = 65534  # "nobody" on Debian and most distributions; only the number matters
UNPRIVILEGED_GID = 65534


@pytest.fixture
def temporary_group() -> Iterator[tuple[str, int]]:
    """(name, gid) of a group created for this test and deleted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root: creates a group with groupadd and switches to other users")
    groupadd = shutil.which("groupadd") or ("/usr/sbin/groupadd" if os.path.exists("/usr/sbin/groupadd") else None)
    groupdel = shutil.which("groupdel") or ("/usr/sbin/groupdel" if os.path.exists("/usr/sbin/groupdel") else None)
    if groupadd is None or groupdel is None:
        pytest.skip("groupadd/groupdel not installed (package passwd)")
    name = f"gattdctl{os.getpid() % 100000}"
    subprocess.run([groupdel, name], capture_output=True)  # a leftover from a killed run
    created = subprocess.run([groupadd, name], capture_output=True, text=True)
    if created.returncode != 0:
        pytest.skip(f"groupadd {name} failed: {created.stderr.strip()}")
    try:
        import grp
        yield name, grp.getgrnam(name).gr_gid
    finally:
        subprocess.run([groupdel, name], capture_output=True)


def as_user(uid: int, gid: int, groups: list[int], action) -> str:
    """Runs `action()` (→ str) in a forked child with the given uid, gid and supplementary
    groups; returns its result, or "error: ..." for an exception."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 0
        try:
            os.close(read_end)
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            result = action()
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            result = f"error: {error!r}"
            code = 1
        try:
            os.write(write_end, result.encode())
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


def use_control_socket(path: str):
    """An action for `as_user`: connects, asks for a value, returns "reply: <json>" or
    "refused: <errno name>"."""
    def action() -> str:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(5)
        try:
            client.connect(path)
        except OSError as error:
            return f"refused: {os.strerror(error.errno) if error.errno else error}"
        client.sendall(b'{"op": "get", "characteristic": "value", "id": 7}\n')
        data = b""
        while not data.endswith(b"\n"):
            chunk = client.recv(4096)
            if not chunk:
                break
            data += chunk
        client.close()
        return "reply: " + data.decode().strip()
    return action


def test_control_group_owns_the_socket_and_only_its_members_connect(controllers, tmp_path, temporary_group):
    group_name, gid = temporary_group
    # A directory other users can traverse (pytest's tmp_path is under a 0700 directory).
    socket_dir = Path(tempfile.mkdtemp(prefix="gattd-group-", dir="/tmp"))
    socket_dir.chmod(0o711)
    socket_path = socket_dir / "control.sock"
    config_path = tmp_path / "group.json"
    config_path.write_text(CONFIG)
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    process = GattdProcess(config_path, controllers[0].transport, tmp_path,
                           ["--control", str(socket_path), "--control-group", group_name,
                            "--state-dir", str(state_dir), "--log-level", "debug"])
    try:
        process.start()  # returns once gattd logs that the socket listens (mode and group set)
        assert process.running, process.log()

        info = os.stat(socket_path)
        assert stat.S_ISSOCK(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o660
        assert info.st_gid == gid
        assert info.st_uid == os.geteuid()

        path = str(socket_path)
        expected_reply = {"ok": True, "value": {"hex": "2a"}, "id": 7}
        # A member through a supplementary group (a user added to the group)...
        member = as_user(UNPRIVILEGED_UID, UNPRIVILEGED_GID, [gid], use_control_socket(path))
        assert member.startswith("reply: "), member
        assert json.loads(member.removeprefix("reply: ")) == expected_reply
        # ... and through its primary group.
        primary = as_user(UNPRIVILEGED_UID, gid, [], use_control_socket(path))
        assert primary.startswith("reply: "), primary
        assert json.loads(primary.removeprefix("reply: ")) == expected_reply
        # Not in the group: connect() is refused (EACCES), nothing reaches gattd.
        outsider = as_user(UNPRIVILEGED_UID, UNPRIVILEGED_GID, [], use_control_socket(path))
        assert outsider == f"refused: {os.strerror(13)}", outsider  # EACCES: Permission denied
        assert process.running, process.log()
    finally:
        process.stop()
        shutil.rmtree(socket_dir, ignore_errors=True)
