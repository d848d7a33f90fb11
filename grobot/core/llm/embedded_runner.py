"""One llama.cpp server in a process of its own: ``python -m grobot.core.llm.embedded_runner``.

The supervisor starts one per GGUF file (``grobot.core.llm.embedded_servers``): the model runs
in llama.cpp's own C++ server (``xllamacpp``, OpenAI-compatible HTTP on 127.0.0.1), and a
crash or an out-of-memory in it never takes the worker down. The runner prints one JSON
line on stdout, ``{"url": ...}`` once the model is loaded or ``{"error": ...}``, then serves
until its standard input closes (its parent is gone) or it is terminated.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

MIB = 1024 * 1024


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def needed_memory(model_bytes: int, context: int) -> int:
    """A rough need: the weights, a KV cache of ~48 KiB per context token for small models, and slack."""
    return int(model_bytes * 1.1) + context * 48 * 1024 + 64 * MIB


def _say(payload: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def _params(args: argparse.Namespace) -> Any:
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = args.model_file
    params.n_ctx = args.ctx * args.parallel  # llama.cpp splits the context between the slots
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.port = 0
    params.warmup = False
    params.endpoint_props = True
    params.verbosity = 2  # warnings and errors only (3, the default, logs every request's timings)
    if args.template:
        params.chat_template = Path(args.template).read_text(encoding="utf-8")
    return xlc.Server, params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-file", required=True)
    parser.add_argument("--ctx", type=int, default=4096, help="context tokens per slot")
    parser.add_argument("--threads", type=int, default=0, help="0: every core but one")
    parser.add_argument("--parallel", type=int, default=2, help="requests served at once")
    parser.add_argument("--template", default="", help="a Jinja chat template file (default: the model's own)")
    args = parser.parse_args(argv)
    if args.threads <= 0:
        from grobot.core.llm.embedded import default_threads

        args.threads = default_threads()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    size = Path(args.model_file).stat().st_size
    free = available_memory()
    need = needed_memory(size, args.ctx * args.parallel)
    if free is not None and free < need:
        _say({"error": f"too little memory: the model needs about {need // MIB} MiB, {free // MIB} MiB are available"})
        return 2
    try:
        server_cls, params = _params(args)
        server = server_cls(params)
        url = str(server.listening_address)
    except Exception as exc:  # llama.cpp reports a failed load as an exception with its reason
        _say({"error": f"llama.cpp could not load the model: {' '.join(str(exc).split())[:300] or type(exc).__name__}"})
        return 2
    _say({"url": url if url.startswith("http") else f"http://{url}"})
    try:
        sys.stdin.read()  # returns when the parent closes the pipe (or dies)
    except (KeyboardInterrupt, OSError):
        pass
    os._exit(0)  # the C++ server threads do not join: leave at once


if __name__ == "__main__":
    sys.exit(main())
