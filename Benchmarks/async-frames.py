#!/usr/bin/env python3
"""Async frame sizes of a Swift binary: the context size of every async function, read from its async function
pointer (the `...Tu` symbol: a 32-bit relative offset to the function, then the 32-bit context size the caller
allocates from the task allocator for each call).

An idle connection's task holds the frames of every async function on its path to the parked read, and the task
allocator keeps the slabs they needed until the task ends (docs/ARCHITECTURE.md, "Memory"): this shows which frames
are big, before and after a change, without running anything.

Usage: Benchmarks/async-frames.py [--min BYTES] BINARY [SUBSTRING...]
  prints "bytes  function" (demangled with `swift demangle`), largest first; with SUBSTRINGs, only the functions
  whose demangled name contains one of them. Needs binutils (nm, readelf) and the Swift toolchain.
"""
import argparse
import re
import struct
import subprocess
import sys


def sections(binary):
    """(address, file offset, size) of each section, to read a symbol's bytes from the file."""
    listing = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in listing.splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+\S+\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if match:
            address, offset, size = (int(group, 16) for group in match.groups())
            if address:
                found.append((address, offset, size))
    return found


def main():
    parser = argparse.ArgumentParser(description="Async frame sizes of a Swift binary.")
    parser.add_argument("--min", type=int, default=0, help="only frames of at least this many bytes")
    parser.add_argument("binary")
    parser.add_argument("substrings", nargs="*")
    arguments = parser.parse_args()

    symbols = []
    listing = subprocess.run(["nm", "--defined-only", arguments.binary], capture_output=True, text=True,
                             check=True).stdout
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2].endswith("Tu"):
            symbols.append((int(fields[0], 16), fields[2]))
    if not symbols:
        sys.exit(f"async-frames: no async function pointers in {arguments.binary}")
    names = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(s for _, s in symbols),
                           capture_output=True, text=True, check=True).stdout.splitlines()
    layout = sections(arguments.binary)
    with open(arguments.binary, "rb") as file:
        image = file.read()
    rows = []
    for (address, _), name in zip(symbols, names):
        for start, offset, size in layout:
            if start <= address < start + size - 8:
                _, context = struct.unpack_from("<iI", image, offset + address - start)
                rows.append((context, name.removeprefix("async function pointer to ")))
                break
    rows.sort(key=lambda row: (-row[0], row[1]))
    for context, name in rows:
        if context >= arguments.min and (not arguments.substrings or any(s in name for s in arguments.substrings)):
            print(f"{context:6d}  {name}")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        pass
