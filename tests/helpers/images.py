"""Images for the branding tests: real ones made by Pillow, and hostile ones made byte by byte."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image


def image(kind: str = "PNG", size: tuple[int, int] = (64, 32), color: tuple[int, int, int] = (200, 30, 60)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, kind)
    return out.getvalue()


def png_claiming(width: int, height: int) -> bytes:
    """A small, valid PNG stream whose header claims ``width`` x ``height`` pixels: a decompression bomb's shape."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 4096))
        + chunk(b"IEND", b"")
    )


SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>'
# The PNG signature, then no image: a file that only pretends.
PNG_HEADER_ON_TEXT = b"\x89PNG\r\n\x1a\n" + b"this is not an image at all" * 20
