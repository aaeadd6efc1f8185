"""The dynamic loader, as 00_gpu_setup's loader exercise meets it (Linux, glibc).

- `system_search()`: the folders and the cache that this machine's `ld.so` searches last, read from
  the loader itself (`ld.so --help` lists them; `ldconfig -p` prints the cache).
- `build_library(...)`: a real, empty ELF shared object with the DT_NEEDED, DT_RUNPATH or DT_RPATH
  entries a test asks for, and any extra sections, made with the C compiler, to build library trees
  on the fly.
- `fatbin_section(...)`: the bytes of a small `.nv_fatbin` section (CUDA's fat binary containers),
  which `build_library(..., sections=...)` puts into a library: 00's fatbin exercise reads them.
- `loader_resolution(...)`: what the real loader makes of a library's dependencies (the loader run
  with LD_TRACE_LOADED_OBJECTS=1, which is what `ldd` does), which the tests compare an answer with.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# the x86-64 loader's own name; glibc installs it here on every x86-64 distribution (the ABI fixes it)
LOADER = "/lib64/ld-linux-x86-64.so.2"
_LIST_LINE = re.compile(r"^\s*(?P<name>\S+) => (?:(?P<path>/\S*) \(0x[0-9a-f]+\)|not found)\s*$")
_LOADED_LINE = re.compile(r"^\s*(?P<path>/\S+) \(0x[0-9a-f]+\)\s*$")  # ld.so itself, loaded by path
_CACHE_LINE = re.compile(r"^\s*(?P<name>\S+) \((?P<flags>[^)]*)\) => (?P<path>\S+)\s*$")


class LoaderUnavailable(RuntimeError):
    """This machine has no glibc x86-64 loader or no C compiler, which the loader checks need."""


@dataclass
class SystemSearch:
    """The end of ld.so's search: the cache (soname -> path) and the system folders, in order."""
    cache: dict[str, str] = field(default_factory=dict)
    system_dirs: list[str] = field(default_factory=list)


def _loader() -> str:
    if not os.path.exists(LOADER):
        raise LoaderUnavailable(f"{LOADER} not found: the loader checks need Linux on x86-64 with glibc")
    return LOADER


def system_search() -> SystemSearch:
    """The cache and system folders of this machine's loader (`ld.so --help`, `ldconfig -p`)."""
    help_text = subprocess.run([_loader(), "--help"], capture_output=True, text=True, check=True).stdout
    dirs = re.findall(r"^\s+(/\S+) \(system search path\)$", help_text, re.M)
    cache: dict[str, str] = {}
    ldconfig = shutil.which("ldconfig") or next((path for path in ("/usr/sbin/ldconfig", "/sbin/ldconfig")
                                                 if os.path.exists(path)), None)
    if ldconfig:
        listing = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
        for line in listing.splitlines():
            match = _CACHE_LINE.match(line)
            # the loader takes the first entry of the right ABI; 32-bit (libc6) entries do not count
            if match and "x86-64" in match["flags"]:
                cache.setdefault(match["name"], match["path"])
    return SystemSearch(cache=cache, system_dirs=dirs)


def _compiler() -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise LoaderUnavailable("no C compiler (cc) on PATH: the loader checks build small libraries with it")
    return compiler


