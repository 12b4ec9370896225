"""Passages of documentation sites' markdown (issue 45): the layout their generators add is not words, and
never stands between a lead-in and the code it leads into.

Tutorial pages pull their code in from files (`{* docs_src/app/main.py hl[9] *}`), wrap console sessions
in `<div class="termy">`, open admonitions with `/// tip` or MyST's ```` ```{note} ````, and put one
command per installer in content tabs (`=== "pip"`). Each of those made the lead-in line a passage of its
own and the code a passage without it, or made a marker line the "lead-in".
"""

from __future__ import annotations

import pytest

from brain import bm25
from brain.actions import do_ingest_note
from brain.answers import answer
from brain.passages import MORE_PASSAGES, ScoredPassage, has_code, quoted_passages, split_passages


def texts(body: str) -> list[str]:
    return [passage.text for passage in split_passages("Page", body)]


INCLUDE_PAGE = """# Environment variables

You can also read a value from the environment when it is not given on the command line.

To do that, use the `envvar` parameter for `Argument()`:

{* docs_src/arguments/envvar/tutorial001.py hl[9] *}

In this case the argument reads `AWESOME_NAME`.
"""


def test_an_include_line_is_the_code_its_lead_in_leads_into():
    found = texts(INCLUDE_PAGE)
    [code] = [text for text in found if "{*" in text]
    assert code.endswith(
        "To do that, use the `envvar` parameter for `Argument()`:\n\n{* docs_src/arguments/envvar/tutorial001.py hl[9] *}"
    )
    assert "To do that, use the `envvar` parameter for `Argument()`:" not in found  # never alone
    assert not any(text.startswith("{*") for text in found)
    [passage] = [p for p in split_passages("Page", INCLUDE_PAGE) if "{*" in p.text]
    assert has_code(passage)


TERMY_PAGE = """# Counter options

You can make an option work as a counter with the `count` parameter, and the value is how many times it was given:

<div class="termy">

```console
$ python main.py --verbose --verbose
Verbose level is 2
```

</div>
"""


def test_html_layout_lines_do_not_stand_between_the_prose_and_its_console_session():
    found = texts(TERMY_PAGE)
    [console] = [text for text in found if "```console" in text]
    assert console.startswith("You can make an option work as a counter with the `count` parameter")
    assert not any("termy" in text or text.strip() in ("<div>", "</div>") for text in found)


ADMONITION_PAGE = """# Passwords

/// tip | Windows

On Windows, set the variable first.

///

You can hide what the user types with `hide_input=True`.

/// note

The prompt asks twice with `confirmation_prompt=True`.

///
"""


def test_admonition_markers_are_layout_and_their_text_is_a_passage():
    found = texts(ADMONITION_PAGE)
    assert found == [
        "On Windows, set the variable first.",
        "You can hide what the user types with `hide_input=True`.",
        "The prompt asks twice with `confirmation_prompt=True`.",
    ]


TABS_PAGE = """# Install

## Optional dependencies

* `email`: e-mail validation.
* `timezone`: a time zone database.

To install optional dependencies along with the library:

=== "pip"

    ```bash
    pip install 'library[email,timezone]'
    ```

=== "uv"

    ```bash
    uv add 'library[email,timezone]'
    ```
"""


def test_a_content_tab_marker_does_not_break_the_lead_in():
    code = [text for text in texts(TABS_PAGE) if "```bash" in text]
    assert len(code) == 2 and all(text.startswith("To install optional dependencies along with") for text in code)
    assert "pip install 'library[email,timezone]'" in code[0]


MYST_PAGE = """# Testing

```{contents}
:depth: 1
:local: true
```

The runner invokes a command in isolation.

```{note}
:class: tip

Writes to the standard streams are captured, so the output can be checked.
```

Check the exit code like this:

```{code-block} python
result = runner.invoke(hello)
assert result.exit_code == 0
```
"""


def test_myst_admonitions_are_prose_their_table_of_contents_is_nothing_and_code_blocks_stay_code():
    found = texts(MYST_PAGE)
    assert "Writes to the standard streams are captured, so the output can be checked." in found
    assert not any("{note}" in text or "{contents}" in text or ":depth:" in text or ":class:" in text for text in found)
    [code] = [text for text in found if "```{code-block}" in text]
    assert "Check the exit code like this:" in code and "assert result.exit_code == 0" in code


