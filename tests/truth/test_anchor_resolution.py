"""Issue 45: anchors are this repository's code, resolved when written; the evidence names the commit that changed
the anchor itself; notes that claim nothing about code carry no "unverified" noise.

Every test builds a real git repository and moves its branch with real commits.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from brain.actions import do_ingest_note
from brain.answers import answer
from brain.hunks import MAX_HUNK_CHARS
from brain.models import Anchor, Note
from brain.search import search
from sessions.hooks import context_text
from tests.truth.conftest import add_project, git, make_repo

pytestmark = pytest.mark.django_db

CORE = '''"""The shop's client."""

import time

DefaultTimeout = 5
_cache: dict = {}


class Response:
    def json(self):
        return {}


class Client:
    max_redirects = 20

    def __init__(self):
        self._mounts = {}

    def send(self, request):
        started = time.perf_counter()
        return Response()
'''
SHOP = {"src/shop/__init__.py": "from shop.core import Client\n", "src/shop/core.py": CORE}

# What a teammate writes about this code: the project's own names, and names that are not this repository's code
# (standard library, third party, builtin, keyword argument, attributes of self, a module attribute, a domain).
NOT_ANCHORS = {
    "time.perf_counter",
    "trio.open_nursery",
    "ValueError",
    "ensure_ascii",
    "self._mounts",
    "self.is_success",
    "pkg.__all__",
    "example.com",
}
REAL = {"src/shop/core.py", "DefaultTimeout", "_cache", "Client.max_redirects", "Response.json", "return Response()"}
BODY = (
    "The client in `src/shop/core.py` waits `DefaultTimeout` seconds and keeps `_cache`; `Client.max_redirects` caps "
    "redirects and `return Response()` ends a send. It times with `time.perf_counter`, runs under "
    "`trio.open_nursery`, raises `ValueError`, dumps with `ensure_ascii`, keeps `self._mounts`, checks "
    "`self.is_success`, exports `pkg.__all__`, calls `example.com` and decodes with `Response.json`."
)


def shop(code_root, files=SHOP):
    repo = make_repo(code_root, files)
    add_project("shop", str(repo))
    return repo


def sync() -> None:
    call_command("project_sync", "shop", stdout=io.StringIO())


def commit(repo, message: str, **changes: str) -> str:
    for path, text in changes.items():
        (repo / path.replace("__", "/")).write_text(text)
    git(repo, "commit", "-qam", message)
    return git(repo, "rev-parse", "HEAD")


def test_names_that_are_not_this_repositorys_code_are_not_flagged_when_the_note_is_written(code_root):
    repo = shop(code_root)
    first = git(repo, "rev-parse", "HEAD")

    note = do_ingest_note(title="The shop client", body=BODY, wing="concepts", frontmatter={"project": "shop"})

    note.refresh_from_db()
    states = dict(note.anchors.values_list("value", "state"))
    assert note.verification_state == "verified", note.verification_evidence
    assert {value for value, state in states.items() if state == "unresolved"} == NOT_ANCHORS, states
    assert {value for value, state in states.items() if state == "holds"} == REAL, states
    assert note.anchors.get(value="Response.json").kind == "symbol"  # a class's method, not a file called so
    # Said on the note: what it cites that is not in the project's code, at the commit it was checked against.
    assert f"`ValueError` is not in shop at {first[:7]}" in note.unresolved_anchors
    assert len(note.unresolved_anchors) == len(NOT_ANCHORS)


def test_a_mixed_case_constant_and_a_class_attribute_are_anchors_that_go_stale_when_they_change(code_root):
    repo = shop(code_root)
    note = do_ingest_note(title="The shop client", body=BODY, wing="concepts", frontmatter={"project": "shop"})
    renamed = commit(
        repo, "Timeouts in upper case", **{"src__shop__core.py": CORE.replace("DefaultTimeout", "DEFAULT_TIMEOUT")}
    )

    sync()

    note.refresh_from_db()
    assert note.verification_state == "stale"
    assert [
        (item["anchor"], item["changed_in"]) for item in note.verification_evidence if item.get("state") != "unresolved"
    ] == [("DefaultTimeout", renamed)]
    # What never resolved is still said, and never counts as stale.
    assert Anchor.objects.filter(note=note, state="unresolved").count() == len(NOT_ANCHORS)


def test_an_anchor_that_was_not_there_when_written_is_unresolved_and_resolves_once_the_code_exists(code_root):
    repo = shop(code_root)
    note = do_ingest_note(
        title="Refunds",
        body="Refunds go through `issue_refund` in the client.",
        wing="concepts",
        frontmatter={"project": "shop"},
    )
    note.refresh_from_db()
    assert note.anchors.get().state == "unresolved" and note.verification_state == "unverified"

    commit(repo, "refunds", **{"src__shop__core.py": CORE + "\n\ndef issue_refund(order):\n    return order\n"})
    sync()
    from brain.actions import do_verify_note

    do_verify_note(note)
    note.refresh_from_db()
    assert note.anchors.get().state == "holds" and note.verification_state == "verified"


LONG_HEAD = "".join(f"RATE_{n} = {n}  # a rate the billing team keeps for region {n}\n" for n in range(60))
BILLING = (
    LONG_HEAD + "\n\ndef send_invoice(order):\n    total = order.total\n    return total * RATE_1\n\n\n"
    "def invoice_total(order):\n    return round(order.total * RATE_2)\n"
)


def test_the_evidence_names_the_commit_that_removed_the_anchor_not_a_later_one_that_touched_the_file(code_root):
    repo = shop(code_root, {**SHOP, "src/shop/billing.py": BILLING})
    notes = {
        "send": do_ingest_note(
            title="Invoices",
            body="`send_invoice` in `src/shop/billing.py` sends one invoice.",
            wing="concepts",
            frontmatter={"project": "shop"},
        ),
        "total": do_ingest_note(
            title="Totals",
            body="In `src/shop/billing.py`: `return round(order.total * RATE_2)`.",
            wing="concepts",
            frontmatter={"project": "shop"},
        ),
    }
    # B rewrites every rate (one hunk of more than 2,000 characters before the function), removes send_invoice, and
    # puts thirty lines above invoice_total and changes its quoted line; C then touches the same file elsewhere.
    rewritten = (
        LONG_HEAD.replace("# a rate", "# the rate")
        + "".join(f"EXTRA_{n} = {n}\n" for n in range(30))
        + "\n\ndef invoice_total(order):\n    return round(order.total * RATE_3)\n"
    )
    removed = commit(repo, "drop send_invoice, rate 3", **{"src__shop__billing.py": rewritten})
    later = commit(repo, "a footer", **{"src__shop__billing.py": rewritten + "\n\nFOOTER = 'thanks'\n"})

    sync()

    send = {item["anchor"]: item for item in Note.objects.get(pk=notes["send"].pk).verification_evidence}[
        "send_invoice"
    ]
    assert (send["state"], send["changed_in"]) == ("changed", removed), later
    assert "-def send_invoice(order):" in send["hunk"] and len(send["hunk"]) <= MAX_HUNK_CHARS
    assert send["now"] == ""  # the function is gone: nothing stands in its place
    total = Note.objects.get(pk=notes["total"].pk).verification_evidence[0]
    assert (total["anchor"], total["changed_in"]) == ("return round(order.total * RATE_2)", removed)
    assert "-    return round(order.total * RATE_2)" in total["hunk"]
    assert "return round(order.total * RATE_3)" in total["now"], (
        total
    )  # the line where it is now, not whatever sits at its old number
    assert "EXTRA_" not in total["now"]


def test_notes_that_claim_nothing_about_code_carry_no_unverified_label(code_root, settings):
    settings.BRAIN_ANSWER_MODEL = ""
    repo = shop(code_root)
    loose = do_ingest_note(
        title="Review etiquette", body="Be kind in reviews: ask questions, never give orders.", wing="concepts"
    )
    plain = do_ingest_note(
        title="Shop release days",
        body="The shop ships releases on Tuesdays after the review.",
        wing="concepts",
        frontmatter={"project": "shop"},
    )

    answered = answer("which day does the shop ship releases")
    assert answered["sources"] and "unverified" not in answered["answer"], answered["answer"]
    assert {source["verification"]["state"] for source in answered["sources"]} == {"unverified"}
    hits = search("kind reviews questions orders").hits
    hit = next(hit for hit in hits if hit.slug == loose.slug)
    assert (hit.verification["state"], hit.verification["label"]) == ("unverified", "")
    assert "belongs to no project" in hit.verification["reason"]
    text = context_text(str(repo))
    assert f"({plain.slug})" in text and "unverified" not in text, text


DEFINED = '''"""What counts as defined in a Python file."""

