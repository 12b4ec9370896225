"""Whether a model's answer to brain_answer earns `synthesized: true`.

    problem = synthesized_answer_problem(text, sources=5, truncated=chat.truncated)   # None: accept it

A model's answer is accepted only if it
- was not cut at the token limit (`finish_reason: length`): a cut answer may end mid-claim;
- cites at least one source, and only sources that exist (`[n]` with 1 ≤ n ≤ the number of sources);
- is not degenerate: no chat-template tokens leaked into the text (`<<SYS>>`, `[/INST]`,
  `<start_of_turn>`, …), no line repeated over and over.
Otherwise brain_answer returns the extractive answer with `synthesized: false` and the reason.
Small local models do all of these (tests/fixtures/real-model-outputs/ holds real examples).
"""

from __future__ import annotations

import re
from collections import Counter

# Control tokens of the common chat templates (Llama 2, Llama 3, Gemma, ChatML, Mistral, …).
TEMPLATE_TOKENS = re.compile(
    r"<<\s*/?SYS\s*>>|\[/?INST\]|<start_of_turn>|<end_of_turn>|<\|im_start\|>|<\|im_end\|>|<\|eot_id\|>"
    r"|<\|start_header_id\|>|<\|end_header_id\|>|<\|begin_of_text\|>|<\|endoftext\|>|<\|assistant\|>|<\|user\|>"
    r"|<\|system\|>|</s>|<s>",
    re.IGNORECASE,
)
CITATION = re.compile(r"\[(\d{1,3})\]")
# A line (at least MIN_REPEATED_LINE_CHARS long once stripped) seen this often is a loop, not an answer.
MAX_LINE_REPEATS = 3
MIN_REPEATED_LINE_CHARS = 8
# Or: this share of the answer's lines are copies of an earlier line.
MAX_REPEATED_SHARE = 0.5
MIN_LINES_FOR_SHARE = 6


def repeated_line(text: str) -> tuple[str, int] | None:
    """(the line, how often) when the text loops on a line; None otherwise."""
    lines = [line.strip() for line in text.splitlines() if len(line.strip()) >= MIN_REPEATED_LINE_CHARS]
    if not lines:
        return None
    line, count = Counter(lines).most_common(1)[0]
    if count > MAX_LINE_REPEATS:
        return line, count
    if len(lines) >= MIN_LINES_FOR_SHARE and (len(lines) - len(set(lines))) / len(lines) >= MAX_REPEATED_SHARE:
        return line, count
    return None


def synthesized_answer_problem(text: str, *, sources: int, truncated: bool) -> str | None:
    """Why the model's answer cannot be passed off as a sourced answer; None when it can."""
    if truncated:
        return "the model's answer was cut off at the token limit"
    if not text.strip():
        return "the model's answer was empty"
    leaked = TEMPLATE_TOKENS.search(text)
    if leaked:
        return f"the model's answer is degenerate: it contains the chat-template token {leaked.group(0)!r}"
    looping = repeated_line(text)
    if looping:
        line, count = looping
        return f"the model's answer is degenerate: the line {line[:60]!r} is repeated {count} times"
    cited = {int(number) for number in CITATION.findall(text)}
    if not cited:
        return "the model's answer cites no source ([1]…)"
    missing = sorted(n for n in cited if not 1 <= n <= sources)
    if missing:
        listed = ", ".join(f"[{n}]" for n in missing)
        return (
            f"the model's answer cites {listed}, but there {'is' if sources == 1 else 'are'} only {sources} source(s)"
        )
    return None
