"""The embedder seam: any framework's text embedder, as one small interface recall uses.

``Store(path, embedder=...)`` takes, unchanged:

* a callable ``list[str] -> list[list[float]]``, sync or async (CrewAI's and Chroma's
  embedding functions, a plain function of yours);
* an object with ``embed_documents`` / ``embed_query`` (LangChain ``Embeddings``; their
  ``aembed_*`` twins are used when only those exist);
* an object with ``get_text_embedding_batch`` / ``get_query_embedding`` (LlamaIndex
  ``BaseEmbedding``);
* an :class:`Embedder` (to name the model, or set the batch size).

Vectors are stored normalised, as little-endian float32 (``array('f')``), keyed by the
embedder's ``model`` id and dimension: a store never ranks one model's vectors against
another's query. Cosine similarity uses numpy when it can be imported and plain Python
otherwise (same figures to float32 precision). Standard library only.
"""

from __future__ import annotations

import inspect
import math
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from .errors import EmbedderError

#: texts handed to the embedder per call
DEFAULT_BATCH = 64
#: episodes a recall embeds on the way (those recorded since the last embedding); the rest
#: wait for the next recall or ``store.embed_pending()``
DEFAULT_CATCH_UP = 512
_MODEL_ATTRS = ("model", "model_name", "model_id", "name")
#: a model attribute that names nothing (LlamaIndex's default model_name)
_NO_NAME = frozenset({"unknown"})
_SIZE_ATTRS = ("size", "embed_dim", "dimensions", "dims")


def _await(value: Any) -> Any:
    """The result of an awaitable, from sync code (in a worker thread when an event loop
    already runs in this one: ``asyncio.run`` cannot nest)."""
    import asyncio

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, wait()).result()


def _resolved(value: Any) -> Any:
    return _await(value) if inspect.isawaitable(value) else value


def _model_id(source: Any) -> str:
    """A stable name for what embeds: the class (or function) and its model attribute."""
    kind = source if inspect.isroutine(source) or inspect.isclass(source) else type(source)
    name = f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', repr(kind))}"
    for attr in _MODEL_ATTRS:
        value = getattr(source, attr, None) if not inspect.isroutine(source) else None
        if isinstance(value, str) and value.strip() and value.strip().lower() not in _NO_NAME:
            return f"{name}:{value.strip()}"[:200]
    for attr in _SIZE_ATTRS:  # fakes carry only a size (LangChain's size, LlamaIndex's embed_dim)
        size = getattr(source, attr, None) if not inspect.isroutine(source) else None
        if isinstance(size, int) and not isinstance(size, bool):
            return f"{name}:{size}"[:200]
    return name[:200]


