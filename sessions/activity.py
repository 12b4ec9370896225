"""Who did what, across the product: reviewer actions on notes (`brain.NoteRevision`) and curation decisions
on training examples (each example's `edits` history), newest first, in one list.

The two histories live in different tables (an example's decisions in a JSON list), so a page of the
merged list takes the newest rows of each up to that page and merges them: the cost grows with the page
number, not with the size of either history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, overload

from django.db import connection
from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime

from brain.models import NoteRevision
from sessions.models import TrainingExample

# The curation decisions an example's history records ("undo" undoes one of them).
EXAMPLE_ACTIONS = ("approve", "reject", "swap", "edit", "undo")
SERVICE = "service"  # the filter value for changes no person made (imports, tools, tasks)


@dataclass(frozen=True)
class Activity:
    at: datetime
    who: str  # a username, or "" for the service
    what: str  # "note" or "example"
    action: str  # the action's label
    title: str
    url: str
    details: str = ""
    undone: bool = False


class MergedActivity:
    """The two histories as one sequence a Django Paginator can page through (count + slices)."""

    def __init__(self, *, person: str = "", action: str = ""):
        self.person, self.action = person, action

    # -- the notes' side -----------------------------------------------------------------------
    def _revisions(self) -> QuerySet[NoteRevision]:
        revisions = NoteRevision.objects.select_related("user", "note").order_by("-created_at", "-id")
        if self.person == SERVICE:
            revisions = revisions.filter(user__isnull=True)
        elif self.person:
            revisions = revisions.filter(user__username=self.person)
        if self.action:
            kind, _, name = self.action.partition(":")
            revisions = revisions.filter(action=name) if kind == "note" else revisions.none()
        return revisions

    # -- the examples' side --------------------------------------------------------------------
    def _example_sql(self, select: str, tail: str = "") -> tuple[str, dict[str, Any]]:
        table = TrainingExample._meta.db_table
        where, params = ["true"], {}
        if self.person == SERVICE:
            where.append("coalesce(x.value->>'by', '') = ''")
        elif self.person:
            where.append("x.value->>'by' = %(person)s")
            params["person"] = self.person
        if self.action:
            kind, _, name = self.action.partition(":")
            where.append("x.value->>'action' = %(action)s" if kind == "example" else "false")
            params["action"] = name
        sql = (
            f"SELECT {select} FROM {table} e CROSS JOIN LATERAL jsonb_array_elements(e.edits) x "  # noqa: S608
            f"WHERE jsonb_typeof(e.edits) = 'array' AND {' AND '.join(where)} {tail}"
        )
        return sql, params

    def _examples(self, limit: int) -> list[Activity]:
        sql, params = self._example_sql(
            "e.id, e.kind, x.value->>'at', coalesce(x.value->>'by', ''), x.value->>'action', "
            "coalesce(x.value->>'reason', ''), coalesce(x.value->>'undone', '')",
            "ORDER BY x.value->>'at' DESC, e.id DESC LIMIT %(limit)s",
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, {**params, "limit": limit})
            rows = cursor.fetchall()
        found = []
        for pk, kind, at, who, action, reason, undone in rows:
            moment = parse_datetime(at or "")
            if moment is None:
                continue
            label = f"{action} of the {undone}" if action == "undo" and undone else action
            found.append(
                Activity(
                    at=moment,
                    who=who,
                    what="example",
                    action=label,
                    title=f"{kind.upper()} example #{pk}",
                    url=f"/training/{pk}/",
                    details=reason,
                )
            )
        return found

    # -- the sequence ---------------------------------------------------------------------------
    def count(self) -> int:
        sql, params = self._example_sql("count(*)")
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            examples = cursor.fetchone()[0]
        return self._revisions().count() + examples

    def __len__(self) -> int:
        return self.count()

    @overload
    def __getitem__(self, index: int) -> Activity: ...

    @overload
    def __getitem__(self, index: slice) -> list[Activity]: ...

    def __getitem__(self, index: int | slice) -> Activity | list[Activity]:
        if not isinstance(index, slice):
            return self[index : index + 1][0]
        stop = index.stop or 0
        notes = [
            Activity(
                at=rev.created_at,
                who=rev.user.get_username() if rev.user else "",
                what="note",
                action=rev.get_action_display(),
                title=rev.note.title,
                url=f"/review/{rev.note_id}/",
                details=rev.summary,
                undone=rev.undone_at is not None,
            )
            for rev in self._revisions()[:stop]
        ]
        merged = sorted([*notes, *self._examples(stop)], key=lambda item: item.at, reverse=True)
        return merged[index]


def action_choices() -> list[tuple[str, str]]:
    notes = [(f"note:{value}", f"note: {label}") for value, label in NoteRevision.Action.choices]
    examples = [(f"example:{name}", f"training example: {name}") for name in EXAMPLE_ACTIONS]
    return [("", "any action"), *notes, *examples]


def people() -> list[str]:
    names = set(
        NoteRevision.objects.filter(user__isnull=False).order_by().values_list("user__username", flat=True).distinct()
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT x.value->>'by' FROM {TrainingExample._meta.db_table} e "  # noqa: S608
            "CROSS JOIN LATERAL jsonb_array_elements(e.edits) x WHERE jsonb_typeof(e.edits) = 'array'"
        )
        names |= {row[0] for row in cursor.fetchall() if row[0]}
    return sorted(names)
