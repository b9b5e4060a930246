"""A domain's logo: an uploaded image checked by its content and re-encoded before it is stored.

Only PNG, JPEG and WebP, recognised by their bytes (a name or a declared type
decides nothing), at most 256 KiB and 1024 pixels a side. The size is read
from the header before any pixel is decoded, so a small file that claims a
huge image (a decompression bomb) is refused unread. What is stored is
Pillow's own encoding of the pixels: no metadata, no trailing data, nothing
the upload carried but its picture.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from authsvc.core.validation import Invalid

if TYPE_CHECKING:
    from PIL import Image

MAX_BYTES = 256 * 1024
MAX_SIDE = 1024
# Pillow's format name, and the content type it is served with.
CONTENT_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


@dataclass(frozen=True)
class Logo:
    data: bytes
    content_type: str
    digest: str


def reencode(upload: bytes) -> Logo:
    """``upload`` as a stored logo; Invalid with the reason when it is not an acceptable image."""
    if not upload:
        raise Invalid("the logo is empty")
    if len(upload) > MAX_BYTES:
        raise Invalid(f"the logo is larger than 256 KiB ({MAX_BYTES} bytes)")
    # Pillow (about 2.5 MB) loads with the first logo uploaded, not with every worker.
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(upload), formats=list(CONTENT_TYPES)) as image:
                kind = image.format or ""
                if image.width > MAX_SIDE or image.height > MAX_SIDE:
                    raise Invalid(f"the logo is {image.width}x{image.height} pixels; at most {MAX_SIDE} a side")
                image.load()
                data = _encode(image, kind)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise Invalid(f"the logo claims far more pixels than it may have (at most {MAX_SIDE} a side)") from None
    except UnidentifiedImageError:
        raise Invalid("the logo must be a PNG, JPEG or WebP image (SVG and other formats are refused)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        if isinstance(exc, Invalid):
            raise
        raise Invalid("the logo is not a readable PNG, JPEG or WebP image (truncated or damaged)") from None
    return Logo(data=data, content_type=CONTENT_TYPES[kind], digest=hashlib.sha256(data).hexdigest())


def _encode(image: Image.Image, kind: str) -> bytes:
    out = io.BytesIO()
    if kind == "JPEG":
        image.convert("RGB").save(out, "JPEG", quality=90)
    else:
        keep = image if image.mode in ("RGB", "RGBA", "L", "LA") else image.convert("RGBA")
        keep.save(out, kind, **({"optimize": True} if kind == "PNG" else {"lossless": True}))
    return out.getvalue()
