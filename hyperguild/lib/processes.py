"""Process facts read from this machine's kernel (no app knowledge)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True if `pid` runs on this machine and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
    except OSError:
        return True
