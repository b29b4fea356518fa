"""Per-container oracle of corpus/wheels (written from shared/research/fatbin.md section 4, independent of
envcheck): for each ELF file under FOLDER with .nv_fatbin/__nv_relfatbin, walk the fatbin containers; a container
runs on sm_121 if one of its entries does (fatbin.md section 10.1). Usage: containers.py FOLDER."""

import os
import struct
import sys

from elftools.elf.elffile import ELFFile


def arch(kind, sm, flags):
    suf = "a" if flags & 0x100000 else "f" if flags & 0x200000 else ""
    return ("sm_" if kind == 2 else "compute_") + f"{sm}{suf}"


def runs(kind, sm, flags):
    a, f = bool(flags & 0x100000), bool(flags & 0x200000)
    if kind == 2:
        return (sm in (120, 121) and not a) or (sm == 121 and a)
    if kind == 1:
        if a:
            return sm == 121
        if f:
            return sm in (120, 121)
        return sm <= 121
    return False


def walk(path):
    out = []
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        for sec in elf.iter_sections():
            if sec.name not in (".nv_fatbin", "__nv_relfatbin"):
                continue
            data = sec.data()
            off = 0
            while off + 16 <= len(data):
                magic, ver, hs, fat = struct.unpack_from("<IHHQ", data, off)
                if magic != 0xBA55ED50:
                    off += 8
                    continue
                entries = []
                e = off + hs
                end = off + hs + fat
                while e + 64 <= end:
                    kind, _v, ehs, padded = struct.unpack_from("<HHIQ", data, e)
                    sm = struct.unpack_from("<I", data, e + 0x1C)[0]
                    flags = struct.unpack_from("<Q", data, e + 0x28)[0]
                    entries.append((kind, sm, flags))
                    e += ehs + padded
                out.append((sec.name, entries))
                off = end
    return out


if __name__ == "__main__":
    root = sys.argv[1]
    for dp, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(dp, f)
            if os.path.islink(p):
                continue
            with open(p, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            try:
                cs = walk(p)
            except Exception as ex:
                print("ERR", p, ex)
                continue
            if not cs:
                continue
            real = [(s, en) for s, en in cs if en]  # empty dlink containers register nothing
            bad = [(s, en) for s, en in real if not any(runs(*x) for x in en if x[0] in (1, 2))]
            sass_ok = [(s, en) for s, en in real if any(runs(*x) for x in en if x[0] == 2)]
            jit_only = [(s, en) for s, en in real if (s, en) not in bad and (s, en) not in sass_ok]
            # relfatbin PTX counts for an rdc module; report plainly
            print(
                os.path.relpath(p, root),
                f"containers={len(real)} native={len(sass_ok)} jit_only={len(jit_only)} none={len(bad)}",
                "bad_archs=" + str(sorted({arch(*x) for _, en in bad for x in en if x[0] in (1, 2)}))[:200],
                "jit_archs="
                + str(sorted({arch(*x) for _, en in jit_only for x in en if x[0] in (1, 2)}))[:200],
            )