class Embedder:
    """One text embedder with a model id: ``embed_documents`` for episodes,
    ``embed_query`` for a query (a framework may embed the two differently).

    ``model`` names the vectors it makes (default: its class and model attribute);
    vectors of another model id or dimension are never ranked against its queries.
    """

    def __init__(self, source: Any, *, model: str | None = None,
                 batch_size: int = DEFAULT_BATCH, catch_up: int = DEFAULT_CATCH_UP,
                 keyword_weight: float | None = None) -> None:
        if isinstance(source, Embedder):
            model = model or source.model
            if keyword_weight is None:
                keyword_weight = source.keyword_weight
            source = source._source
        from .fusion import KEYWORD_WEIGHT

        if keyword_weight is None:
            keyword_weight = KEYWORD_WEIGHT
        if (isinstance(keyword_weight, bool) or not isinstance(keyword_weight, (int, float))
                or math.isnan(keyword_weight) or keyword_weight <= 0):
            raise EmbedderError("keyword_weight must be a number > 0 (keyword recall's weight "
                                "in hybrid recall's rank fusion; vectors weigh 1; math.inf: "
                                "keyword recall's order, vectors after it)")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise EmbedderError("batch_size must be a whole number >= 1 (texts per call)")
        if isinstance(catch_up, bool) or not isinstance(catch_up, int) or catch_up < 0:
            raise EmbedderError("catch_up must be a whole number >= 0 (episodes a recall "
                                "embeds on the way; 0: only store.embed_pending() embeds)")
        if model is not None and (not isinstance(model, str) or not model.strip()
                                  or len(model) > 200 or "\x00" in model):
            raise EmbedderError("model must be a non-empty name of at most 200 characters "
                                "(it keys the stored vectors)")
        self._source: Any = source
        self.batch_size = batch_size
        self.catch_up = catch_up
        #: keyword recall's weight when hybrid recall fuses the two rankings (vectors: 1);
        #: a weaker model wants a larger one (see anneal_memory.fusion)
        self.keyword_weight: float = float(keyword_weight)
        self._docs, self._query = self._methods(source)
        self.model: str = model.strip() if model else _model_id(source)
        #: the dimension, once a vector has been made
        self.dims: int | None = None

    @staticmethod
    def _methods(source: Any) -> tuple[Callable[[list[str]], Any], Callable[[str], Any]]:
        def pick(*names: str) -> Callable[..., Any] | None:
            for n in names:
                fn = getattr(source, n, None)
                if callable(fn):
                    return fn  # type: ignore[no-any-return]
            return None

        docs = pick("embed_documents", "get_text_embedding_batch", "aembed_documents",
                    "aget_text_embedding_batch")
        query = pick("embed_query", "get_query_embedding", "aembed_query", "aget_query_embedding")
        if docs is not None:
            one = query or (lambda text: _first(_resolved(docs([text]))))
            return docs, one
        if callable(source) and not inspect.isclass(source):
            return source, lambda text: _first(_resolved(source([text])))
        raise EmbedderError(
            f"cannot embed with {type(source).__name__}: pass a callable taking a list of "
            "texts and returning one list of floats per text (sync or async), or an object "
            "with embed_documents/embed_query (LangChain) or get_text_embedding_batch/"
            "get_query_embedding (LlamaIndex)")

    def __repr__(self) -> str:
        return f"Embedder({self.model!r}, dims={self.dims})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in batches of ``batch_size``."""
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            chunk = list(texts[i:i + self.batch_size])
            got = self._call(self._docs, chunk)
            out.extend(self._check(got, len(chunk)))
        return out

    def embed_query(self, text: str) -> list[float]:
        got = self._call(self._query, text)
        return self._check([got], 1)[0]

    @staticmethod
    def _call(fn: Callable[[Any], Any], arg: Any) -> Any:
        try:
            return _resolved(fn(arg))
        except EmbedderError:
            raise
        except Exception as exc:
            raise EmbedderError(f"the embedder failed: {type(exc).__name__}: {exc}"[:500]) from exc

    def _check(self, got: Any, n: int) -> list[list[float]]:
        """``got`` as ``n`` vectors of one dimension, each a list of finite floats."""
        if hasattr(got, "tolist"):
            got = got.tolist()
        if not isinstance(got, Sequence) or isinstance(got, (str, bytes)) or len(got) != n:
            raise EmbedderError(f"the embedder returned {_shape(got)} for {n} text(s): it must "
                                "return one list of floats per text")
        out = []
        for vec in got:
            if hasattr(vec, "tolist"):
                vec = vec.tolist()
            if (not isinstance(vec, Sequence) or isinstance(vec, (str, bytes)) or not vec
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                               for x in vec)):
                raise EmbedderError(f"the embedder returned {_shape(vec)} as a vector: each must "
                                    "be a non-empty list of floats")
            floats = [float(x) for x in vec]
            if not all(math.isfinite(x) for x in floats):
                raise EmbedderError("the embedder returned a vector holding NaN or infinity")
            if self.dims is None:
                self.dims = len(floats)
            elif len(floats) != self.dims:
                raise EmbedderError(f"the embedder returned a {len(floats)}-dimension vector "
                                    f"after {self.dims}-dimension ones: one model, one "
                                    "dimension (name another model with Embedder(model=...))")
            out.append(floats)
        return out


def _first(vectors: Any) -> Any:
    if hasattr(vectors, "tolist"):
        vectors = vectors.tolist()
    if not isinstance(vectors, Sequence) or len(vectors) != 1:
        raise EmbedderError(f"the embedder returned {_shape(vectors)} for one text: it must "
                            "return one list of floats per text")
    return vectors[0]


