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


def test_a_built_library_carries_the_fatbin_section_it_was_given(tmp_path):
    pytest.importorskip("elftools")
    import struct

    from elftools.elf.elffile import ELFFile

    data = loader.fatbin_section([[(loader.FATBIN_ELF, 75), (loader.FATBIN_PTX, 75, b"x" * 13)],
                                  [(loader.FATBIN_ELF, 120)]], header_size=80)
    library = loader.build_library(tmp_path / "libfat.so", sections={".nv_fatbin": data, ".decoy": b"\0" * 8})
    with open(library, "rb") as handle:
        elf = ELFFile(handle)
        assert elf.get_section_by_name(".nv_fatbin").data() == data
        assert elf.get_section_by_name(".decoy").data() == b"\0" * 8
    # the layout fatbin_section documents: container header, then entries of header + padded payload
    magic, version, header, size = struct.unpack_from("<IHHQ", data, 0)
    assert (magic, version, header) == (0xBA55ED50, 1, 16)
    kind, _, entry_header, padded = struct.unpack_from("<HHIQ", data, 16)
    assert (kind, entry_header, struct.unpack_from("<I", data, 16 + 28)[0]) == (2, 80, 75)
    second = 16 + entry_header + padded
    assert struct.unpack_from("<HHIQI", data, second)[::2] == (1, 80, 13) and padded % 8 == 0
    assert struct.unpack_from("<I", data, 16 + size)[0] == 0xBA55ED50, "the next container follows at once"
    with pytest.raises(ValueError, match="multiple of 8"):
        loader.build_library(tmp_path / "bad.so", sections={".nv_fatbin": b"1234"})
    with pytest.raises(ValueError, match="at least 64"):
        loader.fatbin_section([[(1, 90)]], header_size=40)
