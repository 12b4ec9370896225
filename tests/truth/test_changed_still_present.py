"""Issue 45: a stale note's evidence covers every anchor it cites — the one that failed, and each one that still holds
but whose definition changed since the note's commit ("changed, still present"), with the commit(s) that changed it.
A definition that changed is never, by itself, a reason to flag a note.

Every test builds a real git repository and moves its branch with real commits.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from brain.actions import do_ingest_note
from brain.anchors import classify
from brain.models import Note
from brain.truth import ALTERED, verification_dict
from tests.truth.conftest import add_project, git, make_repo

pytestmark = pytest.mark.django_db

BILLING = '''"""Invoices."""

RATE = 2


def send_invoice(order):
    return order.total


def invoice_total(order):
    return sum(order.lines)


def apply_discount(order, percent):
    return order.total * (100 - percent) / 100
'''


def commit(repo, message: str, text: str) -> str:
    (repo / "src/shop/billing.py").write_text(text)
    git(repo, "commit", "-qam", message)
    return git(repo, "rev-parse", "HEAD")


def note(title: str, body: str) -> Note:
    return do_ingest_note(title=title, body=body, wing="concepts", frontmatter={"project": "shop"})


def test_a_stale_notes_evidence_names_the_commit_that_changed_each_anchor_that_is_still_there(code_root):
    repo = make_repo(code_root, {"src/shop/billing.py": BILLING})
    add_project("shop", str(repo))
    totals = note(
        "Totals",
        "In `src/shop/billing.py`, `send_invoice` sends one invoice and `invoice_total` adds up its lines.",
    )
    discounts = note(
        "Discounts",
        "In `src/shop/billing.py`, `send_invoice` sends one invoice and `apply_discount` takes a percentage off.",
    )
    true = note("Totals add lines", "`invoice_total` in `src/shop/billing.py` adds up the order's lines.")

    # B changes invoice_total (what it adds up) and apply_discount (a harmless rewrite); C only touches the file
    # elsewhere and adds a comment inside invoice_total; D removes send_invoice and changes apply_discount for real.
    text_b = BILLING.replace("sum(order.lines)", "sum(line.amount for line in order.lines)").replace(
        "order.total * (100 - percent) / 100", "order.total * ((100 - percent) / 100)"
    )
    b = commit(repo, "totals from the lines' amounts", text_b)
    text_c = text_b.replace("RATE = 2", "RATE = 3").replace(
        "    return sum(line.amount", "    # the lines' amounts, not the lines\n    return sum(line.amount"
    )
    c = commit(repo, "rate 3, a comment", text_c)
    text_d = text_c.replace("def send_invoice(order):\n    return order.total\n\n\n", "").replace(
        "order.total * ((100 - percent) / 100)", "order.total - percent"
    )
    d = commit(repo, "send_invoice goes; the discount is an amount now", text_d)

    call_command("project_sync", "shop", stdout=io.StringIO())

    totals.refresh_from_db()
    evidence = {item["anchor"]: item for item in totals.verification_evidence}
    assert totals.verification_state == "stale"
    # The anchor that failed, with the commit that removed it (not C, not a later touch of the file).
    assert (evidence["send_invoice"]["state"], evidence["send_invoice"]["changed_in"]) == ("changed", d)
    # The one still there, marked as such, with the commit that changed its definition: B, not C (a comment only).
    changed = evidence["invoice_total"]
    assert (changed["state"], changed["changed_in"], changed["commits"]) == (ALTERED, b, [b]), c
    assert "changed, still present" in changed["message"] and b[:7] in changed["message"]
    assert "sum(order.lines)" in changed["quoted"] and "line.amount" in changed["now"]
    assert "-    return sum(order.lines)" in changed["hunk"]
    # What sessions see says what failed, not what only changed.
    label = verification_dict(totals)["label"]
    assert "send_invoice" in label and "invoice_total" not in label
    assert {item["anchor"]: item["state"] for item in verification_dict(totals)["evidence"]}["invoice_total"] == ALTERED

    # Changed in B and in D: D is named, the commit that also removed what the note's other anchor cites (the commit
    # that made the note false); both are listed.
    discounts.refresh_from_db()
    discount = {item["anchor"]: item for item in discounts.verification_evidence}["apply_discount"]
    assert (discount["state"], discount["changed_in"], discount["commits"]) == (ALTERED, d, [b, d])

    # A true note whose anchored function's body changed stays verified: a changed body is not a stale flag.
    true.refresh_from_db()
    assert (true.verification_state, true.verification_evidence) == ("verified", [])


def test_a_class_removed_entirely_is_named_with_the_commit_that_removed_it(code_root):
    assert classify("SSLConfig") == "symbol" and classify("HTTPTransport") == "symbol"
    assert classify("URLs") is None and classify("APIs") is None
    files = {"src/shop/config.py": "class SSLConfig:\n    verify = True\n\n\nclass RetryPolicy:\n    seconds = 5\n"}
    repo = make_repo(code_root, files)
    add_project("shop", str(repo))
    written = note("TLS", "`SSLConfig` in `src/shop/config.py` holds the TLS settings; `RetryPolicy` the retries.")
    (repo / "src/shop/config.py").write_text(files["src/shop/config.py"].replace("seconds = 5", "seconds = 6"))
    git(repo, "commit", "-qam", "longer timeout")
    (repo / "src/shop/config.py").write_text("class RetryPolicy:\n    seconds = 6\n")
    removed = commit_all(repo, "no SSLConfig")
    (repo / "src/shop/config.py").write_text("class RetryPolicy:\n    seconds = 6\n\n# the end\n")
    later = commit_all(repo, "a footer")

    call_command("project_sync", "shop", stdout=io.StringIO())

    written.refresh_from_db()
    evidence = {item["anchor"]: item for item in written.verification_evidence}
    assert (evidence["SSLConfig"]["state"], evidence["SSLConfig"]["changed_in"]) == ("changed", removed), later
    # A class-level attribute of RetryPolicy changed: the class itself is shown as changed, still present.
    assert evidence["RetryPolicy"]["state"] == ALTERED


def commit_all(repo, message: str) -> str:
    git(repo, "commit", "-qam", message)
    return git(repo, "rev-parse", "HEAD")


def test_a_re_export_is_a_definition_of_the_package(code_root):
    files = {
        "typer/__init__.py": "from click.termui import clear as clear\nfrom .main import run as run\n",
        "typer/main.py": "def run():\n    return 1\n",
    }
    repo = make_repo(code_root, files)
    add_project("typer", str(repo))
    written = do_ingest_note(
        title="Helpers",
        body="`typer/__init__.py` offers `typer.clear()` and `typer.run()`.",
        wing="concepts",
        frontmatter={"project": "typer"},
    )
    assert written.verification_state == "verified" and written.unresolved_anchors == []
    (repo / "typer/__init__.py").write_text("from .main import run as run\n")
    removed = commit_all(repo, "no clear")

    call_command("project_sync", "typer", stdout=io.StringIO())

    written.refresh_from_db()
    evidence = {item["anchor"]: item for item in written.verification_evidence}
    assert (evidence["typer.clear"]["state"], evidence["typer.clear"]["changed_in"]) == ("changed", removed)


def test_still_true_settles_what_changed_before_it(code_root):
    from brain.actions import do_confirm_note

    billing = BILLING + "\n\ndef _round_cents(amount):\n    return round(amount, 2)\n"
    repo = make_repo(code_root, {"src/shop/billing.py": billing})
    add_project("shop", str(repo))
    written = note(
        "Billing",
        "In `src/shop/billing.py`: `send_invoice`, `invoice_total`, `apply_discount` and `_round_cents`.",
    )
    text_b = billing.replace("sum(order.lines)", "sum(line.amount for line in order.lines)").replace(
        "def send_invoice(order):\n    return order.total\n\n\n", ""
    )
    b = commit(repo, "send_invoice goes; totals from the amounts", text_b)
    call_command("project_sync", "shop", stdout=io.StringIO())
    written.refresh_from_db()
    assert {item["anchor"]: item["changed_in"] for item in written.verification_evidence} == {
        "send_invoice": b,
        "invoice_total": b,
    }

    # A reviewer says the note still holds at B: what changed before B is settled, counted from B on.
    assert do_confirm_note(written, user=None).verification_state == "verified"
    text_c = text_b.replace("order.total * (100 - percent) / 100", "order.total - percent").replace(
        "\n\ndef _round_cents(amount):\n    return round(amount, 2)\n", ""
    )
    c = commit(repo, "no _round_cents; the discount is an amount", text_c)
    call_command("project_sync", "shop", stdout=io.StringIO())

    written.refresh_from_db()
    evidence = {item["anchor"]: item for item in written.verification_evidence}
    assert written.verification_state == "stale"
    assert (evidence["_round_cents"]["state"], evidence["_round_cents"]["changed_in"]) == ("changed", c)
    assert (evidence["apply_discount"]["state"], evidence["apply_discount"]["commits"]) == (ALTERED, [c])
    assert "invoice_total" not in evidence  # changed in B, before the reviewer confirmed the note
    assert "send_invoice" not in evidence  # waived by "still true"


def test_a_setting_is_anchored_where_it_is_assigned_and_an_old_mention_is_never_where_it_went(code_root):
    files = {
        "CHANGELOG.md": "# Changes\n\n- `DEFAULT_CIPHERS` lists the suites we allow.\n",
        "src/shop/config.py": 'DEFAULT_CIPHERS = "ECDHE+AESGCM"\nVERIFY = True\n',
    }
    repo = make_repo(code_root, files)
    add_project("shop", str(repo))
    written = note("Ciphers", "We pin our own suites: `DEFAULT_CIPHERS`.")
    assert Note.objects.get(pk=written.pk).anchors.get(value="DEFAULT_CIPHERS").location == "src/shop/config.py:1"

    (repo / "src/shop/config.py").write_text("VERIFY = True\n")
    removed = commit_all(repo, "the interpreter's ciphers")
    call_command("project_sync", "shop", stdout=io.StringIO())
    (repo / "src/shop/config.py").write_text("VERIFY = False\n")
    commit_all(repo, "no verification")
    call_command("project_sync", "shop", stdout=io.StringIO())  # a second sync re-checks the failed anchor

    written.refresh_from_db()
    item = {item["anchor"]: item for item in written.verification_evidence}["DEFAULT_CIPHERS"]
    assert (written.verification_state, item["state"], item["changed_in"]) == ("stale", "changed", removed)
