"""`hyperguild.admin_mixins.ModelAdmin[Note]`: the type checker sees the model an admin shows, and at run time
the admin's bases are Django's own classes, with nothing patched into Django (STYLE.md rule 14)."""

from __future__ import annotations

from django.contrib import admin

from brain import admin as brain_admin
from brain.models import Anchor, Note
from hyperguild.admin_mixins import ModelAdmin, ReadOnlyAdminMixin, TabularInline


def test_a_subscripted_admin_base_is_djangos_own_class_at_run_time():
    class NotesShown(ReadOnlyAdminMixin, ModelAdmin[Note]):
        list_display = ("slug",)

    class AnchorsShown(TabularInline[Anchor, Note]):
        model = Anchor

    assert NotesShown.__bases__ == (ReadOnlyAdminMixin, admin.ModelAdmin)
    assert AnchorsShown.__bases__ == (admin.TabularInline,)
    assert not hasattr(admin.ModelAdmin, "__class_getitem__")  # Django itself is left as it is
    assert not hasattr(admin.TabularInline, "__class_getitem__")


def test_the_brain_admins_are_registered_on_djangos_classes():
    registered = admin.site.get_model_admin(Note)
    assert isinstance(registered, brain_admin.NoteAdmin)
    assert brain_admin.NoteAdmin.__bases__ == (admin.ModelAdmin,)
    assert brain_admin.LinkOutInline.__bases__ == (admin.TabularInline,)