@pytest.fixture
def docs_brain(db, settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_ANSWER_MODEL = ""
    settings.BRAIN_RERANKER_URL = ""
    bm25.reset()
    do_ingest_note(title="Install", body=TABS_PAGE, wing="library", slug="install", source="test")
    do_ingest_note(title="Environment variables", body=INCLUDE_PAGE, wing="library", slug="envvar", source="test")
    do_ingest_note(title="Counter options", body=TERMY_PAGE, wing="library", slug="counter", source="test")
    yield
    bm25.reset()


def test_the_answer_quotes_the_tabbed_command_under_its_lead_in(docs_brain):
    result = answer("How do I install the optional dependencies?")
    first = result["answer"].split("\n\n[")[0]
    assert (
        "To install optional dependencies along with the library:\n\n```bash\n    pip install 'library[email,timezone]'"
        in first
    ), first
    assert '=== "pip"' not in result["answer"]


def test_the_answer_quotes_the_lead_in_of_an_included_example(docs_brain):
    result = answer("Which parameter reads an argument from an environment variable?")
    first = result["answer"].split("\n\n[")[0]
    assert "use the `envvar` parameter for `Argument()`:" in first, first
    assert "{* docs_src/arguments/envvar/tutorial001.py hl[9] *}" in first


LOCALS_PAGE = """# Errors

Being able to see the values of local variables is helpful to debug problems.

Local variables can hold secrets, which is why errors can leave their values out.

Printing the values of local variables makes the output longer.

To show them, set `show_locals=True` when creating the app:

{* docs_src/errors/tutorial002.py hl[3] *}
"""


def test_the_example_is_quoted_before_prose_that_scores_a_little_better():
    """Issue 45: the answer quoted three paragraphs about local variables and left out the line that shows how."""
    passages = split_passages("Errors", LOCALS_PAGE)
    prose = [p for p in passages if not has_code(p)]
    [code] = [p for p in passages if has_code(p)]
    ranked = [
        ScoredPassage(prose[0], 10.0, None),
        ScoredPassage(prose[1], 9.5, None),
        ScoredPassage(prose[2], 9.3, None),
        ScoredPassage(code, 7.5, None),  # within SECOND_PASSAGE_SHARE of the best
    ]
    quoted = quoted_passages(ranked, passages, second=True)
    assert code in quoted and prose[0] in quoted and len(quoted) == 1 + MORE_PASSAGES


MARKDOWN_HELP_PAGE = """# Command help

## Markdown in the help

You can set `rich_markup_mode="markdown"` on the app:

{* docs_src/commands/help/tutorial005.py hl[4] *}

With that, you can use Markdown in the docstring to make a word bold or show a list of items.

Check it:

```console
$ python main.py create --help

 Create a **new** user with:
  - a name
```
"""


def test_prose_that_explains_the_example_above_it_brings_that_example():
    passages = split_passages("Command help", MARKDOWN_HELP_PAGE)
    [explained] = [p for p in passages if p.text.startswith("With that, you can use Markdown") and not has_code(p)]
    quoted = quoted_passages([ScoredPassage(explained, 10.0, None)], passages, second=False)
    assert [p.text for p in quoted][0].startswith('You can set `rich_markup_mode="markdown"` on the app:')
    assert quoted[1] == explained


def test_a_console_session_brings_the_example_it_runs():
    passages = split_passages("Command help", MARKDOWN_HELP_PAGE)
    [console] = [p for p in passages if "```console" in p.text]
    quoted = quoted_passages([ScoredPassage(console, 10.0, None)], passages, second=False)
    assert len(quoted) == 2 and 'rich_markup_mode="markdown"' in quoted[0].text and quoted[1] == console


@pytest.mark.django_db
def test_the_answer_about_the_console_output_shows_the_setting_too(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_ANSWER_MODEL = ""
    settings.BRAIN_RERANKER_URL = ""
    bm25.reset()
    do_ingest_note(title="Command help", body=MARKDOWN_HELP_PAGE, wing="library", slug="help", source="test")
    try:
        result = answer("How do I make bold words and bullet lists show in the help text?")
    finally:
        bm25.reset()
    assert 'rich_markup_mode="markdown"' in result["answer"], result["answer"]


RUNNER_PAGE = """# Testing

And inside of the function, use the `runner` to `invoke` the application.

The first parameter to `runner.invoke()` is a `Typer` app.

The second parameter is a `list` of `str`, with all the text you would pass in the command line:

{* docs_src/testing/app01_py310/test_main.py hl[8,9] *}
"""


def test_a_sentence_that_also_leads_into_the_example_is_quoted_once():
    # "The first parameter …" is a passage, and it also leads into the example with the line after it (a short
    # line ending in ":" points back at the paragraph above): quoting both said it twice.
    passages = split_passages("Testing", RUNNER_PAGE)
    [alone] = [p for p in passages if p.text == "The first parameter to `runner.invoke()` is a `Typer` app."]
    [example] = [p for p in passages if "{*" in p.text]
    assert alone.text in example.text
    ranked = [ScoredPassage(alone, 10.0, None), ScoredPassage(example, 9.0, None)]

    quoted = quoted_passages(ranked, passages, second=True)

    assert quoted == [example]


def test_a_page_that_says_it_twice_is_quoted_once_not_left_out():
    # httpx's transports page lists the same item twice: each copy held the other, and both were left out.
    body = "# Transports\n\n* Inspect 500 responses with `raise_app_exceptions=False`.\n\n## Again\n\n" + (
        "* Inspect 500 responses with `raise_app_exceptions=False`.\n"
    )
    first, second = split_passages("Transports", body)
    assert first.text == second.text
    ranked = [ScoredPassage(second, 10.0, None), ScoredPassage(first, 10.0, None)]

    assert quoted_passages(ranked, [first, second], second=True) == [first]


DATETIME_PAGE = """# DateTime

## Custom date format

You can also customize the formats received for the `datetime` with the `formats` parameter.

`formats` receives a list of strings with the date formats that would be passed to `datetime.strptime()`.

For example, you may want to accept a format with:

* first the month
* then the day
"""


def test_a_paragraph_of_one_sentence_is_quoted_with_the_paragraph_after_it_that_says_how():
    # typer's datetime page: the answer quoted "You can customize the formats … with the `formats` parameter." and
    # left out the next paragraph, the one that says what `formats` takes.
    passages = split_passages("DateTime", DATETIME_PAGE)
    [names] = [p for p in passages if p.text.startswith("You can also customize")]
    [says_how] = [p for p in passages if p.text.startswith("`formats` receives")]

    quoted = quoted_passages([ScoredPassage(names, 10.0, None)], passages, second=False)

    assert quoted == [names, says_how]


def test_a_longer_paragraph_is_quoted_alone_and_the_next_section_is_not_pulled_in():
    body = (
        "# Formats\n\n## One\n\nThe `formats` parameter takes strings. Each is passed to `strptime()`.\n\n"
        "It is tried in order.\n\n## Two\n\nA single sentence here.\n\n## Three\n\nAnother section.\n"
    )
    passages = split_passages("Formats", body)
    [longer] = [p for p in passages if p.text.startswith("The `formats` parameter")]
    [single] = [p for p in passages if p.text == "A single sentence here."]

    assert quoted_passages([ScoredPassage(longer, 10.0, None)], passages, second=False) == [longer]
    assert quoted_passages([ScoredPassage(single, 10.0, None)], passages, second=False) == [single]


TYPER_COMMAND_PAGE = """# The typer command

## Run a script

The `typer` command runs a script that holds an app, without installing it:

```console
$ typer main.py run --name Camila
```

## Where it looks for the app

When no `--app` is given, the command looks through the script's module:

* A Typer app in a variable named `app`, `cli` or `main`.
* The first Typer app found in any other variable.
* A function in a variable named `main`, `cli` or `app`.
"""


def test_the_best_sources_quote_a_passage_that_scores_less_but_well():
    """Issue 45 (bench/projects.py, typer): "When running a script through the typer runner without --app, which
    variable names does it look for first?" was answered by the page's passages about running scripts; the list item
    naming `app`, `cli` and `main` ranked third on the page at half the best score and was left out."""
    passages = split_passages("The typer command", TYPER_COMMAND_PAGE)
    [running, first, other, function] = passages
    ranked = [
        ScoredPassage(running, 10.0, None),
        ScoredPassage(first, 5.0, None),  # FURTHER_SHARE of the best, not SECOND_PASSAGE_SHARE
        ScoredPassage(function, 4.5, None),
        ScoredPassage(other, 3.0, None),  # under FURTHER_SHARE
    ]
    assert quoted_passages(ranked, passages, second=True) == [running]
    quoted = quoted_passages(ranked, passages, second=True, further=True)
    assert quoted == [running, first, function]  # in the page's order
