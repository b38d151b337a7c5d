"""Fuzzing the edges where text from outside comes in (issue 14): a model's tool arguments,
a server's response bodies, and any string a widget draws. Whatever arrives, the code
answers with its own kind of refusal — never a crash, never raw control sequences."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from agent.exceptions import ModelError
from agent.tool_schemas import ARGUMENTS, ArgumentError, parse_arguments
from agent.turns import parse_turn
from memory.records import MemoryRecord
from memory.text import as_markup, mask_url_passwords, shown
from widgets.record_view import record_renderable

# Any JSON value, strings with every code point a JSON text can carry (lone surrogates too).
_TEXT = st.text(st.characters(codec=None), max_size=40)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)
_CONTROLS = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]]
_CONTROL = st.text(st.sampled_from(_CONTROLS), min_size=1, max_size=20)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(ARGUMENTS)), _JSON | _TEXT)
def test_any_tool_arguments_are_parsed_or_refused_with_a_reason(name, arguments):
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        parsed = parse_arguments(name, raw)
    except ArgumentError as exc:
        assert str(exc)  # what the model is told after "ERROR: "
    else:
        json.dumps(parsed.model_dump())  # valid data, ready for the tools


@settings(max_examples=400, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "id": _JSON,
            "status": _JSON,
            "output": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "type": st.sampled_from(["message", "function_call", "reasoning", "other"])
                        | _JSON,
                        "content": _JSON,
                        "arguments": _JSON,
                        "call_id": _JSON,
                        "name": _JSON,
                        "status": _JSON,
                        "phase": _JSON,
                    },
                ),
                max_size=4,
            )
            | _JSON,
            "usage": _JSON,
            "error": _JSON,
            "incomplete_details": _JSON,
        },
    )
)
def test_any_response_body_parses_or_is_one_model_error(body):
    try:
        turn = parse_turn(body)
    except ModelError as exc:
        assert str(exc).startswith("a malformed response")
    else:
        assert isinstance(turn.id, str)
        assert all(isinstance(call.arguments, str) for call in turn.calls)


def _drawn(renderable) -> str:
    console = Console(width=2000, color_system="truecolor", force_terminal=True)  # no wrap
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


@settings(max_examples=200, deadline=None)
@given(_TEXT, _CONTROL, _TEXT)
def test_any_record_text_is_drawn_as_data_with_no_raw_control_sequence(before, control, after):
    text = "[bold]x[/" + before + control + after  # first: a tab's misfit may cut the end
    record = MemoryRecord(
        memory_id="00000000-0000-5000-8000-000000000001",
        scope="fuzz",
        fix_description=text,
        error_type=text,
        file_paths=(text,),
        outcome=text,
        symptom=text,
        session_id=text,
        timestamp=datetime(2026, 1, 2, tzinfo=UTC),
    )
    drawn = _drawn(record_renderable(record))
    assert "[bold]x" in drawn  # brackets are text, not markup
    # Rich's own styling is the only escape sequence left: none of the record's controls
    assert all(ch not in drawn for ch in control if ch not in "\x1b\n\t")
    assert all(ch in "\n\t" for ch in shown(control) if ch in _CONTROLS)


# markup, emoji codes and template variables
_MARKUP_LIKE = st.text(st.sampled_from("\\[]/#@=ab x:${}"), max_size=16)


@settings(max_examples=600, deadline=None)
@given(
    st.one_of(_TEXT, _MARKUP_LIKE),
    st.one_of(_TEXT, _MARKUP_LIKE),
    st.sampled_from(["pane.error", "bold", "pane.accent"]),
)
def test_any_text_a_pane_puts_in_markup_is_drawn_as_itself(text, more, style):
    """The panes (turns, matches, test output, notes) and the CLI put data inside their own
    markup, through `as_markup`: whatever the data, the markup parses and the line reads as
    the data, shown. (rich.markup.escape does not: `\\[` came out as `[`.)"""
    from widgets.pane_log import as_text

    line = f"[{style}]{as_markup(text)}[/] and [{style}]{as_markup(more)}[/]"
    assert as_text(line).plain == shown(f"{text} and {more}")


@pytest.mark.parametrize("text", ["\\[", "\\\\[x", "a\\", "a\\\\", "\\[b]", "[x", "[/]"])
def test_data_rich_s_own_escape_misreads_is_drawn_as_itself(text):
    from widgets.pane_log import as_text

    assert as_text(f"[bold]{as_markup(text)}[/]").plain == text


@settings(max_examples=300, deadline=None)
@given(st.one_of(_TEXT, _MARKUP_LIKE), st.one_of(_TEXT, _MARKUP_LIKE))
def test_any_text_the_matches_pane_and_the_header_fill_in_is_drawn_as_itself(text, more):
    """The Textual panes put data into their markup as template variables, not escaped:
    Textual's escape leaves `[x` before a closing tag, and a trailing backslash, misread."""
    text = f"E{text}"  # an error type and a why line, never empty
    from agent import events as ev
    from tests.app.pilot_helpers import option_texts
    from widgets.matches_log import MatchesLog
    from widgets.session_header import SessionHeader

    match = ev.MatchBrief(
        memory_id="00000000-0000-5000-8000-000000000001",
        score=0.5,
        rank=1,
        error_type=text,
        fix_description=more,
        file_paths=[more],
        stored_at=datetime(2026, 1, 2, tzinfo=UTC),
        provenance="confirmed",
        flags=[],
        why=text,
    )
    pane = MatchesLog()
    pane.add_search(ev.MemoryMatched(turn=1, query=more, error_type=text, matches=[match]))
    heading, line = option_texts(pane)
    assert heading == shown(f"turn 1 query [{text}]: {more}")
    bar = "█████░░░░░"
    assert line == shown(
        f"  1. possible 0.5000 {bar} 00000000 {text} · {more} · 2026-01-02 00:00\n"
        f"     {more}\n     {text}"
    )
    header = SessionHeader()
    header.session, header.status = text, more
    assert header.render().plain == mask_url_passwords(shown(f"{text} · memory -\n{more}"))
