"""The converter in a child process of its own: a file built to hang, crash or eat memory stops
only that child.

The child (``python -m grobot.core.documents.isolated``) lives as long as it works, converts
one file at a time and may use at most :data:`MEMORY_LIMIT` bytes; a file that takes longer
than :data:`TIMEOUT_SECONDS` ends it, and the next file starts a new one. Requests and answers
cross its stdin and stdout as length-prefixed JSON (never pickle: what the child says about an
untrusted file is data, not code).
"""

from __future__ import annotations

import json
import logging
import os
import select
import struct
import subprocess
import sys
import threading
import time
from typing import IO, Any

from grobot.core.documents import DocumentError
from grobot.core.documents.convert import Converted, Section

logger = logging.getLogger(__name__)

TIMEOUT_SECONDS = 120.0
MEMORY_LIMIT = 1536 * 1024 * 1024
_HEADER = struct.Struct(">I")
_FAILED = "the file could not be read (it may be damaged)"


def _write(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_HEADER.pack(len(payload)) + payload)
    stream.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _serve() -> None:  # in the child
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ValueError, OSError):  # a lower hard limit already
        pass
    from grobot.core.documents.convert import convert

    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing a library prints may reach the answers
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exactly(source, _HEADER.size))
            request = json.loads(_read_exactly(source, size))
            path, data = str(request["path"]), _read_exactly(source, int(request["data_bytes"]))
        except EOFError:
            return
        try:
            converted = convert(path, data)
            answer = {"ok": True, "kind": converted.kind, "pages": converted.pages,
                      "sections": [[s.title, s.text, s.page] for s in converted.sections]}
        except DocumentError as exc:
            answer = {"ok": False, "error": str(exc)}
        except MemoryError:
            answer = {"ok": False, "error": "the file could not be read: it needs more memory than a document may use"}
        except Exception as exc:  # a library's own failure on a malformed file
            answer = {"ok": False, "error": _FAILED, "detail": type(exc).__name__}
        _write(sink, json.dumps(answer).encode())


class IsolatedConverter:
    """:func:`grobot.core.documents.convert.convert` in a child process (thread-safe, one file at a time)."""

    def __init__(self, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None

    def _child(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._process.poll() is not None:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            self._process = subprocess.Popen([sys.executable, "-m", "grobot.core.documents.isolated"],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        return self._process

    def convert(self, path: str, data: bytes) -> Converted:
        with self._lock:
            child = self._child()
            assert child.stdin is not None and child.stdout is not None
            request = json.dumps({"path": path, "data_bytes": len(data)}).encode()
            try:
                _write(child.stdin, request)
                child.stdin.write(data)
                child.stdin.flush()
                answer = self._answer(child)
            except (EOFError, OSError, ValueError):
                self._stop()
                raise DocumentError("the file could not be read: the converter stopped on it") from None
            except TimeoutError:
                self._stop()
                raise DocumentError(f"the file could not be read: it took longer than {self.timeout:g} s") from None
        if answer.get("ok"):
            return Converted(kind=str(answer["kind"]), pages=int(answer["pages"]),
                             sections=[Section(str(t), str(x), int(p) if p else None) for t, x, p in answer["sections"]])
        if answer.get("detail"):
            logger.info("The converter failed on %s: %s", path, answer["detail"])
        raise DocumentError(str(answer.get("error") or _FAILED))

    def _answer(self, child: subprocess.Popen[bytes]) -> dict[str, Any]:
        assert child.stdout is not None
        deadline = time.monotonic() + self.timeout
        ready, _, _ = select.select([child.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError
        (size,) = _HEADER.unpack(_read_exactly(child.stdout, _HEADER.size))
        answer = json.loads(_read_exactly(child.stdout, size))
        if not isinstance(answer, dict):
            raise ValueError("not an answer")
        return answer

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait(5)

    def close(self) -> None:
        with self._lock:
            self._stop()


if __name__ == "__main__":
    _serve()
