"""The brain on projects nobody here wrote (issue 45): answers from their docs and stale flags on their code.

    .venv/bin/python bench/projects.py --all --checkouts /work/.mirror
    .venv/bin/python bench/projects.py --project click --checkout /path/to/click.git --only notes

Each project is a folder of bench/projects/ (its `project.toml`: questions, off-topic questions and notes
with our ground truth; bench/projects/README.md has the format). The project's own docs and code are read
from a checkout of its repository (a clone or a bare mirror; `--checkouts DIR` finds `DIR/<mirror>/repo`)
at the commits the file names, so nothing of theirs is kept here.

Answers: the doc files at `head` are imported as a plain folder (`brain_import`, as any team's docs would
be), embedded with the default embedder, and asked each question through `brain_answer` (extractive, no
LLM): the right file in search's top 3, the fact in the answer (anywhere in it, and in its first quoted
passage), off-topic questions abstained, `brain_context` of an unrelated folder empty. Then the same with
the embedder off.

Notes: a bare clone's branch is put at `old`, the project added (`do_add_project`), and each note written
into the wiki with `project:` in its frontmatter; what is stale then is "flagged at write". The branch
moves to `head` and the project syncs, as the schedule would. Stale-flag precision and recall against
the ground truth, and for each anchor that really changed, whether the evidence names the commit that
changed it.

`--beside DIR` imports a folder of notes, or a BEIR corpus such as SciFact's 5,183 abstracts, into the same brain
before the questions: the same answers in a large brain. Everything runs in a scratch database (dropped at the
end). `--json FILE` writes the figures.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hyperguild.boot import setup_django  # noqa: E402

setup_django()  # the secret key and the embedded database, then Django (hyperguild.boot)

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

PROJECTS = Path(__file__).resolve().parent / "projects"
UNRELATED_FOLDER = "/home/someone/src/unrelated-app"


def folded(text: str) -> str:
    return " ".join(text.replace("`", "").split()).casefold()


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True, check=True).stdout


def load(name: str) -> dict:
    path = PROJECTS / name / "project.toml"
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    data.setdefault("question", [])
    data.setdefault("offtopic", [])
    data.setdefault("note", [])
    return data


def all_projects() -> list[str]:
    return sorted(p.parent.name for p in PROJECTS.glob("*/project.toml"))


def glob_pattern(pattern: str) -> re.Pattern[str]:
    """A path glob as git and shells read it: `*` stays inside a folder, `**/` is any number of folders."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:[^/]+/)*", i + 3
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def doc_files(checkout: str, commit: str, patterns: list[str]) -> list[str]:
    names = git(checkout, "ls-tree", "-r", "--name-only", commit).splitlines()
    compiled = [glob_pattern(pattern) for pattern in patterns]
    return [name for name in names if any(regex.match(name) for regex in compiled)]


def export_docs(checkout: str, commit: str, files: list[str], into: Path) -> None:
    for name in files:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(
            subprocess.run(["git", "-C", checkout, "show", f"{commit}:{name}"], capture_output=True, check=True).stdout
        )


# -- answers ------------------------------------------------------------------------------------


@dataclass
class AnswerFigures:
    embedder: str
    questions: int = 0
    file_top3: int = 0
    fact_in_answer: int = 0
    fact_first: int = 0
    # With an answer model: the fact in what brain_answer sends it (`brain.answers.source_text`), and in the
    # first SOURCE_CHARS characters of the same sources (what it was sent before issue 45's fifth stop).
    fact_model_reads: int = 0
    fact_model_opening: int = 0
    offtopic: int = 0
    abstained: int = 0
    unrelated_context_empty: bool = False
    missed_fact: list[str] = field(default_factory=list)
    missed_file: list[str] = field(default_factory=list)
    answered_offtopic: list[str] = field(default_factory=list)
    seconds: float = 0.0


