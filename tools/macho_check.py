#!/usr/bin/env python3
"""Checks a darwin binary of the release archives (tools/dist-check.sh) without a Mac.

    python3 tools/macho_check.py BINARY amd64|arm64

A 64-bit Mach-O executable for the architecture, position independent, that loads only
libraries every macOS has (/usr/lib, /System/Library: Go without cgo calls libSystem,
libresolv, CoreFoundation and Security, nothing else). An arm64 binary must carry a valid code
signature: macOS on Apple silicon kills an unsigned one at exec. Go's linker signs it ad hoc;
the check recomputes every page hash of the signature's CodeDirectory, so a binary changed after
linking (stripped, patched) fails here rather than on a user's Mac.
"""
import hashlib
import struct
import sys

CPU = {"amd64": 0x01000007, "arm64": 0x0100000C}
MH_MAGIC_64 = 0xFEEDFACF
MH_EXECUTE = 2
MH_PIE = 0x200000
LC_CODE_SIGNATURE = 0x1D
DYLIB_CMDS = {0xC, 0x80000018, 0x8000001F}  # LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB
CSMAGIC_EMBEDDED_SIGNATURE = 0xFADE0CC0
CSMAGIC_CODEDIRECTORY = 0xFADE0C02
CS_HASHTYPE_SHA256 = 2
CS_ADHOC = 0x2


def fail(msg):
    sys.exit(f"macho_check: {sys.argv[1]}: {msg}")


def check_signature(data, off, size):
    blob = data[off : off + size]
    magic, _, count = struct.unpack_from(">III", blob, 0)
    if magic != CSMAGIC_EMBEDDED_SIGNATURE:
        fail(f"code signature magic {magic:#x}")
    for i in range(count):
        _, boff = struct.unpack_from(">II", blob, 12 + 8 * i)
        if struct.unpack_from(">I", blob, boff)[0] != CSMAGIC_CODEDIRECTORY:
            continue
        (_, _, _, flags, hash_off, _, _, n_code, code_limit, hash_size, hash_type, _, page_log) = (
            struct.unpack_from(">IIIIIIIIIBBBB", blob, boff)
        )
        if hash_type != CS_HASHTYPE_SHA256 or hash_size != 32:
            fail(f"code directory hash type {hash_type}, size {hash_size}")
        if not flags & CS_ADHOC:
            fail(f"code directory flags {flags:#x}: not an ad hoc signature")
        page = 1 << page_log
        if n_code != (code_limit + page - 1) // page or code_limit != off:
            fail(f"code directory: {n_code} pages up to {code_limit}, signature at {off}")
        for p in range(n_code):
            want = blob[boff + hash_off + 32 * p : boff + hash_off + 32 * (p + 1)]
            got = hashlib.sha256(data[p * page : min((p + 1) * page, code_limit)]).digest()
            if got != want:
                fail(f"page {p}: hash does not match the code signature")
        return
    fail("code signature without a code directory")


def main():
    path, arch = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    magic, cpu, _, filetype, ncmds, _, flags, _ = struct.unpack_from("<IiIIIIII", data, 0)
    if magic != MH_MAGIC_64:
        fail(f"magic {magic:#x}, not a 64-bit Mach-O")
    if cpu != CPU[arch]:
        fail(f"CPU type {cpu:#x}, want {CPU[arch]:#x} ({arch})")
    if filetype != MH_EXECUTE:
        fail(f"file type {filetype}, not an executable")
    if not flags & MH_PIE:
        fail("not position independent")
    at, dylibs, signature = 32, [], None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd in DYLIB_CMDS:
            name_off = struct.unpack_from("<I", data, at + 8)[0]
            dylibs.append(data[at + name_off : at + size].split(b"\0")[0].decode())
        elif cmd == LC_CODE_SIGNATURE:
            signature = struct.unpack_from("<II", data, at + 8)
        at += size
    if not dylibs:
        fail("loads no libSystem: not what Go links for darwin")
    for lib in dylibs:
        if not lib.startswith(("/usr/lib/", "/System/Library/")):
            fail(f"loads {lib}, which macOS does not ship")
    if arch == "arm64":
        if signature is None:
            fail("no code signature: macOS on Apple silicon refuses to run it")
        check_signature(data, *signature)
    signed = ", signed ad hoc" if signature else ""
    print(f"macho_check: darwin/{arch} ok: {', '.join(dylibs)}{signed}")


if __name__ == "__main__":
    main()
