"""Binary content: one short description line instead of raw bytes.

Responsible for naming what the bytes are (by magic number), their size and line count.
Not responsible for keeping them: the pipeline archives every original, so the description
points at `capsule ctx expand`. Text that is merely not UTF-8 (a latin-1 log) is not
binary: it goes to the log transform with its bytes intact.
Invariant: never returns raw control bytes; never drops a mostly-printable text.
"""

from __future__ import annotations

from capsule.observe.content import log_lines
from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "binary"
TEXT_SHARE = 0.95     # at least this share of printable bytes (latin-1 view) means text

MAGIC: list[tuple[bytes, str]] = [
    (b"\x7fELF", "ELF executable or object"),
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (or jar/docx/wheel)"),
    (b"\x1f\x8b", "gzip data"),
    (b"BZh", "bzip2 data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"(\xb5/\xfd", "zstd data"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xca\xfe\xba\xbe", "Mach-O universal binary or Java class"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"MZ", "Windows PE executable"),
    (b"\x00asm", "WebAssembly module"),
    (b"RIFF", "RIFF media (WAV/AVI/WebP)"),
    (b"OggS", "Ogg media"),
    (b"ID3", "MP3 audio"),
    (b"!<arch>\n", "ar archive (static library / .deb)"),
]


def kind_of(data: bytes) -> str | None:
    for magic, name in MAGIC:
        if data.startswith(magic):
            return name
    if len(data) > 262 and data[257:262] == b"ustar":
        return "tar archive"
    return None


def printable_share(data: bytes) -> float:
    if not data:
        return 1.0
    sample = data[:65536]
    ok = sum(1 for b in sample if b >= 0x20 or b in (9, 10, 13, 27))
    return ok / len(sample)


def is_binary(data: bytes) -> bool:
    return kind_of(data) is not None or b"\x00" in data[:8192] or printable_share(data) < TEXT_SHARE


def describe(text: str, ctx: Context) -> TransformResult:
    """Transform entry point."""
    data = text.encode("utf-8", "surrogateescape")
    if not is_binary(data):
        result = log_lines.cluster(text, ctx)
        result.notes.insert(0, "not binary: mostly printable text (non-UTF-8 bytes kept)")
        return result
    name = kind_of(data) or "binary data"
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    what = f"{ctx.path}: " if ctx.path else ""
    line = f"[{what}{name}, {len(data):,} bytes, not shown as text]"
    return TransformResult(line + "\n", TRANSFORM_ID,
                           removals=[Removal(f"binary content ({name})", lines, 1, lines, name)],
                           notes=[name])
