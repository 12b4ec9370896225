"""The BRAIN_DIR system check."""

from __future__ import annotations

from brain.system_checks import check_brain_dir


def test_no_brain_dir_is_fine(settings):
    settings.BRAIN_DIR = ""
    assert check_brain_dir(None) == []


def test_a_brain_dir_that_is_a_file_is_an_error(settings, tmp_path):
    (tmp_path / "file").write_text("x")
    settings.BRAIN_DIR = str(tmp_path / "file")
    assert [error.id for error in check_brain_dir(None)] == ["hyperguild.E050"]


def test_a_brain_dir_whose_parent_is_missing_is_an_error(settings, tmp_path):
    settings.BRAIN_DIR = str(tmp_path / "missing" / "brain")
    assert [error.id for error in check_brain_dir(None)] == ["hyperguild.E051"]


def test_a_creatable_brain_dir_is_fine(settings, tmp_path):
    settings.BRAIN_DIR = str(tmp_path / "brain")
    assert check_brain_dir(None) == []