def _shape(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def as_embedder(source: object) -> Embedder | None:
    """``source`` as an :class:`Embedder` (None stays None)."""
    if source is None or isinstance(source, Embedder):
        return source
    return Embedder(source)


# ---------------------------------------------------------------------------- vectors

def pack_vector(vec: Sequence[float]) -> bytes:
    """A vector as stored: normalised to length 1, little-endian float32."""
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    a = array("f", [x / norm for x in vec])
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def unpack_vector(blob: bytes) -> list[float]:
    a = array("f")
    a.frombytes(bytes(blob))
    if sys.byteorder == "big":
        a.byteswap()
    return a.tolist()


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def cosine_similarities(query: Sequence[float], blobs: Sequence[bytes] | bytes) -> list[float]:
    """Cosine similarity of ``query`` to each stored vector (all of its dimension):
    ``blobs`` is a list of stored vectors, or their bytes joined."""
    joined = blobs if isinstance(blobs, bytes) else b"".join(blobs)
    if not joined:
        return []
    norm = math.sqrt(sum(x * x for x in query)) or 1.0
    q = [x / norm for x in query]
    np = _numpy()
    if np is not None:
        m = np.frombuffer(joined, dtype="<f4").reshape(-1, len(q))
        return np.dot(m, np.asarray(q, dtype=m.dtype)).tolist()  # type: ignore[no-any-return]
    step = 4 * len(q)
    return [sum(a * b for a, b in zip(q, unpack_vector(joined[i:i + step])))
            for i in range(0, len(joined), step)]


def top(scores: Sequence[float], k: int, ids: Sequence[str] | None = None) -> list[int]:
    """Indexes of the ``k`` best scores, best first (ties: the larger of ``ids``, when
    given, else the later index, first)."""
    import heapq

    if ids is not None:
        return heapq.nlargest(k, range(len(scores)), key=lambda i: (scores[i], ids[i]))
    return heapq.nlargest(k, range(len(scores)), key=lambda i: (scores[i], i))


# ---------------------------------------------------------------------------- offline default

#: the offline default's name (``anneal-memory[semantic]``), as the CLI's --embedder takes it
OFFLINE_DEFAULT = "wordllama"
#: keyword recall's weight in hybrid recall's fusion with the offline default's vectors:
#: infinite, so keyword recall's order stays and what only vectors find comes after it
#: (4, the k=10 sweep's choice on the two dev conversations, lost 0.4 point of R@10 on the
#: three held out and 0.85 on all five; 2 lost 1.0 and 1.4)
OFFLINE_KEYWORD_WEIGHT = math.inf


def offline_embedder(*, dims: int = 256, batch_size: int = DEFAULT_BATCH,
                     catch_up: int = DEFAULT_CATCH_UP,
                     keyword_weight: float | None = OFFLINE_KEYWORD_WEIGHT) -> Embedder:
    """The offline default: WordLlama's ``l2_supercat`` static model, whose weights ship
    inside its wheel (``pip install 'anneal-memory[semantic]'``); it loads in under a
    second with no network. The options go to :class:`Embedder`."""
    try:
        from pathlib import Path

        import wordllama
    except ImportError:
        from .errors import MissingExtraError

        raise MissingExtraError("wordllama", "semantic") from None
    # its tokenizer ships in the wheel; without these it tries to download one
    model = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent,
                                     disable_download=True, dim=dims)

    def embed(texts: list[str]) -> Any:
        return model.embed(texts, norm=True)

    # a static model, weaker than a sentence encoder (LoCoMo R@10 alone 0.32-0.42 against
    # MiniLM's 0.42-0.48): no fusion weight at k=10 beat keyword recall on the held-out
    # conversations (bench/semantic.py), so keyword recall's order stays and vectors add
    return Embedder(embed, model=f"wordllama-l2_supercat-{dims}", batch_size=batch_size,
                    catch_up=catch_up, keyword_weight=keyword_weight)


def load_embedder(spec: str) -> Embedder:
    """An embedder named on a command line: ``wordllama`` (the offline default) or
    ``module:attribute`` (a callable or embeddings object; a class is instantiated
    with no argument first)."""
    if not isinstance(spec, str) or not spec.strip():
        raise EmbedderError("name an embedder: 'wordllama' or 'module:attribute'")
    spec = spec.strip()
    if spec == OFFLINE_DEFAULT:
        return offline_embedder()
    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise EmbedderError(f"unknown embedder {spec[:80]!r}: use 'wordllama' or "
                            "'module:attribute' (a callable or embeddings object)")
    import importlib

    try:
        obj: Any = importlib.import_module(mod_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise EmbedderError(f"cannot load the embedder {spec[:80]!r}: {exc}") from None
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise EmbedderError(f"cannot create the embedder {spec[:80]!r}: {exc}") from None
    return Embedder(obj)
