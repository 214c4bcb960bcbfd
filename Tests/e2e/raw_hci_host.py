"""A bare H4 host for the harness self-tests: HCI commands out and events in, byte for byte,
with no Bumble host in between to hide what a virtual controller sends."""

from __future__ import annotations

import asyncio

EVENT_COMMAND_COMPLETE = 0x0E
EVENT_COMMAND_STATUS = 0x0F
EVENT_LE_META = 0x3E


class RawHost:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.events: list[bytes] = []  # every event packet (code, length, parameters), in order
        self.arrived = asyncio.Condition()
        self.task = asyncio.get_running_loop().create_task(self.read_loop())

    @classmethod
    async def open(cls, port: int) -> "RawHost":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def close(self) -> None:
        self.task.cancel()
        self.writer.close()
        await self.writer.wait_closed()

    async def __aenter__(self) -> "RawHost":
        return self

    async def __aexit__(self, *_exc) -> None:
        await self.close()

    async def read_loop(self) -> None:
        while True:
            indicator = (await self.reader.readexactly(1))[0]
            if indicator == 0x04:
                header = await self.reader.readexactly(2)
                packet = header + await self.reader.readexactly(header[1])
                async with self.arrived:
                    self.events.append(packet)
                    self.arrived.notify_all()
            elif indicator == 0x02:  # ACL data: not looked at
                header = await self.reader.readexactly(4)
                await self.reader.readexactly(int.from_bytes(header[2:4], "little"))
            else:
                raise ValueError(f"unexpected H4 packet indicator 0x{indicator:02X}")

    async def wait_for(self, matches, start: int = 0, timeout: float = 5.0) -> int:
        """The index in `events` of the first event at or after `start` that `matches`."""
        async def find() -> int:
            async with self.arrived:
                while True:
                    for index in range(start, len(self.events)):
                        if matches(self.events[index]):
                            return index
                    await self.arrived.wait()
        return await asyncio.wait_for(find(), timeout)

    async def command(self, opcode: int, parameters: bytes = b"") -> bytes:
        """Sends a command; returns its Command Complete return parameters (status first), or
        the status of its Command Status as one byte."""
        start = len(self.events)
        self.writer.write(bytes([0x01]) + opcode.to_bytes(2, "little") + bytes([len(parameters)]) + parameters)
        await self.writer.drain()

        def answers(event: bytes) -> bool:
            if event[0] == EVENT_COMMAND_COMPLETE:
                return int.from_bytes(event[3:5], "little") == opcode
            return event[0] == EVENT_COMMAND_STATUS and int.from_bytes(event[4:6], "little") == opcode

        event = self.events[await self.wait_for(answers, start)]
        return event[5:] if event[0] == EVENT_COMMAND_COMPLETE else event[2:3]

    def le_subevents(self, start: int = 0) -> list[bytes]:
        """The LE Meta events at or after `start`: subevent code and parameters."""
        return [e[2:] for e in self.events[start:] if e[0] == EVENT_LE_META]
