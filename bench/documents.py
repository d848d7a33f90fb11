"""Answers from the bot's documents: retrieval, indexing speed, lookup latency and replies on a model.

Run: ``.venv/bin/python bench/documents.py`` (``--skip-model`` leaves out the replies on the
demo model; ``--provider/--model/--base-url`` run them on another model; ``--verbose``).

The suite (``bench/documents_suite.py``): five documents written for it (an FAQ and a privacy
policy in Markdown; a returns policy, an espresso machine manual and a staff handbook as PDF)
and 39 questions, each answered by one fact of one document; every third question is held
out (the chunking and the threshold were tuned on the others). Everything runs through the
product's own code: the supervisor's indexer (converter in its child process, the int8 MiniLM
embedder, Chroma), the supervisor memory's lookup, and ``run_chain`` for the replies.

Printed, with the targets:
- the right passage (from the right file, holding the fact) among the top 3: dev, held-out, all;
- how many questions pass the bot's threshold (their passages reach the prompt), and how many
  plain messages do (none should);
- indexing speed in pages per second (a PDF service manual of about 50 pages, ~2,300 characters a
  page, about 180 passages), wall and CPU time of this process and the converter's child;
- the lookup of one message (embedding, search, quote) with 10,000 passages in the bot's
  collection: p50 and p95;
- on the model: the share of replies that state the answer's fact (the strict judge: the fact
  in the reply, and no tool-call markup, JSON or repetition loop), the reply as sent (with its
  source line) and the model's own words; and LLM calls of plain messages with documents on
  against off (no added call).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.documents_suite import DEV, DOCUMENTS, HELD_OUT, MANUAL, PLAIN, QUESTIONS, Question  # noqa: E402

FILLER_PASSAGES = 10_000
print = functools.partial(print, flush=True)
MANUAL_PAGES = 60  # chapters x 3; the PDF helper sets them on about 50 pages


def _setup_env(tmp: Path) -> None:
    os.environ["GROBOT_DATA_DIR"] = str(tmp)
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp / 'grobot.db'}"
    os.environ.setdefault("GROBOT_SECRET_KEY", "bench-secret-key")
    os.environ.pop("OLLAMA_HOST", None)
    os.environ.pop("CHROMA_URL", None)
    from grobot.core import migrations
    from grobot.core.settings import get_settings

    get_settings.cache_clear()
    migrations.upgrade(os.environ["DATABASE_URL"])


def _db(fn: Any, *args: Any, **kwargs: Any) -> Any:
    from grobot.core.db import session_scope

    with session_scope() as session:
        return fn(*args, session=session, **kwargs)


def _document_bytes(path: str, text: str) -> bytes:
    from tests.documents_helpers import pdf_bytes

    return pdf_bytes(text) if path.endswith(".pdf") else text.encode()


def _make_bot(name: str, *, documents: bool = True, llm: argparse.Namespace | None = None) -> int:
    from grobot.core.services import bots, files, llm_settings

    def work(session: Any) -> int:
        bot = bots.create_bot(session=session, name=name, personality="You are the helpful assistant of Brightwave Coffee.",
                              documents_enabled=documents)
        bot_id = bot.id or 0
        if llm is not None:
            for category in ("decision", "tools", "output"):
                llm_settings.set_llm(session=session, category=category, bot_id=bot_id, provider=llm.provider,
                                     base_url=llm.base_url, model=llm.model, context_window=llm.context,
                                     temperature=0.2 if category != "output" else 0.7)
        files.write_files(session=session, bot_id=bot_id,
                          files=[(d.path, _document_bytes(d.path, d.text), None) for d in DOCUMENTS])
        return bot_id

    return _db(lambda session: work(session))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _hit(question: Question, passages: list[Any]) -> bool:
    return any(p.path == question.path and any(f in " ".join(p.text.lower().split()) for f in question.facts)
               for p in passages)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


# --------------------------------------------------------------------------- retrieval


async def retrieval(memory: Any, bot_id: int, verbose: bool) -> dict[str, Any]:
    from grobot.core.documents import DEFAULT_THRESHOLD
    from grobot.core.documents.message import Found, citation

    hits: dict[str, list[bool]] = {"dev": [], "held-out": []}
    passing: dict[str, list[bool]] = {"dev": [], "held-out": []}
    cited: dict[str, list[bool]] = {"dev": [], "held-out": []}
    for question in QUESTIONS:
        split = "held-out" if question in HELD_OUT else "dev"
        found = await memory.documents(bot_id, question.text, 3, threshold=None, quote=False) or []
        hit = _hit(question, found)
        hits[split].append(hit)
        relevant = [p for p in found if p.score >= DEFAULT_THRESHOLD]
        passing[split].append(_hit(question, relevant))
        line = citation(Found(await memory.documents(bot_id, question.text, 3, threshold=DEFAULT_THRESHOLD) or [], True))
        cited[split].append(any(f in " ".join(line.lower().split()) for f in question.facts))
        if verbose and not hit:
            print(f"  MISS {question.text}: " + "; ".join(f"{p.source()} {p.score:.2f}" for p in found))
    plain_passed = []
    for text in PLAIN:
        found = await memory.documents(bot_id, text, 3, threshold=DEFAULT_THRESHOLD, quote=False) or []
        plain_passed.append(bool(found))
        if verbose and found:
            print(f"  PLAIN {text!r} passed: " + "; ".join(f"{p.source()} {p.score:.2f}" for p in found))
    return {"hits": hits, "passing": passing, "plain_passed": plain_passed, "cited": cited}


# --------------------------------------------------------------------------- indexing speed


def _long_manual() -> str:
    """About :data:`MANUAL_PAGES` pages: the manual's chapters again and again, numbered, with words varied."""
    random.seed(7)
    chapters = re.split(r"\n(?=## )", MANUAL.split("\n", 2)[2])
    parts = ["# Barista Pro 3: service manual"]
    for number in range(1, MANUAL_PAGES * 3 + 1):
        chapter = random.choice(chapters)
        title, _, body = chapter.partition("\n")
        words = body.split()
        random.shuffle(words)
        parts.append(f"## {number}. {title.lstrip('# ')} (model variant {number})\n\n"
                     + " ".join(words[: len(words) * 4 // 5]) + ".\n\n" + body.strip())
    return "\n\n".join(parts)


async def indexing_speed(indexer: Any) -> dict[str, float]:
    from grobot.core.services import bots, documents, files

    text = _long_manual()
    data = _document_bytes("service-manual.pdf", text)
    bot_id = _db(lambda session: bots.create_bot(session=session, name="speed").id)
    _db(lambda session: files.write_file(session=session, bot_id=bot_id, path="service-manual.pdf", data=data))
    jobs, _ = _db(documents.pending)
    job = next(j for j in jobs if j.bot_id == bot_id)
    indexer.converter.convert("warm-up.txt", b"warm up the converter's child process")
    cpu, child_cpu, started = time.process_time(), _children_cpu(), time.perf_counter()
    passages, pages = await asyncio.to_thread(indexer.index_file, job)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    indexer.converter.close()  # its CPU time is counted once it has ended
    child_cpu = _children_cpu() - child_cpu
    return {"pages": pages, "passages": passages, "chars_per_page": len(text) / max(1, pages), "wall": wall,
            "cpu": cpu + child_cpu, "pages_per_s": pages / wall, "pages_per_cpu_s": pages / max(1e-9, cpu + child_cpu)}


# --------------------------------------------------------------------------- lookup latency


async def lookup_latency(memory: Any, bot_id: int) -> dict[str, Any]:
    import numpy as np

    from grobot.core.documents import DEFAULT_THRESHOLD

    collection = memory.documents_index._collection(bot_id)
    have = collection.count()
    rng = np.random.default_rng(3)
    need = FILLER_PASSAGES - have
    for start in range(0, need, 1000):
        count = min(1000, need - start)
        vectors = rng.normal(size=(count, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = [f"filler-{start + i}" for i in range(count)]
        collection.add(ids=ids, embeddings=vectors.tolist(), documents=[f"Filler passage {start + i}." for i in range(count)],
                       metadatas=[{"path": "filler.md", "sha256": "0", "section": "Filler", "index": start + i}
                                  for i in range(count)])
    total = collection.count()
    times = []
    hits = []
    for _ in range(2):
        for question in QUESTIONS:
            started = time.perf_counter()
            await memory.documents(bot_id, question.text, 3, threshold=DEFAULT_THRESHOLD, quote=True)
            times.append((time.perf_counter() - started) * 1000)
            hits.append(_hit(question, await memory.documents(bot_id, question.text, 3, quote=False) or []))
    return {"passages": total, "p50": _pct(times, 0.5), "p95": _pct(times, 0.95),
            "top3": sum(hits) / len(hits)}


# --------------------------------------------------------------------------- replies on a model

LOOP = re.compile(r"(.{12,}?)\1{3,}", re.S)


def strict(reply: str, facts: tuple[str, ...]) -> tuple[bool, str]:
    """The strict judge: the reply states one of the facts, and is prose."""
    text = " ".join(reply.lower().split())
    if not text:
        return False, "no reply"
    if "<tool_call>" in text or text.startswith(("{", "[")) or "```" in reply:
        return False, "markup, JSON or code"
    if LOOP.search(text):
        return False, "a repetition loop"
    return (any(f in text for f in facts), "" if any(f in text for f in facts) else "the fact is missing")


async def replies(deps: Any, bot_id: int, verbose: bool, sample: int = 1) -> dict[str, Any]:
    from grobot.core.agents.chain import wait_for_background
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.store.local import run_chain
    results: dict[str, list[tuple[bool, bool]]] = {"dev": [], "held-out": []}
    seconds = []
    # Every ``sample``-th question, taken in turn from each third (so that held-out ones are among them).
    chosen = [q for i, q in enumerate(QUESTIONS) if i % sample == (i // sample) % sample] if sample > 1 else QUESTIONS
    for index, question in enumerate(chosen):
        events: list[Any] = []

        async def sink(event: Any) -> None:
            events.append(event)

        msg = IncomingMessage(bot_id=bot_id, conversation_key=f"bench:documents:{index}", content=question.text,
                              author_id="42", author_name="ada", platform="test_chat")
        started = time.perf_counter()
        result = await run_chain(msg, deps, sink=sink)
        seconds.append(time.perf_counter() - started)
        reply = result.text or ""
        step = next((e.data for e in events if e.kind.value == "thinking" and e.data.get("step") == "documents"), None)
        own = reply
        for line in re.findall(r"\n\nSources?: .*$", reply):
            own = own.replace(line, "")
        sent_ok, why = strict(reply, question.facts)
        own_ok, _ = strict(own, question.facts)
        split = "held-out" if question in HELD_OUT else "dev"
        results[split].append((sent_ok, own_ok))
        if verbose:
            mark = "ok  " if sent_ok else "FAIL"
            print(f"  {mark} {'own' if own_ok else '   '} {seconds[-1]:5.1f}s {result.llm_calls} calls "
                  f"{question.text[:60]:60} {why}", flush=True)
            steps = [f"{e.data.get('step')}: {str(e.data.get('text'))[:100]}" for e in events
                     if e.kind.value == "thinking" and e.data.get("step") != "documents"]
            print(f"        {(reply or result.error or '')[:400]!r}\n        [{(step or {}).get('text', 'no passages')}]"
                  f"\n        {steps}", flush=True)
    await wait_for_background(timeout=120)
    return {"results": results, "p50": _pct(seconds, 0.5)}


async def plain_calls(deps: Any, with_docs: int, without_docs: int) -> dict[str, Any]:
    from grobot.core.agents.chain import wait_for_background
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.store.local import run_chain

    calls: dict[str, list[int]] = {"on": [], "off": []}
    for label, bot_id in (("on", with_docs), ("off", without_docs)):
        for index, text in enumerate(PLAIN):
            msg = IncomingMessage(bot_id=bot_id, conversation_key=f"bench:plain:{label}:{index}", content=text,
                                  author_id="42", author_name="ada", platform="test_chat")
            result = await run_chain(msg, deps)
            calls[label].append(result.llm_calls)
    await wait_for_background(timeout=120)
    return calls


# --------------------------------------------------------------------------- main


def _rate(values: list[bool]) -> str:
    return f"{sum(values)}/{len(values)} = {100 * sum(values) / max(1, len(values)):.0f} %"


async def _main(args: argparse.Namespace) -> int:
    from grobot.core.documents import DEFAULT_THRESHOLD
    from grobot.core.embeddings import get_embedder
    from grobot.core.memory.local import LocalMemory
    from grobot.core.services.document_sync import DocumentsIndexer
    from grobot.core.store.local import local_deps

    print(f"Documents benchmark: {len(DOCUMENTS)} documents, {len(QUESTIONS)} questions "
          f"({len(DEV)} dev, {len(HELD_OUT)} held out), {len(PLAIN)} plain messages; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    memory = LocalMemory()
    await memory.warm()
    indexer = DocumentsIndexer(memory.documents_index, _db)
    llm = args if not args.skip_model else None
    bot_id = _make_bot("docs", llm=llm)
    plain_bot = _make_bot("no-docs", documents=False, llm=llm) if llm is not None else 0
    started = time.perf_counter()
    await indexer.sync()
    print(f"indexed the suite in {time.perf_counter() - started:.1f} s")

    found = await retrieval(memory, bot_id, args.verbose)
    hits, passing = found["hits"], found["passing"]
    print(f"right passage in the top 3 (target >= 90 %): dev {_rate(hits['dev'])}, held-out "
          f"{_rate(hits['held-out'])}, all {_rate(hits['dev'] + hits['held-out'])}")
    print(f"right passage at or above the threshold {DEFAULT_THRESHOLD} (reaches the prompt): dev "
          f"{_rate(passing['dev'])}, held-out {_rate(passing['held-out'])}; plain messages with a passage in the "
          f"prompt: {sum(found['plain_passed'])}/{len(PLAIN)}")
    cited = found["cited"]
    print(f"the reply's source line (no model) states the fact: dev {_rate(cited['dev'])}, held-out "
          f"{_rate(cited['held-out'])}, all {_rate(cited['dev'] + cited['held-out'])}")

    started = time.perf_counter()
    for _ in range(20):
        get_embedder().embed(["What does shipping cost within Germany?"])
    print(f"the embedder on this machine now: {(time.perf_counter() - started) * 50:.1f} ms for a chat message "
          f"(docs/benchmarks.md: about 1.1 ms on a quiet 2-core machine)")
    speed = await indexing_speed(indexer)
    print(f"indexing (target >= 20 pages/s): {speed['pages']} pages ({speed['chars_per_page']:,.0f} characters a "
          f"page), {speed['passages']} passages in {speed['wall']:.1f} s = {speed['pages_per_s']:.1f} pages/s "
          f"({speed['pages_per_cpu_s']:.1f} pages per CPU second)")

    latency = await lookup_latency(memory, bot_id)
    print(f"lookup of a message with {latency['passages']:,} passages (target p50 <= 50 ms): p50 {latency['p50']:.1f} ms, "
          f"p95 {latency['p95']:.1f} ms; right passage in the top 3 among them: {latency['top3'] * 100:.0f} %")

    if llm is not None:
        from grobot.core.llm import embedded
        from grobot.core.llm.embedded_servers import EmbeddedServers
        from grobot.core.llm.registry import close_all

        servers = None
        if args.provider == embedded.PROVIDER:
            servers = EmbeddedServers(parallel=1)
            embedded.set_local_directory(servers)
            info = await servers.ensure(args.model, args.context)
            if info.status != "running":
                raise SystemExit(f"the embedded model cannot run: {info.error}")
        fresh = _make_bot("docs-chat", llm=llm)  # without the 10,000 filler passages
        await indexer.sync()
        deps = local_deps(memory)
        try:
            answered = await replies(deps, fresh, args.verbose, args.sample)
            calls = await plain_calls(deps, fresh, plain_bot)
        finally:
            await deps.aclose()
            await close_all()
            if servers is not None:
                await servers.stop_all()
        results = answered["results"]
        sent = {k: [s for s, _ in v] for k, v in results.items()}
        own = {k: [o for _, o in v] for k, v in results.items()}
        print(f"replies on {args.model} that state the fact (target >= 60 %), as sent: dev {_rate(sent['dev'])}, "
              f"held-out {_rate(sent['held-out'])}, all {_rate(sent['dev'] + sent['held-out'])}; the model's own "
              f"words: dev {_rate(own['dev'])}, held-out {_rate(own['held-out'])}; reply p50 {answered['p50']:.1f} s")
        print(f"LLM calls of a plain message (target: none added): documents on {statistics.mean(calls['on']):.2f}, "
              f"off {statistics.mean(calls['off']):.2f} (each: {calls['on']} / {calls['off']})")
    indexer.close()
    memory.close()
    return 0


def main() -> int:
    from grobot.core.llm import embedded

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default=embedded.PROVIDER)
    parser.add_argument("--model", default=embedded.DEMO_MODEL)
    parser.add_argument("--base-url", default="")
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--skip-model", action="store_true", help="no replies on a model")
    parser.add_argument("--sample", type=int, default=1, help="on the model: every Nth question only")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        _setup_env(Path(tmp))
        code = asyncio.run(_main(args))
        from grobot.core.db import dispose_engines

        dispose_engines()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
