"""Generators of hostile media (issue 31), made cheaply without decoding them: PNGs of any declared
size (a few hundred KB that decode to hundreds of MB), and PDFs whose cost is in decoding (textless
pages sharing one huge 1-bit image), in their page count or in their structure (a cyclic page tree)."""

from __future__ import annotations

import struct
import zlib


def png(width: int, height: int, color_type: int = 2, seed: int = 0) -> bytes:
    """A valid PNG (8-bit; colour type 2 = RGB, 0 = gray, 6 = RGBA) of one flat colour plus a seeded
    stripe, so two seeds are two distinct images; compressed row by row (never held decoded)."""
    bands = {0: 1, 2: 3, 6: 4}[color_type]
    comp = zlib.compressobj(9)
    body = []
    row = b"\x00" + bytes([seed % 251, 40, 200, 255][:bands]) * width
    stripe = b"\x00" + bytes([255 - seed % 251, 0, 0, 255][:bands]) * width
    for y in range(height):
        body.append(comp.compress(stripe if y == seed % height else row))
    body.append(comp.flush())

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"".join(body)) + chunk(b"IEND", b"")


def _pdf(objects: list[bytes], root: int = 1) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, root, xref)
    return bytes(out)


def _stream(dict_body: bytes, data: bytes) -> bytes:
    return b"<< " + dict_body + b" /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def scan_bomb(pages: int = 40, side: int = 20000) -> bytes:
    """`pages` textless pages, each drawing the same side x side 1-bit image: ~55 KB on disk, and
    poppler decodes the image again for every page it renders."""
    bits = zlib.compress(b"\x00" * ((side + 7) // 8 * side), 9)
    image = _stream(b"/Type /XObject /Subtype /Image /Width %d /Height %d /BitsPerComponent 1 "
                    b"/ColorSpace /DeviceGray /Filter /FlateDecode" % (side, side), bits)
    content = _stream(b"", b"q 612 0 0 792 0 0 cm /Im0 Do Q")
    first_page = 5
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(pages))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
            image, content]
    for _ in range(pages):
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                    b"/Resources << /XObject << /Im0 3 0 R >> >> >>")
    return _pdf(objs)


def many_pages(pages: int = 10_000) -> bytes:
    """A PDF of `pages` empty pages (one shared content stream)."""
    kids = b" ".join(b"%d 0 R" % (4 + i) for i in range(pages))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
            _stream(b"", b"")]
    objs += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>"] * pages
    return _pdf(objs)


def cyclic_tree() -> bytes:
    """A page tree whose node lists itself among its kids."""
    return _pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
                 b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"])


def encrypted() -> bytes:
    """A real encrypted PDF (pypdf, an owner and a user password)."""
    import io

    import pypdf

    w = pypdf.PdfWriter()
    w.add_blank_page(612, 792)
    w.encrypt("user-secret", "owner-secret")
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def header_bombs() -> dict[str, bytes]:
    """Images whose header alone says they are too big to decode (issue 31's "held up" list): a
    60000x60000 PNG, an APNG declaring 2^31-1 frames, a 65535x65535 GIF; a few hundred bytes each."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    def png_of(w: int, h: int, extra: bytes = b"") -> bytes:
        ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
                + chunk(b"IEND", b""))

    gif = (b"GIF89a" + struct.pack("<HHBBB", 65535, 65535, 0, 0, 0) + b"," + struct.pack("<HHHHB", 0, 0, 65535, 65535, 0)
           + b"\x02\x02\x4c\x01\x00;")
    return {"60000x60000 PNG": png_of(60000, 60000), "APNG of 2^31-1 frames": png_of(64, 64, chunk(b"acTL", struct.pack(">II", 2**31 - 1, 0))),
            "65535x65535 GIF": gif}
