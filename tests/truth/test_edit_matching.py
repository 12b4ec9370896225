"""brain.edits: which anchors an edit removed or changed, by rule (no database: the rules alone)."""

from __future__ import annotations

from brain.edits import FileEdit, anchor_change, file_edit, path_suffixes
from brain.models import Anchor


def anchor(kind: str, value: str) -> Anchor:
    return Anchor(kind=kind, value=value, path="billing/retry.py")


def edit(old: str, new: str) -> FileEdit:
    return FileEdit("Edit", "/src/billing/retry.py", (old,), (new,))


def test_a_symbol_is_touched_when_its_definition_goes_not_when_its_body_or_a_call_changes():
    send = anchor("symbol", "send_invoice")
    assert anchor_change(send, edit("def send_invoice(invoice):", "def deliver_invoice(invoice):")) == "removed"
    assert anchor_change(send, edit("def send_invoice(invoice):", "def send_invoice(invoice, retries):")) == ""
    assert anchor_change(send, edit("    send_invoice(invoice)\n", "    deliver(invoice)\n")) == ""  # a call site
    assert (
        anchor_change(send, edit("def send_invoice(invoice):", "def deliver(invoice):  # was send_invoice"))
        == "changed"
    )
    method = anchor("symbol", "Retry.send")
    assert anchor_change(method, edit("    async def send(self):", "    async def post(self):")) == "removed"
    assert anchor_change(method, edit("    def send(self):", "    def post(self):")) == "removed"


def test_a_setting_is_touched_when_its_assignment_goes():
    attempts = anchor("setting", "MAX_ATTEMPTS")
    assert anchor_change(attempts, edit("MAX_ATTEMPTS = 3\n", "RETRIES = 3\n")) == "removed"
    assert (
        anchor_change(attempts, edit("MAX_ATTEMPTS = 3\n", "MAX_ATTEMPTS = 5\n")) == ""
    )  # the value is a quote's business
    assert anchor_change(attempts, edit("MAX_ATTEMPTS: int = 3\n", "LIMIT: int = 3\n")) == "removed"


def test_a_quote_is_touched_when_its_line_goes_or_the_part_of_it_an_edit_replaced():
    quote = anchor("quote", "return round(amount, 2)")
    assert anchor_change(quote, edit("    return round(amount, 2)\n", "    return round(amount, 4)\n")) == "changed"
    assert anchor_change(quote, edit("    return round(amount, 2)\n", "")) == "removed"
    assert anchor_change(quote, edit("round(amount, 2)", "round(amount, 4)")) == "changed"  # part of the line
    assert anchor_change(quote, edit("    x = 1\n", "    x = 2\n")) == ""
    assert anchor_change(quote, edit("    return   round(amount, 2)\n", "    return round(amount, 2)  # cents\n")) == ""


def test_a_write_is_judged_on_the_whole_new_file():
    write = FileEdit("Write", "/src/billing/retry.py", (), (), "RETRIES = 3\n\ndef send_invoice(invoice):\n    pass\n")
    assert anchor_change(anchor("setting", "MAX_ATTEMPTS"), write) == "removed"
    assert anchor_change(anchor("symbol", "send_invoice"), write) == ""
    assert anchor_change(anchor("quote", "for attempt in range(MAX_ATTEMPTS):"), write) == "removed"


def test_the_payloads_of_the_four_tools_are_read_and_others_are_not():
    multi = file_edit(
        {
            "tool_name": "MultiEdit",
            "tool_input": {
                "file_path": "/a/b.py",
                "edits": [{"old_string": "x = 1", "new_string": "x = 2"}, {"old_string": "y", "new_string": "z"}],
            },
        }
    )
    assert multi is not None and multi.removed == ("x = 1", "y") and multi.added == ("x = 2", "z")
    written = file_edit(
        {
            "tool_name": "Write",
            "tool_input": {"file_path": "/a/b.py", "content": "b = 2\n"},
            "tool_response": {"originalFile": "a = 1\n"},
        }
    )
    assert written is not None and written.removed == ("a = 1",) and written.content == "b = 2\n"
    notebook = file_edit(
        {"tool_name": "NotebookEdit", "tool_input": {"notebook_path": "/a/n.ipynb", "new_source": "x"}}
    )
    assert notebook is not None and notebook.path == "/a/n.ipynb" and notebook.removed == ()
    assert file_edit({"tool_name": "Bash", "tool_input": {"command": "ls"}}) is None
    assert file_edit({"tool_name": "Edit", "tool_input": {"old_string": "a"}}) is None  # no file
    assert path_suffixes("/home/ana/ledgerly/billing/retry.py")[:2] == ["retry.py", "billing/retry.py"]
