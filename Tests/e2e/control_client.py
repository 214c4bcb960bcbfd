"""A small asyncio client for gattd's control socket (newline-delimited JSON), for the tests."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path


class ControlClient:
    """One connection to the control socket. Replies and events are read by a background task:
    `request()` returns the next reply, events queue up for `event()`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.replies: asyncio.Queue[dict] = asyncio.Queue()
        self.events: asyncio.Queue[dict] = asyncio.Queue()
        self.raw_lines: list[str] = []
        self.times: list[float] = []
        self.closed = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def open(cls, path: str | Path, timeout: float = 10.0) -> "ControlClient":
        """Connects, retrying while gattd starts."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 22)
                return cls(reader, writer)
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def _read(self) -> None:
        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                text = line.decode()
                self.raw_lines.append(text)
                self.times.append(time.monotonic())
                obj = json.loads(text)
                (self.events if "event" in obj else self.replies).put_nowait(obj)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.closed.set()

    def send_line(self, line: bytes) -> None:
        self.writer.write(line if line.endswith(b"\n") else line + b"\n")

    def send(self, request: dict) -> None:
        self.send_line(json.dumps(request).encode())

    async def reply(self, timeout: float = 10.0) -> dict:
        return await asyncio.wait_for(self.replies.get(), timeout)

    async def request(self, request: dict, timeout: float = 10.0) -> dict:
        self.send(request)
        await self.writer.drain()
        return await self.reply(timeout)

    async def raw_request(self, line: bytes, timeout: float = 10.0) -> dict:
        self.send_line(line)
        await self.writer.drain()
        return await self.reply(timeout)

    async def event(self, name: str | None = None, timeout: float = 10.0) -> dict:
        """The next event (named `name`, skipping others)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {name or 'event'} within {timeout} s")
            event = await asyncio.wait_for(self.events.get(), remaining)
            if name is None or event["event"] == name:
                return event

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, BrokenPipeError):
            pass
        self.task.cancel()


def hex_value(data: bytes) -> dict:
    return {"hex": data.hex()}
