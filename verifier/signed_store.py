"""The judge's caches on disk: entries only the judge writes, each authenticated.

Every entry is `MAGIC + HMAC-SHA256(secret, key + payload) + payload`, under a secret kept in the
cache directory (mode 0600, created on first use). An entry written or edited by anyone without the
secret, copied from another home, or stored under another key fails the check and is treated as
absent (and removed), so a forged verdict or shared object never reaches a candidate or the reward.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

MAGIC = b"KDS1"
_TAG = 32


class VerdictImportError(ValueError):
    """A file given to take into a home's verdict store is not an export of one (verifier.pool.import_verdicts)."""


def home_secret(directory: str | Path) -> bytes:
    """The per-home secret: 32 random bytes in `<directory>/secret`, readable by the judge's user only."""
    path = Path(directory) / "secret"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        data = path.read_bytes()
        if len(data) != 32:
            raise RuntimeError(f"{path} is not a kerneldojo cache secret; remove it to start a fresh cache")
        return data
    value = secrets.token_bytes(32)
    with os.fdopen(fd, "wb") as f:
        f.write(value)
    return value


class SignedStore:
    """A directory of authenticated entries (see the module docstring). Keys are file names."""

    def __init__(self, root: str | Path, secret: bytes):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._secret = secret
        self.refused = 0  # entries that failed authentication since this store was opened

    def _tag(self, key: str, payload: bytes) -> bytes:
        return hmac.new(self._secret, key.encode() + b"\0" + payload, hashlib.sha256).digest()

    def path(self, key: str) -> Path:
        if "/" in key or key.startswith("."):
            raise ValueError(f"bad store key {key!r}")
        return self.root / key

    def sign(self, key: str, payload: bytes) -> bytes:
        return MAGIC + self._tag(key, payload) + payload

    def verify(self, key: str, blob: bytes) -> bytes | None:
        """The payload of a signed blob, or None if it is not authentic for `key`."""
        if len(blob) < len(MAGIC) + _TAG or not blob.startswith(MAGIC):
            return None
        tag, payload = blob[len(MAGIC):len(MAGIC) + _TAG], blob[len(MAGIC) + _TAG:]
        return payload if hmac.compare_digest(tag, self._tag(key, payload)) else None

    def get(self, key: str) -> bytes | None:
        path = self.path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        payload = self.verify(key, blob)
        if payload is None:
            self.refused += 1
            path.unlink(missing_ok=True)
        return payload

    def put(self, key: str, payload: bytes) -> Path:
        path = self.path(key)
        tmp = path.with_name(f".{key}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        tmp.write_bytes(self.sign(key, payload))
        os.replace(tmp, path)
        return path

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def entries(self) -> Iterator[tuple[str, bytes]]:
        """(key, payload) of every authentic entry, in key order (forged ones are refused and removed, as by get)."""
        for path in sorted(self.root.iterdir()):
            if path.is_file() and not path.name.startswith("."):
                payload = self.get(path.name)
                if payload is not None:
                    yield path.name, payload
