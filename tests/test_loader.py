"""course.loader: the library trees 00's loader exercise builds, and the real loader's answer on them."""

from __future__ import annotations

import os

import pytest

from course import loader


def test_built_library_has_the_asked_entries_and_the_real_loader_resolves_it(tmp_path):
    pytest.importorskip("elftools")
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    loader.build_library(tmp_path / "deps" / "libdep.so.1")
    loader.build_library(tmp_path / "shadow" / "libdep.so.1")
    app = loader.build_library(tmp_path / "app" / "libapp.so", needed=("libdep.so.1", "libmissing.so.3"),
                               runpath="$ORIGIN/../deps")
    with open(app, "rb") as handle:
        tags = [tag for section in ELFFile(handle).iter_sections() if isinstance(section, DynamicSection)
                for tag in section.iter_tags()]
    assert [tag.needed for tag in tags if tag.entry.d_tag == "DT_NEEDED"] == ["libdep.so.1", "libmissing.so.3"]
    assert [tag.runpath for tag in tags if tag.entry.d_tag == "DT_RUNPATH"] == ["$ORIGIN/../deps"]

    plain = loader.loader_resolution(app)
    assert os.path.realpath(plain["libdep.so.1"]) == str(tmp_path / "deps" / "libdep.so.1")
    assert plain["libmissing.so.3"] is None, "a missing library is listed as not found, not an error"
    shadowed = loader.loader_resolution(app, str(tmp_path / "shadow"))
    assert os.path.realpath(shadowed["libdep.so.1"]) == str(tmp_path / "shadow" / "libdep.so.1")


def test_rpath_and_runpath_are_exclusive_and_system_search_reads_the_loader(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        loader.build_library(tmp_path / "x.so", runpath="a", rpath="b")
    search = loader.system_search()
    assert search.system_dirs and all(os.path.isabs(folder) for folder in search.system_dirs)
    assert os.path.exists(search.cache["libc.so.6"]), "the cache names the C library"


def test_doctor_warns_without_a_compiler(monkeypatch):
    import shutil

    from course import doctor

    assert doctor._loader_tools({}).status == doctor.OK
    monkeypatch.setattr(shutil, "which", lambda name: None)
    missing = doctor._loader_tools({})
    assert missing.status == doctor.WARN and "C compiler" in missing.detail and "apt install gcc" in missing.hint
