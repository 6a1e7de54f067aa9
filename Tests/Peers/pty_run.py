#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, as a user at a terminal would: the command's stdout and stderr are the
terminal. Prints `pid N` (the command's own process, to signal it) on stderr, copies everything the command
writes to the terminal to stdout unchanged (escape sequences included), and exits with the command's status
(128 + N when signal N ended it).

  pty_run.py EXECUTABLE [ARGUMENTS...]
"""
import os
import pty
import signal
import sys

pid, master = pty.fork()
if pid == 0:
    # The test runner may have blocked or ignored signals; the command gets the defaults a shell would give.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    os.execv(sys.argv[1], sys.argv[1:])
sys.stderr.write(f"pid {pid}\n")
sys.stderr.flush()
while True:
    try:
        data = os.read(master, 65536)
    except OSError:  # EIO: the command closed the terminal's last descriptor
        break
    if not data:
        break
    os.write(1, data)
_, status = os.waitpid(pid, 0)
sys.exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