LIMIT = 10
MaxRetries: int = 3
if True:
    FALLBACK = 1
data = dict(
    ensure_ascii=False,
    indent = 2,
)


class Runner:
    mix_default = True

    def __init__(
        self,
        mix_stderr: bool = True,
        charset: str,
    ) -> None:
        self._mounts = {}
        local_value = 5

    def run(self, args, *, catch_exceptions=True):
        inner = 1
        return call(
            ensure_ascii=False,
        )


def helper():
    helper_local = 2
'''


def test_the_definitions_index_keeps_module_and_class_level_names_and_parameters_not_locals_or_keyword_arguments(
    code_root,
):
    from brain.repository import Repository

    repo = make_repo(code_root, {"pkg/runner.py": DEFINED, "docs/guide.md": "    def not_code():\n        pass\n"})
    definitions = Repository(repo).definitions(git(repo, "rev-parse", "HEAD"))

    owners = {name: {d.owner for d in found} for name, found in definitions.items()}
    assert {"LIMIT", "MaxRetries", "FALLBACK", "data", "mix_default", "Runner", "run", "helper"} <= set(owners)
    assert owners["mix_default"] == {"Runner"} and owners["run"] == {"Runner"}
    # A def's parameters are the project's own API; a method's are owned by its class.
    assert owners["mix_stderr"] == {"Runner"} and owners["charset"] == {"Runner"}
    assert owners["catch_exceptions"] == {"Runner"}
    for name in ("ensure_ascii", "indent", "local_value", "inner", "helper_local", "_mounts", "self", "not_code"):
        assert name not in definitions, name


def test_import_lines_are_quotes_and_a_code_blocks_definition_cites_its_name():
    from brain.anchors import extract

    body = (
        "`echo` imports it (`from ._compat import auto_wrap_for_ansi`).\n\n"
        '```python\nShellCompleteType = t.TypeVar("ShellCompleteType")\ndef cli():\n    pass\n```\n'
    )
    found = {(anchor.kind, anchor.value) for anchor in extract(body)}
    assert ("quote", "from ._compat import auto_wrap_for_ansi") in found
    assert ("symbol", "ShellCompleteType") in found
    assert ("symbol", "cli") not in found  # a plain word is no anchor, in a block as in the text


def test_the_index_built_from_the_last_commits_index_is_the_index_of_the_whole_tree(code_root):
    from brain import repository

    repo = make_repo(code_root, {**SHOP, "src/shop/billing.py": BILLING, "web/app.js": "export const LIMIT = 5\n"})
    first = git(repo, "rev-parse", "HEAD")
    repository._definitions(str(repo), first)  # the index at the first commit, as a first sync leaves it
    (repo / "src/shop/billing.py").write_text(BILLING.replace("def send_invoice(", "def send_bill("))
    (repo / "web/app.js").write_text("export const LIMIT = 5\nexport function render() {}\n")
    git(repo, "rm", "-q", "src/shop/__init__.py")
    second = commit(repo, "rename, render, drop the package file")

    incremental = repository._definitions(str(repo), second, first)
    repository._INDEXES.clear()
    assert incremental == repository._definitions(str(repo), second)
    assert "send_bill" in incremental and "send_invoice" not in incremental and "render" in incremental


VENDORED = {**SHOP, "src/shop/v1/core.py": CORE}  # an old copy kept beside the code, as some projects keep a v1


def test_a_line_removed_from_its_file_is_changed_even_when_an_old_copy_elsewhere_still_has_it(code_root):
    repo = shop(code_root, VENDORED)
    note = do_ingest_note(
        title="Send",
        body="In `src/shop/core.py` a send ends with `started = time.perf_counter()`.",
        wing="concepts",
        frontmatter={"project": "shop"},
    )
    removed = commit(
        repo, "no timing", **{"src__shop__core.py": CORE.replace("        started = time.perf_counter()\n", "")}
    )

    sync()

    note.refresh_from_db()
    evidence = {item["anchor"]: item for item in note.verification_evidence}
    assert note.verification_state == "stale"  # src/shop/v1/core.py had the line all along: it is not where it went
    assert evidence["started = time.perf_counter()"]["changed_in"] == removed


def test_a_method_moved_out_of_its_class_is_changed_in_the_commit_that_moved_it(code_root):
    repo = shop(code_root)
    note = do_ingest_note(
        title="JSON",
        body="`Response.json` in `src/shop/core.py` decodes the body.",
        wing="concepts",
        frontmatter={"project": "shop"},
    )
    moved = commit(
        repo,
        "json at module level",
        **{
            "src__shop__core.py": CORE.replace(
                "class Response:\n    def json(self):\n        return {}\n",
                "class Response:\n    pass\n\n\ndef json(response):\n    return {}\n",
            )
        },
    )
    later = commit(repo, "a comment", **{"src__shop__core.py": (repo / "src/shop/core.py").read_text() + "# the end\n"})

    sync()

    note.refresh_from_db()
    evidence = {item["anchor"]: item for item in note.verification_evidence}
    assert note.verification_state == "stale"
    # The def line is still in the file (at module level): the commit is the one that took it out of the class.
    assert evidence["Response.json"]["changed_in"] == moved, later


def test_a_stale_notes_evidence_says_what_moved_away_and_in_which_commit(code_root):
    files = {**SHOP, "src/shop/retry.py": "def retry_backoff(n):\n    return 2 ** n\n"}
    repo = shop(code_root, files)
    body = "In `src/shop/core.py`, `DefaultTimeout` sets the wait and `Client.send` sends; `retry_backoff` lives there too."
    note = do_ingest_note(title="Waits", body=body, wing="concepts", frontmatter={"project": "shop"})
    git(repo, "mv", "src/shop/retry.py", "src/shop/waits.py")
    moved = commit(
        repo,
        "retry is waits now; DefaultTimeout renamed",
        **{"src__shop__core.py": CORE.replace("DefaultTimeout", "DEFAULT_TIMEOUT")},
    )

    sync()

    note.refresh_from_db()
    evidence = {item["anchor"]: item for item in note.verification_evidence}
    assert note.verification_state == "stale"
    assert evidence["retry_backoff"]["state"] == "moved" and evidence["retry_backoff"]["changed_in"] == moved
    assert "moved from src/shop/retry.py to src/shop/waits.py" in evidence["retry_backoff"]["message"]
    assert evidence["DefaultTimeout"]["state"] == "changed"