def note_files(wing: str, files: list[str]) -> dict[str, str]:
    """The doc file each imported note came from, by note slug (the import keeps the folders in the path)."""
    from brain.models import Note

    by_slug = {}
    for note in Note.objects.filter(wing=wing):
        path = note.path or ""
        matches = [name for name in files if path.endswith("/" + name) or path.endswith(name)]
        if not matches:  # slugified names: compare without case, dashes and underscores
            key = path.rsplit("/", 1)[-1].lower().replace("_", "-")
            matches = [name for name in files if name.rsplit("/", 1)[-1].lower().replace("_", "-") == key]
        by_slug[note.slug] = max(matches, key=len) if matches else path
    return by_slug


class ReadingRecorder:
    """Stands in for the answer model (`BRAIN_ANSWER_MODEL`): keeps what brain_answer sends it and cites [1].
    The bench measures what a model would read, not what one would write."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def chat(self, messages: list[dict], **_options: object):
        from hyperguild.lib.llm import ChatResult

        self.prompts.append(messages[-1]["content"])
        return ChatResult(text="[1]", model="bench-reader", usage=None, latency_ms=0, raw={}, finish_reason="stop")


def model_reads(question: str) -> tuple[str, str]:
    """(what brain_answer sends an answer model for `question`, the first SOURCE_CHARS characters of the same
    sources), with a recorder standing in for the model."""
    import brain.answers as answers
    from brain.models import Note

    recorder = ReadingRecorder()
    saved = answers.get_llm_client, settings.BRAIN_ANSWER_MODEL
    answers.get_llm_client = lambda **_options: recorder  # type: ignore[assignment]
    settings.BRAIN_ANSWER_MODEL = "bench-reader"
    try:
        result = answers.answer(question)
    finally:
        answers.get_llm_client, settings.BRAIN_ANSWER_MODEL = saved
    notes = {note.slug: note for note in Note.objects.filter(slug__in=[s["slug"] for s in result["sources"]])}
    opening = "\n\n".join(
        f"{notes[s['slug']].title}\n\n{notes[s['slug']].body[: answers.SOURCE_CHARS]}"
        for s in result["sources"]
        if s["slug"] in notes
    )
    return (recorder.prompts[0] if recorder.prompts else ""), opening


def ask(project: dict, by_slug: dict[str, str], embedder: str, trace: bool = False) -> AnswerFigures:
    from brain import bm25
    from brain.answers import NOTHING_FOUND, answer
    from brain.context import context
    from brain.search import search

    settings.BRAIN_EMBEDDER = embedder
    bm25.reset()
    figures = AnswerFigures(embedder=embedder)
    started = time.perf_counter()
    for item in project["question"]:
        question, facts, wanted = item["q"], [folded(f) for f in item["fact"]], item["file"]
        figures.questions += 1
        top3 = [by_slug.get(hit.slug, hit.path) for hit in search(question, limit=3).hits[:3]]
        if wanted in top3:
            figures.file_top3 += 1
        else:
            figures.missed_file.append(f"{question} -> {top3}")
        result = answer(question)
        text = folded(result["answer"])
        first = folded(result["answer"].split("\n\n[")[0])
        if any(fact in text for fact in facts):
            figures.fact_in_answer += 1
        else:
            figures.missed_fact.append(f"{question} -> {result['answer'][:300]!r}")
        if any(fact in first for fact in facts):
            figures.fact_first += 1
        reads, opening = model_reads(question)
        figures.fact_model_reads += any(fact in folded(reads) for fact in facts)
        figures.fact_model_opening += any(fact in folded(opening) for fact in facts)
        if trace:
            print(f"  ? {question}", *trace_question(question, facts, wanted, by_slug), sep="\n      ")
    for item in project["offtopic"]:
        figures.offtopic += 1
        result = answer(item["q"])
        if result["answer"] == NOTHING_FOUND:
            figures.abstained += 1
        else:
            figures.answered_offtopic.append(f"{item['q']} -> {result['answer'][:200]!r}")
            if trace:
                print(f"  ! off-topic {item['q']}", *trace_question(item["q"], [], None, by_slug), sep="\n      ")
    figures.unrelated_context_empty = context(UNRELATED_FOLDER)["entries"] == []
    figures.seconds = time.perf_counter() - started
    return figures


def embed_all(out: io.TextIOBase) -> None:
    from brain.embedding_sync import sync_embeddings
    from hyperguild.lib.embedders import get_embedder

    embedder = get_embedder()
    if embedder is None:
        return
    started = time.perf_counter()
    while True:
        result = sync_embeddings(embedder)
        if result.errors:
            raise SystemExit(f"embedding failed: {result.errors[:3]}")
        if not result.pending:
            break
    print(f"  embedded with {settings.BRAIN_EMBEDDER} in {time.perf_counter() - started:.1f} s", file=out)


# -- notes --------------------------------------------------------------------------------------


@dataclass
class NoteFigures:
    notes: int = 0
    false_notes: int = 0
    flagged: int = 0
    flagged_false: int = 0
    flagged_at_write: int = 0
    true_flagged_at_write: int = 0
    changed_anchors: int = 0
    right_commit: int = 0
    unresolved_said: int = 0
    wrongly_flagged: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    at_write: list[str] = field(default_factory=list)
    wrong_commit: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def precision(self) -> float:
        return self.flagged_false / self.flagged if self.flagged else 1.0

    @property
    def recall(self) -> float:
        return self.flagged_false / self.false_notes if self.false_notes else 1.0


def same_anchor(a: str, b: str) -> bool:
    def norm(text: str) -> str:
        text = " ".join(text.strip().strip("`").removesuffix("()").split())
        # A quoted string line: the anchor is the line as written (`"The 'proxies' argument…"`), the ground truth
        # may leave out its quotes.
        return text[1:-1] if len(text) > 1 and text[0] == text[-1] and text[0] in "\"'" else text

    return norm(a) == norm(b)


def check_notes(project: dict, checkout: str, tmp: Path) -> NoteFigures:
    from brain.actions import do_add_project, do_ingest_note, do_sync_project
    from brain.models import Note, VerificationState

    name = project["name"]
    clone = str(tmp / f"{name}.git")
    subprocess.run(["git", "clone", "--quiet", "--bare", checkout, clone], check=True)
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(tmp)]
    git(clone, "update-ref", "refs/heads/hg-eval", project["old"])
    started = time.perf_counter()
    added = do_add_project(name=name, repo=clone, branch="hg-eval")
    figures = NoteFigures()
    written: list[tuple[dict, Note]] = []
    for number, item in enumerate(project["note"], start=1):
        note = do_ingest_note(
            title=item["title"],
            body=item["body"],
            wing="team",
            hall="",
            frontmatter={"project": name},
            slug=f"{name}-note-{number}",
            source="bench",
        )
        note.refresh_from_db()
        said = getattr(note, "unresolved_anchors", None)
        if said:
            figures.unresolved_said += len(said)
        written.append((item, note))
    for item, note in written:
        note.refresh_from_db()
        if note.verification_state == VerificationState.STALE:
            figures.flagged_at_write += 1
            label = f"{note.slug} {item['title']!r}: " + "; ".join(
                e.get("message", "") for e in note.verification_evidence
            )
            figures.at_write.append(label)
            if item["truth"]:
                figures.true_flagged_at_write += 1

    git(clone, "update-ref", "refs/heads/hg-eval", project["head"])
    added.refresh_from_db()
    do_sync_project(added)
    for item, note in written:
        note.refresh_from_db()
        figures.notes += 1
        stale = note.verification_state == VerificationState.STALE
        false = not item["truth"]
        figures.false_notes += false
        if stale:
            figures.flagged += 1
            figures.flagged_false += false
            if not false:
                messages = "; ".join(e.get("message", "") for e in note.verification_evidence)
                figures.wrongly_flagged.append(f"{note.slug} {item['title']!r}: {messages}")
        elif false:
            figures.missed.append(f"{note.slug} {item['title']!r} ({note.verification_state})")
        for changed in item.get("changed", []) if false else []:
            figures.changed_anchors += 1
            evidence = [e for e in note.verification_evidence if same_anchor(e.get("anchor", ""), changed["anchor"])]
            named = [e.get("changed_in", "") for e in evidence]
            if any(c and (c.startswith(changed["commit"][:7]) or changed["commit"].startswith(c)) for c in named):
                figures.right_commit += 1
            else:
                figures.wrong_commit.append(
                    f"{note.slug} `{changed['anchor'][:60]}`: want {changed['commit'][:7]}, "
                    f"named {[c[:7] for c in named] or 'no evidence for this anchor'}"
                )
    figures.seconds = time.perf_counter() - started
    return figures


# -- trace (--trace): why each answer came out as it did ------------------------------------------


def trace_question(question: str, facts: list[str], wanted: str | None, by_slug: dict[str, str]) -> list[str]:
    """Lines saying, for one question: the right file's rank in search's top 10 (and each ranker's), whether
    search or the passage gate abstained and why, the quoted passage, and where the passages holding the fact
    ranked; for an off-topic question (`wanted` None), what evidence let the answer through."""
    from brain import passage_reader
    from brain.answers import (
        CANDIDATES,
        MIN_PASSAGE_COVERAGE,
        NOTHING_FOUND,
        answer,
        distinctive_coverage,
        note_coverages,
        question_weights,
    )
    from brain.models import Note
    from brain.passages import coverage, score_passages, split_passages, term_weights
    from brain.search import search

    lines = []
    response = search(question, limit=CANDIDATES)
    ranked_files = [by_slug.get(hit.slug, hit.path) for hit in response.hits]
    rank = ranked_files.index(wanted) + 1 if wanted in ranked_files else None
    if wanted is not None:
        hit = response.hits[rank - 1] if rank else None
        lines.append(f"file rank {rank or '-'} of {len(ranked_files)} {hit.rankers if hit else ''}")
    if response.abstained:
        lines.append(f"search abstained: {response.reason}")
        return lines
    notes = Note.objects.in_bulk([hit.note_id for hit in response.hits])
    candidates = [notes[hit.note_id] for hit in response.hits if hit.note_id in notes]
    pool = [(note, passage) for note in candidates for passage in split_passages(note.title, note.body)]
    # Ranked as the extractive answer ranks them: by their words, then read again by the passage reader.
    scored = passage_reader.reread(question, score_passages(question, pool))
    weights = term_weights(question, [passage for _, passage in pool])
    best = distinctive_coverage(question, candidates)
    by_wing = {note.wing: question_weights(question, note.wing) for note in candidates}
    gate_note, gate_passage = max(pool, key=lambda item: coverage(item[1], by_wing[item[0].wing]))
    distinctive = by_wing[gate_note.wing]
    result = answer(question)
    gate = "ABSTAINED" if result["answer"] == NOTHING_FOUND else "answered"
    if wanted is not None:
        lines.append(
            f"fact in the answer: {'yes' if any(fact in folded(result['answer']) for fact in facts) else 'NO'}"
        )
    close = passage_reader.closest(question, [passage for _, passage in pool])
    lines.append(
        f"gate {gate}: best passage's distinctive coverage {best:.3f} (floor {MIN_PASSAGE_COVERAGE}), closest "
        f"reading {'-' if close is None else f'{close:.3f}'} (floor {passage_reader.GATE_SIMILARITY}) "
        f"{result.get('reason', '')}"
    )
    # Each candidate's own evidence, as passage_gate weighs it: a note answers when it holds 25 % and reads 0.30,
    # or reads 0.55.
    held = note_coverages(question, candidates)
    readings = passage_reader.closest_by_source(question, [(note.id, passage) for note, passage in pool]) or {}
    lines.append(
        "candidates (holds / reads): "
        + ", ".join(
            f"{by_slug.get(note.slug, note.path)} {held[note.id]:.3f}/"
            + (f"{readings[note.id]:.2f}" if note.id in readings else "-")
            for note in candidates
        )
    )
    lines.append(
        f"gate's passage: {by_slug.get(gate_note.slug, gate_note.path)} #{gate_passage.order} holds "
        f"{[t for t in distinctive if t in gate_passage.token_set]} of "
        f"{{{', '.join(f'{t}:{w:.1f}' for t, w in distinctive.items())}}} (idf among the notes of its wing, or of the brain)"
    )
    if scored:
        top = scored[0]
        found = [t for t in weights if t in top.passage.token_set]
        lines.append(
            f"top passage (words and reader): {by_slug.get(top.source.slug, top.source.path)} #{top.passage.order} "
            f"score {top.score:.2f} "
            f"covered {top.covered:.2f} terms {found} of {{{', '.join(f'{t}:{w:.1f}' for t, w in weights.items())}}}: "
            f"{' '.join(top.passage.text.split())[:120]!r}"
        )
    if wanted is not None:
        holding = [
            (position, item)
            for position, item in enumerate(scored, start=1)
            if by_slug.get(item.source.slug) == wanted and any(fact in folded(item.passage.text) for fact in facts)
        ]
        if not holding:
            lines.append("fact in no passage of the candidates" if rank else "fact's file not a candidate")
        for position, item in holding[:2]:
            found = [t for t in weights if t in item.passage.token_set]
            lines.append(
                f"fact passage #{item.passage.order} ranks {position} of {len(scored)}: score {item.score:.2f} "
                f"covered {item.covered:.2f} terms {found}: {' '.join(item.passage.text.split())[:120]!r}"
            )
    return lines


# -- report -------------------------------------------------------------------------------------


def pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "-"


def beside_folder(beside: str, tmp: Path) -> Path:
    """`--beside`: a folder of notes as it is, or a BEIR corpus (`corpus.jsonl`, or a folder holding one) written
    out as one markdown file per document."""
    source = Path(beside)
    corpus = source / "corpus.jsonl" if source.is_dir() else source
    if not corpus.is_file():
        return source
    folder = tmp / "beside"
    folder.mkdir()
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            document = json.loads(line)
            title = " ".join(str(document.get("title") or document["_id"]).split())
            (folder / f"{document['_id']}.md").write_text(f"# {title}\n\n{document['text']}\n", encoding="utf-8")
    return folder


def run(
    name: str, checkout: str, only: str, embedders: list[str], verbose: bool, trace: bool = False, beside: str = ""
) -> dict:
    from brain.scratch import ScratchDatabase

    project = load(name)
    out = sys.stdout
    print(
        f"== {name} ({project.get('role', '?')}): {len(project['question'])} questions, "
        f"{len(project['offtopic'])} off-topic, {len(project['note'])} notes; head {project['head'][:7]}, "
        f"old {project['old'][:7]}",
        file=out,
    )
    report: dict = {"project": name, "role": project.get("role", "")}
    quiet = io.StringIO()
    with tempfile.TemporaryDirectory(prefix=f"projects-{name}-") as tmp_name, ScratchDatabase(quiet):
        tmp = Path(tmp_name)
        if only in ("all", "answers"):
            files = doc_files(checkout, project["head"], project["docs"])
            folder = tmp / name
            export_docs(checkout, project["head"], files, folder)
            original = settings.BRAIN_EMBEDDER
            call_command("brain_import", str(folder), "--no-progress", stdout=quiet, stderr=quiet)
            by_slug = note_files(name, files)
            print(f"  {len(files)} doc files imported", file=out)
            if beside:
                # A large brain: the project's docs are a few of its notes (issue 45: abstention holds for a brain of
                # 20 files as for 20,000).
                extra = beside_folder(beside, tmp)
                call_command(
                    "brain_import", str(extra), "--no-progress", "--wing", "beside", stdout=quiet, stderr=quiet
                )
                print(f"  {sum(1 for _ in extra.glob('*.md'))} notes of {beside} imported beside them", file=out)
            report["answers"] = []
            for embedder in embedders:
                settings.BRAIN_EMBEDDER = original if embedder == "default" else embedder
                if embedder != "off":
                    embed_all(out)
                figures = ask(project, by_slug, settings.BRAIN_EMBEDDER, trace)
                settings.BRAIN_EMBEDDER = original
                report["answers"].append(asdict(figures))
                print(
                    f"  answers, embedder {figures.embedder}: right file in top 3 {pct(figures.file_top3, figures.questions)}; "
                    f"fact in answer {pct(figures.fact_in_answer, figures.questions)} "
                    f"(in its first passage {pct(figures.fact_first, figures.questions)}; in what an answer model "
                    f"reads {pct(figures.fact_model_reads, figures.questions)}, was "
                    f"{pct(figures.fact_model_opening, figures.questions)} from the sources' openings); "
                    f"off-topic abstained {pct(figures.abstained, figures.offtopic)}; "
                    f"unrelated folder's context empty: {figures.unrelated_context_empty}; {figures.seconds:.1f} s",
                    file=out,
                )
                if verbose:
                    for label, items in (
                        ("missed fact", figures.missed_fact),
                        ("file not in top 3", figures.missed_file),
                        ("off-topic answered", figures.answered_offtopic),
                    ):
                        for line in items:
                            print(f"    {label}: {line}", file=out)
        if only in ("all", "notes") and project["note"]:
            figures_n = check_notes(project, checkout, tmp)
            report["notes"] = {**asdict(figures_n), "precision": figures_n.precision, "recall": figures_n.recall}
            print(
                f"  stale flags: precision {figures_n.flagged_false}/{figures_n.flagged} = {figures_n.precision:.2f}, "
                f"recall {figures_n.flagged_false}/{figures_n.false_notes} = {figures_n.recall:.2f}; "
                f"flagged at write {figures_n.flagged_at_write}/{figures_n.notes} "
                f"(true notes {figures_n.true_flagged_at_write}); right commit named "
                f"{pct(figures_n.right_commit, figures_n.changed_anchors)}; {figures_n.seconds:.1f} s",
                file=out,
            )
            if verbose:
                for label, items in (
                    ("flagged at write", figures_n.at_write),
                    ("true but flagged", figures_n.wrongly_flagged),
                    ("false not flagged", figures_n.missed),
                    ("wrong commit", figures_n.wrong_commit),
                ):
                    for line in items:
                        print(f"    {label}: {line}", file=out)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", action="append", default=[], help="a folder of bench/projects/ (repeatable)")
    parser.add_argument("--all", action="store_true", help="every project in bench/projects/")
    parser.add_argument("--checkout", default="", help="the repository of the one --project (clone or bare mirror)")
    parser.add_argument("--checkouts", default="/work/.mirror", help="a folder of <mirror>/repo checkouts")
    parser.add_argument("--only", choices=("all", "answers", "notes"), default="all")
    parser.add_argument("--embedder", choices=("both", "default", "off"), default="both")
    parser.add_argument("--role", choices=("tune", "holdout"), help="only the projects of this role")
    parser.add_argument("-v", "--verbose", action="store_true", help="list each miss")
    parser.add_argument(
        "--trace", action="store_true", help="say why each answer came out as it did (ranks, gate, passages)"
    )
    parser.add_argument(
        "--beside",
        default="",
        help="also import this folder of notes, or BEIR corpus (e.g. ../shared/datasets/scifact), into the same brain",
    )
    parser.add_argument("--json", default="", help="write the figures to this file")
    args = parser.parse_args()

    names = all_projects() if args.all or not args.project else args.project
    if args.role:
        names = [name for name in names if load(name).get("role") == args.role]
    embedders = ["default", "off"] if args.embedder == "both" else [args.embedder]
    reports = []
    for name in names:
        project = load(name)
        checkout = (
            args.checkout
            if args.checkout and len(names) == 1
            else str(Path(args.checkouts) / project["mirror"] / "repo")
        )
        reports.append(run(name, checkout, args.only, embedders, args.verbose, args.trace, args.beside))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2))


if __name__ == "__main__":
    main()
