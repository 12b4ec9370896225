"""`{% recheck_count %}`: how many notes wait in the "Needs a re-check" queue (the nav badge)."""

from __future__ import annotations

from django import template

from brain.models import Note

register = template.Library()


@register.simple_tag
def recheck_count() -> int:
    return Note.objects.needs_recheck().count()
