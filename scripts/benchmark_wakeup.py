#!/usr/bin/env python3
"""User-space instructions per sequential Read Request of the whole gattd process (event loop,
NIO, H4 transport, daemon, core), counted by callgrind: repeatable, whatever else the machine
runs, where CPU time per read moves by ±10 % between runs. The scenario is (e)'s read loop
(`benchmark_peers.reads`: a Bumble central on virtual controllers, 200 warm-up reads, then N);
gattd runs under `valgrind --tool=callgrind`, its counters are zeroed just before the N reads
and dumped just after them (`callgrind_control`), so start-up and connection are not counted.

    swift build -c release --static-swift-stdlib -Xswiftc -Osize --product gattd
    /work/wt-e2e/.venv/bin/python scripts/benchmark_wakeup.py [--gattd PATH] [--reads N] [--keep DIR]

Prints the instructions per read and the controller reads (wake-ups) per request: a read is
2 wake-ups (the request; the controller's Number Of Completed Packets for the response) unless
the two arrive together, which callgrind's slowness makes more likely; compare runs with the
same wake-ups. `--keep DIR` keeps the profile for `callgrind_annotate --inclusive=yes`.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))
sys.path.insert(0, str(ROOT / "scripts"))

import benchmark_peers  # noqa: E402
import harness  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gattd", default=str(ROOT / ".build" / "release" / "gattd"))
    parser.add_argument("--reads", type=int, default=1000)
    parser.add_argument("--keep", help="directory to copy the callgrind profile to")
    arguments = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is needed (apt-get install valgrind)", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="gattd-wakeup."))
    # valgrind 3.19 gives up on the DWARF Swift 6.3 writes: a copy without debug info it is.
    binary = work / "gattd"
    subprocess.run(["strip", "--strip-debug", "-o", str(binary), arguments.gattd], check=True)
    wrapper = work / "gattd-callgrind"
    wrapper.write_text(f'#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={work}/cg.%p.out "{binary}" "$@"\n')
    wrapper.chmod(0o755)

    marks: list[int] = []
    measured = benchmark_peers.cpu_seconds

    def at_mark(pid: int) -> float:  # called just before and just after the N reads
        command = ["callgrind_control", "-z" if not marks else "-d", str(pid)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        marks.append(pid)
        return measured(pid)

    benchmark_peers.cpu_seconds = at_mark
    harness.GATTD_BINARY = wrapper
    benchmark_peers.one_run("gattd", str(wrapper), work / "run", arguments.reads)
    if len(marks) != 2:
        print("the read loop did not run", file=sys.stderr)
        return 1
    dumps = sorted(work.glob(f"cg.{marks[0]}.out.*"))
    if not dumps:
        print("callgrind wrote no dump of the read loop", file=sys.stderr)
        return 1
    text = dumps[0].read_text(errors="replace")
    total = int(re.search(r"^(?:summary|totals): (\d+)", text, re.M).group(1))
    # Calls of the H4 reader's channelRead: one per read from the controller socket.
    reads = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=calling", str(dumps[0])],
                           capture_output=True, text=True).stdout
    wakeups = re.search(r">\s+\?\?\?:\$s13GattTransport14H4PacketReaderC11channelRead\S*\s+\(([\d,]+)x\)", reads)
    print(f"instructions per Read Request: {total / arguments.reads:,.0f}")
    if wakeups:
        print(f"controller reads per request: {int(wakeups.group(1).replace(',', '')) / arguments.reads:.2f}")
    if arguments.keep:
        Path(arguments.keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(dumps[0], Path(arguments.keep) / "callgrind.out")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
