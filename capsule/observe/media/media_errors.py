"""The media layer's one error: a blob this layer will not change; the caller sends the original.

Not responsible for anything else. Its own module so that image.py (which raises it for pixels) and
budget.py (which raises it over the decode budget, and which image.py asks) share it without an
import circle.
"""

from __future__ import annotations


class MediaError(ValueError):
    """Not an image or PDF this layer can size or read; the caller sends the original."""
