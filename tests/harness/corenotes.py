"""The threads' CPU times a Linux x86-64 ELF core records (NT_PRSTATUS notes), read here
independently of the core library: what a kernel core says is the truth its readers must
report. The kernel writes each thread's utime and stime as it sampled them at its ticks
(task_cputime), not the runtime-scaled values /proc shows, so the two may differ by several
ticks."""
import struct

NT_PRSTATUS = 1
PT_NOTE = 4


def _notes(f):
    hdr = f.read(64)
    if hdr[:4] != b"\x7fELF" or hdr[4] != 2 or hdr[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", hdr, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", hdr, 0x36)
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        p_type, _, p_offset, _, _, p_filesz = struct.unpack("<IIQQQQ", f.read(40))
        if p_type != PT_NOTE:
            continue
        f.seek(p_offset)
        data = f.read(p_filesz)
        at = 0
        while at + 12 <= len(data):
            namesz, descsz, ntype = struct.unpack_from("<III", data, at)
            at += 12 + ((namesz + 3) & ~3)
            yield ntype, data[at:at + descsz]
            at += (descsz + 3) & ~3


def thread_cpu_seconds(path):
    """{tid: utime + stime in seconds} from the core's NT_PRSTATUS notes. The thread group's
    leader records the whole process's times (the kernel's fill_prstatus), the others their own."""
    out = {}
    with open(path, "rb") as f:
        for ntype, desc in _notes(f):
            if ntype != NT_PRSTATUS or len(desc) < 80:
                continue
            pid, = struct.unpack_from("<i", desc, 32)
            us, uu, ss, su = struct.unpack_from("<qqqq", desc, 48)
            out[pid] = us + uu / 1e6 + ss + su / 1e6
    return out