def build_library(path: str | os.PathLike, needed: tuple[str, ...] = (), runpath: str | None = None,
                  rpath: str | None = None, soname: str | None = None,
                  sections: dict[str, bytes] | None = None) -> Path:
    """Compile an empty shared object at `path` with these DT_NEEDED names and search path.

    `runpath` gives DT_RUNPATH, `rpath` DT_RPATH (give at most one; "$ORIGIN" is kept literally). The
    needed libraries need not exist: the linker only records their names. `sections` maps a section
    name (such as ".nv_fatbin") to its exact contents, 8-byte aligned as nvcc aligns `.nv_fatbin`."""
    if runpath is not None and rpath is not None:
        raise ValueError("give runpath or rpath, not both (the loader ignores DT_RPATH beside DT_RUNPATH)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch, "empty.c")
        source.write_text("int course_loader_marker;\n")
        with_sections = Path(scratch, "sections.c")
        with_sections.write_text("int course_loader_marker;\n" + _section_arrays(sections or {}))
        stubs = Path(scratch, "stubs")
        stubs.mkdir()
        command = [_compiler(), "-shared", "-nostdlib", "-o", str(path), str(with_sections),
                   f"-Wl,-soname,{soname or path.name}", "-Wl,--no-as-needed", f"-L{stubs}"]
        for name in needed:  # a stub with that soname makes the linker record the name as DT_NEEDED
            subprocess.run([_compiler(), "-shared", "-nostdlib", "-o", str(stubs / name), str(source),
                            f"-Wl,-soname,{name}"], check=True, capture_output=True)
            command.append(f"-l:{name}")
        if runpath is not None:
            command += [f"-Wl,-rpath,{runpath}", "-Wl,--enable-new-dtags"]
        if rpath is not None:
            command += [f"-Wl,-rpath,{rpath}", "-Wl,--disable-new-dtags"]
        subprocess.run(command, check=True, capture_output=True)
    return path


def _section_arrays(sections: dict[str, bytes]) -> str:
    """C definitions that put each section's bytes, and nothing else, into a section of that name."""
    arrays = []
    for number, (name, data) in enumerate(sections.items()):
        if not re.fullmatch(r"\.?[A-Za-z_][\w.]*", name) or not data:
            raise ValueError(f"section {name!r}: give a plain section name and some bytes")
        if len(data) % 8:
            raise ValueError(f"section {name!r}: {len(data)} bytes, not a multiple of 8 (the alignment)")
        values = ",".join(str(byte) for byte in data)
        arrays.append(f'__attribute__((used, section("{name}"), aligned(8))) '
                      f"const unsigned char course_section_{number}[{len(data)}] = {{{values}}};\n")
    return "".join(arrays)


FATBIN_MAGIC = 0xBA55ED50  # the first 4 bytes of every fat binary container (little-endian)
FATBIN_PTX, FATBIN_ELF = 1, 2  # entry kinds: PTX text, an ELF file of SASS (other kinds exist)


def fatbin_section(containers: list[list[tuple]], header_size: int = 64) -> bytes:
    """The bytes of a `.nv_fatbin` section made of these fat binary containers, one after another.

    Each container is a list of entries `(kind, arch)` or `(kind, arch, payload)`: kind 1 is PTX, 2 an
    ELF of SASS, `arch` an integer such as 80 for compute capability 8.0. A container is a 16-byte
    header (magic, version 1, header size 16, size of the entries) and its entries; an entry is a
    header of `header_size` bytes (a multiple of 8, at least 64: nvcc writes 64, 80 or 112) and its
    payload padded to 8 bytes. The entry header holds the kind at +0, its own size at +4, the padded
    payload size at +8 (8 bytes), the payload size at +16 and the architecture at +28, as in the
    containers of TensorFlow's wheel. The payload is filler unless given: the entries carry no code."""
    if header_size < 64 or header_size % 8:
        raise ValueError(f"an entry header is a multiple of 8 bytes, at least 64; got {header_size}")
    section = b""
    for entries in containers:
        body = b""
        for entry in entries:
            kind, arch = entry[0], entry[1]
            payload = entry[2] if len(entry) > 2 else f"course fatbin {kind} {arch}".encode()
            padded = payload + b"\0" * (-len(payload) % 8)
            header = bytearray(header_size)
            struct.pack_into("<HHIQI", header, 0, kind, 0x0101, header_size, len(padded), len(payload))
            struct.pack_into("<HHI", header, 24, 7, 1, arch)
            body += bytes(header) + padded
        section += struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body
    return section


def loader_resolution(library: str | os.PathLike, ld_library_path: str = "") -> dict[str, str | None]:
    """What the real loader resolves each library name to, running it on `library` with
    LD_TRACE_LOADED_OBJECTS=1 (as `ldd` does) and this LD_LIBRARY_PATH; None for "not found". Transitive dependencies are
    listed too. ld.so itself, listed by the path it was loaded from, appears under that path's file name."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("LD_")}
    if ld_library_path:
        environment["LD_LIBRARY_PATH"] = ld_library_path
    environment["LD_TRACE_LOADED_OBJECTS"] = "1"  # what `ldd` sets: list, and go on past a missing library
    done = subprocess.run([_loader(), str(library)], capture_output=True, text=True, env=environment)
    resolved: dict[str, str | None] = {}
    for line in done.stdout.splitlines():
        match = _LIST_LINE.match(line)
        if match:
            resolved[match["name"]] = match["path"]
        elif (loaded := _LOADED_LINE.match(line)):
            resolved.setdefault(os.path.basename(loaded["path"]), loaded["path"])
    if done.returncode not in (0, 1) or (done.returncode == 1 and not resolved):
        raise RuntimeError(f"ld.so listing {library} failed ({done.returncode}): {done.stderr.strip()[:300]}")
    return resolved
